// Write-behind for a group-commit batch (group-commit.ts). Each statement costs a round trip, and on this machine a
// round trip's client CPU (mostly the socket write) was the largest cost of a published event. A published event
// writes three things: the event, its queue rows and its device's reported state. In a batch those writes are held
// here and written by one statement for the whole batch, before its COMMIT; the devices a batch reads are read once,
// and read again from here with the batch's own updates applied.
//
// The batch still reads its own writes: any other statement first writes what is held (flush), except the reads
// of tables the held writes never touch that an event's consumers make (UNTOUCHED); after any other device
// statement the devices read are read again from the database. An item that holds writes counts as having
// written (Watch.writes), so if it throws the batch is undone and run again item by item.
import type { NewDelivery } from '../connector-repos.ts';
import type { DeviceRecord, EventRecord, LatestEvent } from '../records.ts';
import type { Repos } from '../store.ts';
import type { Sql, Watch } from './db.ts';
import { capped, markQueued, queueColumns, queueRowsSql } from './deliveries.ts';
import { lockDevices } from './devices.ts';

// One statement, whatever the batch holds (empty arrays write nothing), so it is prepared once per connection (in
// two forms: with the locks that queued leased rows under a cap need, deliveries.ts, and without). A device updated
// twice in a batch is written once, with its last state: one statement cannot update a row twice.
const flushSql = (withLocks: boolean) => `
  WITH ev AS (
    INSERT INTO events (id, project_id, device_id, event_type, timestamp, create_time, body)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[])
  ), dv AS (
    UPDATE devices d SET reported = u.reported, latest_events = u.latest_events, update_time = u.update_time
    FROM unnest($8::text[], $9::text[], $10::text[], $11::bigint[]) AS u(id, reported, latest_events, update_time)
    WHERE d.id = u.id
  ), ${queueRowsSql(12, withLocks)}
  SELECT id, leased FROM dl`;
const FLUSH = flushSql(false);
const FLUSH_CAPPED = flushSql(true);

/** Reads that cannot see events, queue rows or devices: they need nothing written first. */
const UNTOUCHED = new Set(['projects.get', 'dataConnectors.get', 'dataConnectors.listActiveByProject']);

interface DeviceState {
  reported: Record<string, unknown>;
  latestEvents: Record<string, LatestEvent>;
  updateTime: number;
}

/**
 * Wraps a batch's repos; readAhead reads the batch's devices first (TransactionOptions.devices), flush() writes what
 * they hold (group-commit.ts calls it before COMMIT).
 */
export function writeBehind(inner: Repos, sql: Sql, watch: Watch): { repos: Repos; readAhead(ids: readonly string[]): Promise<void>; flush(): Promise<void> } {
  let events: EventRecord[] = [];
  let deliveries: NewDelivery[] = [];
  let devices = new Map<string, DeviceState>();
  const read = new Map<string, DeviceRecord>();

  async function flush(): Promise<void> {
    if (events.length === 0 && deliveries.length === 0 && devices.size === 0) return;
    const [e, d, v] = [events, deliveries, [...devices]];
    events = [];
    deliveries = [];
    devices = new Map();
    watch.shared = true;
    const locks = capped(d);
    markQueued(d, await sql.query<{ id: number; leased: boolean }>(locks ? FLUSH_CAPPED : FLUSH, [
      e.map((x) => x.id), e.map((x) => x.projectId), e.map((x) => x.deviceId), e.map((x) => x.eventType),
      e.map((x) => x.timestamp), e.map((x) => x.createTime), e.map((x) => x.body),
      v.map(([id]) => id), v.map(([, s]) => JSON.stringify(s.reported)), v.map(([, s]) => JSON.stringify(s.latestEvents)),
      v.map(([, s]) => s.updateTime),
      ...queueColumns(d, locks),
    ]));
    watch.shared = false;
  }

  const held = {
    events: {
      async insert(event: EventRecord) {
        watch.writes++;
        events.push(event);
      },
    },
    deliveries: {
      async add(rows: NewDelivery[]) {
        if (rows.length === 0) return;
        watch.writes++;
        deliveries.push(...rows);
      },
    },
    devices: {
      async get(id: string) {
        const known = read.get(id);
        if (known) return known;
        if (devices.has(id)) await flush();
        const device = await inner.devices.get(id);
        if (device) read.set(id, device);
        return device;
      },
      async updateReported(id: string, reported: Record<string, unknown>, latestEvents: Record<string, LatestEvent>, updateTime: number) {
        watch.writes++;
        devices.set(id, { reported, latestEvents, updateTime });
        const known = read.get(id);
        if (known) read.set(id, { ...known, reported, latestEvents, updateTime });
      },
    },
  } as Record<string, Record<string, (...args: never[]) => Promise<unknown>>>;

  const repos: Record<string, Record<string, unknown>> = {};
  for (const [name, repo] of Object.entries(inner)) {
    const wrapped: Record<string, unknown> = {};
    for (const [method, fn] of Object.entries(repo as Record<string, (...args: unknown[]) => Promise<unknown>>)) {
      if (UNTOUCHED.has(`${name}.${method}`)) {
        wrapped[method] = fn;
        continue;
      }
      wrapped[method] = held[name]?.[method] ?? (async (...args: unknown[]) => {
        await flush();
        if (name === 'devices') read.clear();
        return fn(...args);
      });
    }
    repos[name] = wrapped;
  }
  async function readAhead(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    for (const device of await lockDevices(sql, [...new Set(ids)])) read.set(device.id, device);
  }
  return { repos: repos as unknown as Repos, readAhead, flush };
}
