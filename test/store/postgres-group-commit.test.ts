// PostgreSQL only: the group commit of rerunnable transactions (store/postgres/batching/group-commit.ts) and the writes its
// batches hold to the end (write-behind.ts). What a batch does when a device it reads is held by another
// transaction, when the write of what it held fails, and that a batch reads what it holds.
import assert from 'node:assert/strict';
import pg from 'pg';
import { after, before, describe, it } from 'node:test';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import type { NewDelivery } from '../../src/store/contract/connector-repos.ts';
import type { LogOutcome } from '../../src/store/contract/delivery-log.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import type { Repos } from '../../src/store/contract/store.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { device, event, row, seedConnector, T0 } from './contract/fixtures.ts';
import { sleep } from '../helpers/until.ts';

describe('postgres: group commit', () => {
  let drop: () => Promise<void>;
  let store: PostgresStore;
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    store = await createPostgresStore(db.url, { poolSize: 4 });
  });
  after(async () => {
    await store?.close();
    await drop?.();
  });

  const seed = async (n: number) => {
    const c = await seedConnector(store);
    const devices = Array.from({ length: n }, () => device(c.projectId));
    for (const d of devices) await store.devices.create(d);
    return { c, devices };
  };
  /** One event's writes, as the pipeline makes them, in a rerunnable transaction naming its device. */
  const publish = (connectorId: string, d: DeviceRecord, at: number, body = `{"t":${at}}`) =>
    store.transaction(
      async (tx: Repos) => {
        const current = (await tx.devices.get(d.id))!;
        const e = event(d, at, 'touch', { body });
        await tx.events.insert(e);
        await tx.deliveries.add([row(connectorId, at, { eventId: e.id })]);
        await tx.devices.updateReported(
          d.id,
          { n: ((current.reported.n as number | undefined) ?? 0) + 1 },
          { touch: [at, e.id] },
          at,
        );
        return e.id;
      },
      { rerunnable: true, devices: [d.id] },
    );
  const countOf = async (d: DeviceRecord) => (await store.devices.get(d.id))?.reported.n;

  it('a named device held by another transaction: the batch waits for the lock, then every event of it commits', async () => {
    const {
      c,
      devices: [held, free],
    } = await seed(2);
    const client = await store.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [held!.id]);
      const waiting = Promise.all([publish(c.id, held!, T0), publish(c.id, free!, T0 + 1)]);
      await sleep(300);
      assert.deepEqual([await countOf(held!), await countOf(free!)], [undefined, undefined]);
      await client.query('COMMIT');
      await waiting;
      assert.deepEqual([await countOf(held!), await countOf(free!)], [1, 1]);
    } finally {
      client.release();
    }
  });

  it('a device read but not named, held by another transaction: the rest of the batch commits, that one runs alone after the lock', async () => {
    const {
      devices: [held, other],
    } = await seed(2);
    const bump = (d: DeviceRecord) =>
      store.transaction(
        async (tx) => {
          const current = (await tx.devices.get(d.id))!;
          await tx.devices.updateReported(d.id, { n: ((current.reported.n as number | undefined) ?? 0) + 1 }, {}, T0);
        },
        { rerunnable: true },
      );
    const client = await store.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [held!.id]);
      const waiting = bump(held!);
      await bump(other!);
      assert.deepEqual([await countOf(held!), await countOf(other!)], [undefined, 1]);
      await client.query('COMMIT');
      await waiting;
      assert.equal(await countOf(held!), 1);
    } finally {
      client.release();
    }
  });

  it('when the write of what a batch held fails, each event runs again alone and only the bad one fails', async () => {
    const {
      c,
      devices: [d],
    } = await seed(1);
    const results = await Promise.allSettled([
      publish(c.id, d!, T0),
      publish(c.id, d!, T0 + 1, '{"bad":"\u0000"}'), // PostgreSQL text cannot hold NUL: a 400 for this one
      publish(c.id, d!, T0 + 2),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.equal(((results[1] as PromiseRejectedResult).reason as { status?: number }).status, 400);
    assert.equal(await countOf(d!), 2);
    assert.equal((await store.deliveries.claim(c.id, T0 * 2, 0, T0 * 2, 10)).length, 2);
  });

  it('a batch reads what it holds: history, the queue and the device, in the same transaction', async () => {
    const {
      c,
      devices: [d],
    } = await seed(1);
    const seen = await Promise.all([
      publish(c.id, d!, T0),
      store.transaction(
        async (tx) => {
          const e = event(d!, T0 + 1);
          await tx.events.insert(e);
          await tx.deliveries.add([row(c.id, T0 + 1, { eventId: e.id })]);
          await tx.devices.updateReported(d!.id, { n: 'mine' }, {}, T0 + 1);
          const history = await tx.events.listByDevice({
            deviceId: d!.id,
            eventTypes: [],
            startTime: 0,
            endTime: T0 * 2,
            limit: 10,
          });
          const queued = await tx.deliveries.claim(c.id, T0 * 2, 0, T0 * 2, 10);
          return { history: history.length, queued: queued.length, reported: (await tx.devices.get(d!.id))?.reported };
        },
        { rerunnable: true, devices: [d!.id] },
      ),
    ]);
    assert.deepEqual(seen[1], { history: 2, queued: 2, reported: { n: 'mine' } });
  });
});

