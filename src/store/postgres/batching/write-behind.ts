// Write-behind for a group-commit batch (group-commit.ts). Each statement costs a round trip, and on this machine a
// round trip's client CPU (mostly the socket write) was the largest cost of a published event. A published event
// writes three things: the event, its queue rows and its device's reported state. In a batch those writes are held
// here and written by one statement for the whole batch, before its COMMIT; the devices a batch reads are read once,
// and read again from here with the batch's own updates applied. A batch of delivery outcomes holds its deletions,
// metrics, counters and delivery log the same way (held-outcomes.ts).
//
// The batch still reads its own writes: any other statement first writes what is held (flush), except the reads
// of tables the held writes never touch that an event's consumers make (UNTOUCHED); after any other device
// statement the devices read are read again from the database. An item that holds writes counts as having
// written (Watch.writes), so if it throws the batch is undone and run again item by item.
//
// A batch whose devices were all read before (device-versions.ts) may run `unlocked`: outside a transaction, its
// devices taken from there instead of read and locked, and the flush its only statement, which first locks each device
// it read (written or not), in id order, and fails as a whole unless every one still has the version it was read at
// (../functions/sensorcloud_devices_fresh.sql). Any statement besides the flush (a device it did not name, any other
// write) throws NeedsLock: the batch runs again the locking way. A batch of outcomes may run unlocked too (it names no
// devices): its flush is the outcomes' one statement.
import type { NewDelivery } from '../../contract/connector-repos.ts';
import type { LogOutcome } from '../../contract/delivery-log.ts';
import type { DeviceRecord, EventRecord, LatestEvent } from '../../contract/records.ts';
import type { Repos } from '../../contract/store.ts';
import type { Sql, Watch } from '../db.ts';
import { capped, markQueued, queueColumns, queueRowsSql } from '../repos/deliveries.ts';
import type { DeviceVersion, DeviceVersions } from './device-versions.ts';
import { lockDevices } from '../repos/devices.ts';
import { NeedsLock } from './group-commit.ts';
import { lazyRecord } from '../repos/lazy-record.ts';
import { HeldOutcomes } from './held-outcomes.ts';
import { PackedValues, packedText } from './packed-values.ts';

// One statement, whatever the batch holds (empty arrays write nothing), so it is prepared once per connection (in two
// forms: with the locks that queued leased rows under a cap need, deliveries.ts, and without). A device updated twice
// in a batch is written once, with its last state: one statement cannot update a row twice. An unlocked batch's devices
// ($16-$18: each device it read, written or not, with the version it was read at) are locked and checked first, before
// any other lock is taken (`ok`, sensorcloud_devices_fresh in ../functions/sensorcloud_devices_fresh.sql: every
// lock-taking part depends on it); a locking batch passes none, its devices being locked already. The event bodies and
// the devices' states are in the packed parameter $1 (packed-values.ts), as are the queue rows' bodies.
const flushSql = (withLocks: boolean) => `
  WITH ok AS (
    SELECT sensorcloud_devices_fresh($16::text[], $17::text[], $18::bigint[]) AS fresh
  ), ev AS (
    INSERT INTO events (id, project_id, device_id, event_type, timestamp, create_time, body)
    SELECT u.id, u.project_id, u.device_id, u.event_type, u.timestamp, u.create_time, ${packedText(1, 'u.body_start', 'u.body_length')}
    FROM ok, unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::int[], $9::int[])
      AS u(id, project_id, device_id, event_type, timestamp, create_time, body_start, body_length)
  ), dv AS (
    UPDATE devices d SET reported = ${packedText(1, 'u.reported_start', 'u.reported_length')},
      latest_events = ${packedText(1, 'u.latest_start', 'u.latest_length')}, update_time = u.update_time
    FROM ok, unnest($10::text[], $11::int[], $12::int[], $13::int[], $14::int[], $15::bigint[])
      AS u(id, reported_start, reported_length, latest_start, latest_length, update_time)
    WHERE d.id = u.id
    RETURNING d.id, d.xmin::text AS xmin
  ), ${queueRowsSql(19, 1, withLocks, 'ok')}
  SELECT id, leased, NULL::text AS device, NULL::text AS xmin FROM dl
  UNION ALL SELECT NULL, NULL, id, xmin FROM dv
  UNION ALL SELECT NULL, NULL, NULL, NULL FROM ok WHERE NOT fresh`;
const FLUSH = flushSql(false);
const FLUSH_CAPPED = flushSql(true);

/** Reads that cannot see events, queue rows or devices: they need nothing written first. */
const UNTOUCHED = new Set([
  'projects.get',
  'dataConnectors.get',
  'dataConnectors.getMany',
  'dataConnectors.listActiveByProject',
  'rules.listEnabledByProject',
]);

/** The error an unlocked batch's flush fails with when a device is not as it was read (migration 006). */
export const isStale = (error: unknown): boolean => (error as { code?: string } | null)?.code === 'SC001';

interface DeviceState {
  reported: Record<string, unknown>;
  latestEvents: Record<string, LatestEvent>;
  updateTime: number;
}

export interface WriteBehind {
  repos: Repos;
  /** Reads the batch's devices first (TransactionOptions.devices): locked, or (unlocked) from `versions`. */
  readAhead(ids: readonly string[]): Promise<void>;
  /** Writes what the batch holds (before COMMIT; an unlocked batch's only statement). */
  flush(): Promise<void>;
  /** The batch committed: the versions of the devices it read and wrote are kept for later batches (and answered). */
  committed(): ReadonlyMap<string, DeviceVersion>;
  /** The batch's devices, for dropping their versions when an unlocked flush found one changed. */
  devices(): Iterable<string>;
}

/**
 * Wraps a batch's repos; readAhead reads the batch's devices first, flush() writes what they hold (group-commit.ts
 * calls it before COMMIT). `unlocked`: the batch runs outside a transaction, as above.
 */