// A batch whose devices this process read or wrote before runs unlocked (device-versions.ts): no BEGIN, no locking
// read, no COMMIT, one statement that fails as a whole when another process changed a device since.
describe('postgres: batches of devices this process knows run unlocked', () => {
  let drop: () => Promise<void>;
  let here: PostgresStore;
  let there: PostgresStore;
  /** The statements this process's transactions sent, in order. */
  const sent: string[] = [];
  const watched = new WeakSet<pg.PoolClient>();
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    // Neither tells the other the versions it commits (device-hints.ts): here must hold an out-of-date one.
    here = await createPostgresStore(db.url, { poolSize: 4, deviceHints: false });
    there = await createPostgresStore(db.url, { poolSize: 4, deviceHints: false });
    // Transactions take a connection with connect() (a promise); pool.query, with a callback, is left alone.
    const connect = here.pool.connect.bind(here.pool) as (...args: unknown[]) => Promise<pg.PoolClient>;
    (here.pool as { connect: unknown }).connect = async (...args: unknown[]) => {
      if (args.length > 0) return connect(...args);
      const client = await connect();
      if (!watched.has(client)) {
        watched.add(client);
        const query = client.query.bind(client) as (...a: unknown[]) => unknown;
        (client as { query: unknown }).query = (q: unknown, ...rest: unknown[]) => {
          sent.push(typeof q === 'string' ? q : (q as { text: string }).text);
          return query(q, ...rest);
        };
      }
      return client;
    };
  });
  after(async () => {
    await here?.close();
    await there?.close();
    await drop?.();
  });

  const withClient = async <T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  /**
   * One event as the pipeline writes it, at `store`, its queue row handed off as the engine does (leased, under the
   * cluster's limit: the statement takes the connector's claim lock too): the device as the transaction read it, or
   * null when gone.
   */
  const publish = (store: PostgresStore, connectorId: string, d: DeviceRecord, at: number) =>
    store.transaction(
      async (tx: Repos) => {
        const current = await tx.devices.get(d.id);
        if (!current) return null;
        const e = event(d, at);
        await tx.events.insert(e);
        const cap = { max: 1_000, whileHanging: 1_000, hangingIfLeasedBefore: 0 };
        await tx.deliveries.add([
          row(connectorId, at, {
            eventId: e.id,
            dueTime: at + 60_000_000,
            leaseUntil: at + 60_000_000,
            leaseIf: { cap, enqueuedAfter: 0 },
          }),
        ]);
        await tx.devices.updateReported(
          d.id,
          { n: ((current.reported.n as number | undefined) ?? 0) + 1 },
          { touch: [at, e.id] },
          at,
        );
        return current;
      },
      { rerunnable: true, devices: [d.id] },
    );
  const seed = async () => {
    const c = await seedConnector(here);
    const d = device(c.projectId);
    await here.devices.create(d);
    return { c, d };
  };
  const history = async (d: DeviceRecord) =>
    (await here.events.listByDevice({ deviceId: d.id, eventTypes: [], startTime: 0, endTime: T0 * 2, limit: 100 }))
      .length;
  const queued = async (connectorId: string) =>
    (await here.deliveries.claim(connectorId, T0 * 2, 0, T0 * 2, 100)).length;

  it('the first batch of a device locks and reads it; the next ones are one statement each', async () => {
    const { c, d } = await seed();
    sent.length = 0;
    await publish(here, c.id, d, T0);
    assert.deepEqual(
      sent.map((q) => q.trim().split(/\s+/)[0]),
      ['BEGIN', 'SELECT', 'WITH', 'COMMIT'],
    );
    sent.length = 0;
    for (let i = 1; i <= 3; i++) await publish(here, c.id, d, T0 + i);
    assert.deepEqual(
      sent.map((q) => q.trim().split(/\s+/)[0]),
      ['WITH', 'WITH', 'WITH'],
    );
    assert.equal((await here.devices.get(d.id))?.reported.n, 4);
    assert.equal(await history(d), 4);
    assert.equal(await queued(c.id), 4);
  });

  it('a device another process wrote meanwhile: the statement keeps nothing, and the batch runs again locked', async () => {
    const { c, d } = await seed();
    await publish(here, c.id, d, T0);
    await publish(there, c.id, d, T0 + 1);
    sent.length = 0;
    const read = await publish(here, c.id, d, T0 + 2);
    assert.deepEqual(
      sent.map((q) => q.trim().split(/\s+/)[0]),
      ['WITH', 'BEGIN', 'SELECT', 'WITH', 'COMMIT'],
    );
    // It ran on the device as the other process left it: no update lost, no event or queue row twice.
    assert.equal(read?.reported.n, 2);
    assert.equal((await here.devices.get(d.id))?.reported.n, 3);
    assert.equal(await history(d), 3);
    assert.equal(await queued(c.id), 3);
    sent.length = 0;
    await publish(here, c.id, d, T0 + 3);
    assert.deepEqual(
      sent.map((q) => q.trim().split(/\s+/)[0]),
      ['WITH'],
      'known again',
    );
  });

  it('labels changed, or the device deleted, at another process: the next batch here sees it', async () => {
    const { c, d } = await seed();
    await publish(here, c.id, d, T0);
    await there.devices.updateLabels(d.id, { room: 'b' }, T0 + 1);
    assert.deepEqual((await publish(here, c.id, d, T0 + 2))?.labels, { room: 'b' });
    await there.devices.delete(d.id);
    assert.equal(await publish(here, c.id, d, T0 + 3), null);
    assert.equal(await history(d), 0);
    assert.equal(await queued(c.id), 2);
  });

  it('two processes publishing to the same devices at once lose no update, write every event once, never deadlock', async () => {
    // Two stores of their own on a database of its own, closed at the end so that their server processes report
    // their statistics (the deadlock count) as they exit.
    const db = await createTestDatabase();
    const a = await createPostgresStore(db.url, { poolSize: 4 });
    const b = await createPostgresStore(db.url, { poolSize: 4 });
    try {
      const c = await seedConnector(a);
      const devices = Array.from({ length: 3 }, () => device(c.projectId));
      for (const d of devices) await a.devices.create(d);
      // 10 rounds; in each, 12 publishes at each store at once over the same devices: batches of both kinds, and
      // unlocked statements that find a device changed by the other store.
      let at = T0;
      for (let round = 0; round < 10; round++) {
        await Promise.all(
          Array.from({ length: 24 }, (_, i) => publish(i % 2 === 0 ? a : b, c.id, devices[i % 3]!, at++)),
        );
      }
      assert.deepEqual(
        await Promise.all(devices.map(async (d) => (await a.devices.get(d.id))?.reported.n)),
        [80, 80, 80],
      );
      const { rows } = await a.pool.query<{ events: number; queued: number; distinct: number }>(
        `SELECT (SELECT count(*) FROM events) AS events, count(*) AS queued, count(DISTINCT event_id) AS distinct
         FROM deliveries WHERE connector_id = $1`,
        [c.id],
      );
      assert.deepEqual(rows[0], { events: 240, queued: 240, distinct: 240 });
    } finally {
      await a.close();
      await b.close();
    }
    const deadlocks = await withClient(db.url, async (client) => {
      // The stores' server processes report as they exit: wait for them to be gone.
      for (let i = 0; i < 100; i++) {
        const { rows } = await client.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
        );
        if (rows[0]!.n === 0) break;
        await sleep(50);
      }
      await client.query('SELECT pg_stat_clear_snapshot()');
      return (
        await client.query<{ n: number }>(
          'SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()',
        )
      ).rows[0]!.n;
    });
    await db.drop();
    assert.equal(deadlocks, 0);
  });

  it('a device changed by the same update time and another transaction is still told apart (by its row version)', async () => {
    const { c, d } = await seed();
    await publish(here, c.id, d, T0);
    const known = await here.devices.get(d.id);
    assert.equal(known?.updateTime, T0);
    await there.devices.updateReported(d.id, { n: 10 }, {}, T0);
    // The row's update time is what this process last wrote (T0), its version is not.
    assert.equal((await here.devices.get(d.id))?.updateTime, T0);
    await publish(here, c.id, d, T0 + 1);
    assert.equal((await here.devices.get(d.id))?.reported.n, 11);
  });

  /** An attempt's outcome on a queued row, as the engine logs it (delivery/delivery-log.ts). */
  const logged = (r: NewDelivery, state: LogOutcome['state'], time: number): LogOutcome => ({
    id: r.queued!.id,
    connectorId: r.connectorId,
    eventId: r.eventId,
    eventType: 'touch',
    deviceId: 'd1',
    trigger: 'EVENT',
    createTime: r.enqueueTime,
    state,
    attempt: {
      time,
      durationMicros: 1_000,
      outcome: state === 'DELIVERED' ? 'SUCCESS' : 'HTTP_ERROR',
      httpStatus: state === 'DELIVERED' ? 200 : 500,
      responseBody: '{"ok":true}',
      responseBodyTruncated: false,
      error: '',
    },
    nextAttemptTime: state === 'RETRYING' ? time + 60_000_000 : null,
    updateTime: time + 1_000,
  });

  /** The statements this process's transactions send while fn runs. */
  const statements = async (fn: () => Promise<unknown>): Promise<string[]> => {
    sent.length = 0;
    await fn();
    return [...sent];
  };

  it("a batch of outcomes that only acknowledges is two statements: the connectors' read and its held writes, merged", async () => {
    const c = await seedConnector(here);
    const rows = [row(c.id, T0), row(c.id, T0), row(c.id, T0)];
    const ids = await here.deliveries.insert(rows);
    // Acknowledged once before (late, while another process had the row): this batch's attempt is its second.
    await here.deliveryLog.record([logged(rows[1]!, 'DELIVERED', T0 - 2)]);
    await here.connectorMetrics.add(c.id, 60_000_000, 1, 0, new Map([['100', 1]]));
    const series = `outcome_total{c="${c.id}"}`;
    const sent = await statements(() =>
      here.transaction(
        async (tx: Repos) => {
          // As the outcome recorder reads them (delivery/outcomes.ts).
          await tx.dataConnectors.getMany([c.id]);
          await tx.deliveries.deleteCounted([ids[0]!, ids[1]!], series);
          await tx.connectorMetrics.add(
            c.id,
            60_000_000,
            2,
            1,
            new Map([
              ['100', 2],
              ['250', 1],
            ]),
          );
          await tx.connectorMetrics.add(c.id, 60_000_000, 1, 0, new Map([['250', 1]]));
          await tx.connectorMetrics.add(c.id, 120_000_000, 0, 1, new Map());
          await tx.connectorMetrics.addCounters({ [series]: 5, [`${series}_sum`]: 0.5 });
          await tx.deliveries.deleteCounted([ids[1]!], series);
          // Each attempt logged (delivery log, extensions §X1): held with the rest, in the same statement.
          await tx.deliveryLog.record([logged(rows[1]!, 'DELIVERED', T0 + 1), logged(rows[0]!, 'DELIVERED', T0 + 2)]);
          await tx.deliveryLog.record([logged(rows[2]!, 'RETRYING', T0 + 3)]);
        },
        { rerunnable: true, background: true },
      ),
    );
    assert.equal(sent.length, 2, sent.join('\n---\n'));
    const log = await here.deliveryLog.list({ connectorIds: [c.id] }, 10, T0);
    assert.deepEqual(
      log.map((r) => [r.id, r.state, r.attemptCount]),
      [
        [ids[2], 'RETRYING', 1],
        [ids[1], 'DELIVERED', 2],
        [ids[0], 'DELIVERED', 1],
      ],
    );
    assert.deepEqual(
      (await here.deliveryLog.get(c.id, ids[1]!, T0))?.attempts?.map((a) => a.time),
      [T0 - 2, T0 + 1],
    );
    assert.ok(!sent.some((q) => /^\s*(BEGIN|COMMIT)/.test(q)));
    const buckets = await here.connectorMetrics.listSince(c.id, 0);
    assert.deepEqual(
      buckets.map((b) => [b.bucketStart, b.successCount, b.errorCount, { ...b.latencyHist }]),
      [
        [60_000_000, 4, 1, { 100: 3, 250: 2 }],
        [120_000_000, 0, 1, {}],
      ],
    );
    const counters = await here.connectorMetrics.counters();
    assert.equal(counters[series], 5 + 2, 'the rows deleted, each once, and the delta');
    assert.equal(counters[`${series}_sum`], 0.5);
    assert.equal(await here.deliveries.get(ids[0]!), null);
    assert.ok(await here.deliveries.get(ids[2]!));
  });

  it('a batch of outcomes that needs a lock runs again locked, and writes once', async () => {
    const c = await seedConnector(here);
    const queued = row(c.id, T0);
    const [id] = await here.deliveries.insert([queued]);
    const series = `relocked_total{c="${c.id}"}`;
    let runs = 0;
    const sent = await statements(() =>
      here.transaction(
        async (tx: Repos) => {
          runs++;
          await tx.deliveries.deleteCounted([id!], series);
          await tx.deliveryLog.record([logged(queued, 'DELIVERED', T0)]);
          await tx.connectorMetrics.addCounters({ [series]: 1 });
          const locked = await tx.dataConnectors.getForUpdate(c.id);
          await tx.dataConnectors.updateState(c.id, locked!.status, T0, T0 + 1);
        },
        { rerunnable: true, background: true },
      ),
    );
    assert.equal(runs, 2, 'unlocked first, then locked');
    assert.ok(sent.some((q) => /^\s*BEGIN/.test(q)));
    assert.equal((await here.connectorMetrics.counters())[series], 2);
    assert.equal((await here.dataConnectors.get(c.id))!.failingSince, T0);
    assert.equal((await here.deliveryLog.get(c.id, id!, T0))?.attemptCount, 1, 'the attempt logged once');
  });
});