export function writeBehind(
  inner: Repos,
  sql: Sql,
  watch: Watch,
  versions: DeviceVersions,
  unlocked: boolean,
): WriteBehind {
  let events: EventRecord[] = [];
  let deliveries: NewDelivery[] = [];
  let devices = new Map<string, DeviceState>();
  const read = new Map<string, DeviceRecord>();
  /** Unlocked: the version each device was read at, checked by the flush. */
  const seen = new Map<string, { xmin: string; updateTime: number }>();
  /** The versions to keep once the batch commits; null once a device statement of its own makes them unknown. */
  let known: Map<string, DeviceVersion> | null = new Map();

  const outcomes = new HeldOutcomes();

  async function flush(): Promise<void> {
    const publishes = events.length > 0 || deliveries.length > 0 || devices.size > 0;
    // Unlocked, the flush is the commit: both kinds at once would be two statements, not one commit.
    if (unlocked && publishes && !outcomes.empty) throw new NeedsLock();
    if (!outcomes.empty) {
      watch.shared = true;
      await outcomes.write(sql);
      watch.shared = false;
    }
    // Nothing written: nothing to check either (an unlocked batch whose items all failed before writing).
    if (!publishes) return;
    const [e, d, v, checked] = [events, deliveries, [...devices], [...seen]];
    events = [];
    deliveries = [];
    devices = new Map();
    seen.clear();
    watch.shared = true;
    const locks = capped(d);
    const packed = new PackedValues();
    const bodies = e.map((x) => packed.add(x.body));
    const states = v.map(
      ([, s]) => [packed.add(JSON.stringify(s.reported)), packed.add(JSON.stringify(s.latestEvents))] as const,
    );
    const queue = queueColumns(d, locks, packed);
    const rows = await sql.query<{
      id: number | null;
      leased: boolean | null;
      device: string | null;
      xmin: string | null;
    }>(locks ? FLUSH_CAPPED : FLUSH, [
      packed.bytes(),
      e.map((x) => x.id),
      e.map((x) => x.projectId),
      e.map((x) => x.deviceId),
      e.map((x) => x.eventType),
      e.map((x) => x.timestamp),
      e.map((x) => x.createTime),
      bodies.map(([start]) => start),
      bodies.map(([, length]) => length),
      v.map(([id]) => id),
      states.map(([r]) => r[0]),
      states.map(([r]) => r[1]),
      states.map(([, l]) => l[0]),
      states.map(([, l]) => l[1]),
      v.map(([, s]) => s.updateTime),
      checked.map(([id]) => id),
      checked.map(([, c]) => c.xmin),
      checked.map(([, c]) => c.updateTime),
      ...queue,
    ]);
    watch.shared = false;
    const queued: Array<{ id: number; leased: boolean }> = [];
    for (const r of rows) {
      if (r.device === null) queued.push({ id: r.id!, leased: r.leased! });
      else if (known !== null && read.has(r.device))
        known.set(r.device, { device: read.get(r.device)!, xmin: r.xmin! });
    }
    markQueued(d, queued);
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
        // Rows of a :sync, :resend or :replay carry a trigger, which the flush's queue rows (the live path's) leave to
        // its default: they are queued by a statement of their own, after what is held.
        if (rows.some((r) => r.trigger !== undefined && r.trigger !== 'EVENT'))
          return afterFlush('deliveries', inner.deliveries.add as (...args: unknown[]) => Promise<unknown>)(rows);
        watch.writes++;
        deliveries.push(...rows);
      },
      async deleteCounted(ids: readonly number[], series: string) {
        if (ids.length === 0) return;
        if (!outcomes.deleteCounted(ids, series)) {
          if (unlocked) throw new NeedsLock();
          await flush();
          outcomes.deleteCounted(ids, series);
        }
        watch.writes++;
      },
    },
    deliveryLog: {
      async record(logged: readonly LogOutcome[]) {
        if (logged.length === 0) return;
        watch.writes++;
        outcomes.record(logged);
      },
    },
    connectorMetrics: {
      async add(
        connectorId: string,
        bucketStart: number,
        success: number,
        error: number,
        hist: ReadonlyMap<string, number>,
      ) {
        watch.writes++;
        outcomes.add(connectorId, bucketStart, success, error, hist);
      },
      async addCounters(deltas: Record<string, number>) {
        if (Object.keys(deltas).length === 0) return;
        watch.writes++;
        outcomes.addCounters(deltas);
      },
    },
    devices: {
      async get(id: string) {
        const got = read.get(id);
        if (got) return got;
        if (unlocked) throw new NeedsLock();
        if (devices.has(id)) await flush();
        const device = await inner.devices.get(id);
        if (device) read.set(id, device);
        return device;
      },
      async updateReported(
        id: string,
        reported: Record<string, unknown>,
        latestEvents: Record<string, LatestEvent>,
        updateTime: number,
      ) {
        // Unlocked, a device is written only after its version was checked, which needs it read first.
        if (unlocked && !seen.has(id)) throw new NeedsLock();
        watch.writes++;
        devices.set(id, { reported, latestEvents, updateTime });
        const got = read.get(id);
        if (got) read.set(id, { ...got, reported, latestEvents, updateTime });
      },
    },
  } as Record<string, Record<string, (...args: never[]) => Promise<unknown>>>;

  /** A method of the batch's repos that is not held: it first writes what is held (unlocked: it needs a lock). */
  const afterFlush =
    (name: string, fn: (...args: unknown[]) => Promise<unknown>) =>
    async (...args: unknown[]) => {
      if (unlocked) throw new NeedsLock();
      await flush();
      if (name === 'devices') {
        read.clear();
        known = null;
      }
      return fn(...args);
    };
  // Each repo, and each of its methods, is wrapped when the batch first uses it (lazy-record.ts).
  const wrap = (name: string, repo: Record<string, (...args: unknown[]) => Promise<unknown>>) =>
    lazyRecord(
      Object.keys(repo),
      (method) =>
        held[name]?.[method] ?? (UNTOUCHED.has(`${name}.${method}`) ? repo[method] : afterFlush(name, repo[method]!)),
    );
  const repos = lazyRecord<Repos>(Object.keys(inner), (name) =>
    wrap(name, inner[name as keyof Repos] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>),
  );

  async function readAhead(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    if (unlocked) {
      for (const id of ids) {
        const v = versions.get(id);
        if (!v) throw new NeedsLock();
        read.set(id, v.device);
        seen.set(id, { xmin: v.xmin, updateTime: v.device.updateTime });
      }
      return;
    }
    for (const v of await lockDevices(sql, [...new Set(ids)])) {
      read.set(v.device.id, v.device);
      known?.set(v.device.id, v);
    }
  }

  return {
    repos,
    readAhead,
    flush,
    committed() {
      if (!known) return new Map();
      for (const [id, v] of known) versions.set(id, v);
      return known;
    },
    devices: () => read.keys(),
  };
}