// Processes tell each other the device versions their batches commit (device-hints.ts): a device whose last event
// went through another process is known here too, and its next batch here runs unlocked.
describe('postgres: device versions heard from another process', () => {
  it('a device another process wrote last: the next batch here is one statement, on the state the other left', async () => {
    const db = await createTestDatabase();
    const a = await createPostgresStore(db.url, { poolSize: 4 });
    const b = await createPostgresStore(db.url, { poolSize: 4 });
    const listener = new pg.Client({ connectionString: db.url });
    try {
      const c = await seedConnector(a);
      const [d, ofA, ofB] = [device(c.projectId), device(c.projectId), device(c.projectId)];
      for (const x of [d, ofA, ofB]) await a.devices.create(x);
      const bump = (store: PostgresStore, x: DeviceRecord, at: number) =>
        store.transaction(
          async (tx: Repos) => {
            const current = (await tx.devices.get(x.id))!;
            const e = event(x, at);
            await tx.events.insert(e);
            await tx.devices.updateReported(
              x.id,
              { n: ((current.reported.n as number | undefined) ?? 0) + 1 },
              { touch: [at, e.id] },
              at,
            );
          },
          { rerunnable: true, devices: [x.id] },
        );
      await listener.connect();
      await listener.query('LISTEN sensorcloud_devices');
      /** Whether a message naming `x` is heard within 500 ms. */
      const hears = (x: DeviceRecord) =>
        new Promise<boolean>((resolve) => {
          const on = (n: pg.Notification) => {
            if (!n.payload?.includes(x.id)) return;
            clearTimeout(timer);
            listener.off('notification', on);
            resolve(true);
          };
          const timer = setTimeout(() => {
            listener.off('notification', on);
            resolve(false);
          }, 500);
          listener.on('notification', on);
        });
      // A process sends the versions it commits only once it has heard another one, which it may not have on a busy
      // machine when its listening connection opened after the other's first hello (the next comes a second later).
      // So each commits batches of a device of its own until a message names it: then each has heard the other, and
      // b listens (it heard a).
      const untilHeard = async (store: PostgresStore, x: DeviceRecord, at: number) => {
        for (let i = 0; i < 20; i++) {
          const heard = hears(x);
          await bump(store, x, at + i);
          if (await heard) return;
        }
        assert.fail(`no message named the device of ${store === a ? 'a' : 'b'}`);
      };
      await bump(b, ofB, T0);
      await untilHeard(a, ofA, T0 + 10);
      await untilHeard(b, ofB, T0 + 100);
      const heard = hears(d);
      await bump(a, d, T0 + 200);
      assert.equal(await heard, true, 'a told its version of the device');
      // The listener heard a's message; b's connection got it at the same moment, give its process a turn or two.
      await sleep(100);
      const sent: string[] = [];
      const connect = b.pool.connect.bind(b.pool) as (...args: unknown[]) => Promise<pg.PoolClient>;
      (b.pool as { connect: unknown }).connect = async (...args: unknown[]) => {
        if (args.length > 0) return connect(...args);
        const client = await connect();
        const query = client.query.bind(client) as (...q: unknown[]) => unknown;
        (client as { query: unknown }).query = (q: unknown, ...rest: unknown[]) => {
          sent.push(typeof q === 'string' ? q : (q as { text: string }).text);
          return query(q, ...rest);
        };
        return client;
      };
      await bump(b, d, T0 + 201);
      assert.deepEqual(
        sent.map((q) => q.trim().split(/\s+/)[0]),
        ['WITH'],
        'unlocked: the version heard was current',
      );
      assert.equal((await a.devices.get(d.id))?.reported.n, 2, 'on the state a left: no update lost');
    } finally {
      await listener.end().catch(() => undefined);
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});
