// PostgreSQL only: the delivery queue and the connector metrics shared by several processes. Two stores opened
// on one database (two pools, as two processes would have) claim from one backlog and add to one metrics bucket
// at once. The queue and the metrics have no foreign keys, so no organization or project is needed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DeliveryRecord, NewDelivery } from '../../src/store/contract/connector-repos.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { startQueueVacuum } from '../../src/store/postgres/operations/queue-vacuum.ts';
import pg from 'pg';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase } from '../helpers/postgres.ts';

const T0 = 1_748_779_200_000_000;
const MINUTE = 60_000_000;

describe('postgres: queue and metrics shared by two processes', () => {
  let drop: () => Promise<void>;
  let url: string;
  let stores: PostgresStore[] = [];
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    url = db.url;
    // One after the other: the second finds the schema migrated by the first.
    stores = [await createPostgresStore(db.url, { poolSize: 4 }), await createPostgresStore(db.url, { poolSize: 4 })];
  });
  after(async () => {
    for (const s of stores) await s.close();
    await drop?.();
  });

  it('8 claim loops over 2,000 due rows of one connector never lease a row twice, and lease them all', async () => {
    const ROWS = 2_000;
    const connectorId = 'c-queue';
    const ids: number[] = [];
    // Due times descending against ids, so "earliest due first" is not simply id order.
    for (let from = 0; from < ROWS; from += 500) {
      ids.push(...await stores[0]!.deliveries.insert(Array.from({ length: 500 }, (_, i) => ({
        connectorId, eventId: `e${from + i}`, body: Buffer.from(`{"n":${from + i}}`), enqueueTime: T0, dueTime: T0 + ROWS - (from + i),
      }))));
    }
    const now = T0 + ROWS;
    // Each loop claims small batches until a claim comes back empty; loops alternate between the two stores, half
    // of them claiming inside transactions.
    const loop = async (n: number): Promise<DeliveryRecord[]> => {
      const store = stores[n % 2]!;
      const mine: DeliveryRecord[] = [];
      for (;;) {
        const batch = n % 4 < 2
          ? await store.deliveries.claim(connectorId, now, 0, now + MINUTE, 7)
          : await store.transaction((tx) => tx.deliveries.claim(connectorId, now, 0, now + MINUTE, 7));
        if (batch.length === 0) return mine;
        assert.ok(batch.length <= 7);
        mine.push(...batch);
      }
    };
    const claims = await Promise.all(Array.from({ length: 8 }, (_, n) => loop(n)));
    const all = claims.flat().map((r) => r.id);
    assert.equal(new Set(all).size, all.length, 'a row leased twice');
    assert.deepEqual([...all].sort((a, b) => a - b), [...ids].sort((a, b) => a - b));
    assert.ok(claims.filter((c) => c.length > 0).length > 1, 'the loops shared the work');
    for (const r of claims.flat()) assert.equal(r.leaseUntil, now + MINUTE);
    assert.deepEqual(await stores[1]!.deliveries.connectorsWithDue(now, 0), []);
    assert.deepEqual(await stores[0]!.deliveries.claim(connectorId, now, 0, now + MINUTE, ROWS), []);
  });

  it('metric adds from two stores into one bucket lose no count and merge the histograms exactly', async () => {
    const connectorId = 'c-metrics';
    const N = 200;
    const expected: Record<string, number> = {};
    const adds = Array.from({ length: N }, (_, i) => {
      // Some keys every add shares, some only a few do: both the update and the new-key paths of the merge race.
      const hist = new Map<string, number>([['612', 1], [`k${i % 7}`, i % 3 + 1]]);
      if (i % 50 === 0) hist.set(`rare${i}`, 5);
      for (const [k, v] of hist) expected[k] = (expected[k] ?? 0) + v;
      const store = stores[i % 2]!;
      return i % 3 === 0
        ? store.transaction((tx) => tx.connectorMetrics.add(connectorId, T0, 1, 2, hist))
        : store.connectorMetrics.add(connectorId, T0, 1, 2, hist);
    });
    await Promise.all(adds);
    for (const s of stores) {
      const buckets = await s.connectorMetrics.listSince(connectorId, 0);
      assert.equal(buckets.length, 1);
      assert.deepEqual([buckets[0]!.bucketStart, buckets[0]!.successCount, buckets[0]!.errorCount], [T0, N, 2 * N]);
      assert.deepEqual({ ...buckets[0]!.latencyHist }, expected);
      for (const v of Object.values(buckets[0]!.latencyHist)) assert.equal(typeof v, 'number');
    }
  });

  it('counter adds from two stores lose no increment', async () => {
    const N = 100;
    // Keys in different orders per call: locking them in one order keeps concurrent transactions from deadlocking.
    await Promise.all(Array.from({ length: N }, (_, i) => {
      const deltas = i % 2 === 0 ? { a_total: 1, b_total: 2, c_sum: 0.25 } : { c_sum: 0.25, b_total: 2, a_total: 1 };
      const store = stores[i % 2]!;
      return i % 3 === 0 ? store.transaction((tx) => tx.connectorMetrics.addCounters(deltas)) : store.connectorMetrics.addCounters(deltas);
    }));
    assert.deepEqual(await stores[1]!.connectorMetrics.counters(), { a_total: N, b_total: 2 * N, c_sum: N * 0.25 });
  });
  it('claims with a cap hold the per-connector limit for the cluster: in flight at most max, or whileHanging', async () => {
    const connectorId = 'c-cap';
    await stores[0]!.deliveries.insert(Array.from({ length: 300 }, (_, i) => ({
      connectorId, eventId: `cap${i}`, body: Buffer.from('{}'), enqueueTime: T0, dueTime: T0,
    })));
    const LEASE = MINUTE;
    const cap = (now: number) => ({ max: 10, whileHanging: 2, hangingIfLeasedBefore: now + LEASE - 1_000_000 });
    // 12 claimers at once over both stores, each asking for 8: together they may take 10.
    const now = T0 + 1;
    const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => stores[i % 2]!.transaction((tx) =>
      tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now)))));
    // Claimers of one connector wait for each other: together they took the 10, none went past the limit.
    const taken = claims.flat();
    assert.equal(taken.length, 10);
    assert.deepEqual(await stores[0]!.transaction((tx) => tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now))), []);
    assert.equal(new Set(taken.map((r) => r.id)).size, 10);
    // Nothing more while those 10 are in flight.
    assert.deepEqual(await stores[1]!.transaction((tx) => tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now))), []);
    // Two answered: two more may start.
    for (const r of taken.slice(0, 2)) assert.equal(await stores[0]!.deliveries.delete(r.id), true);
    assert.equal((await stores[0]!.transaction((tx) => tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now)))).length, 2);
    // Two seconds on, the oldest leases have been in flight for over a second: the connector hangs, 2 at most, and
    // 10 are in flight already.
    const later = now + 2_000_000;
    assert.deepEqual(await stores[1]!.transaction((tx) => tx.deliveries.claim(connectorId, later, T0 - MINUTE, later + LEASE, 8, cap(later))), []);
    // Once every lease has ended (their process died), the rows are due again and the limit counts nothing.
    const afterLeases = now + LEASE + 1;
    assert.equal((await stores[1]!.transaction((tx) => tx.deliveries.claim(connectorId, afterLeases, T0 - MINUTE, afterLeases + LEASE, 8, cap(afterLeases)))).length, 8);
  });

  it('claims of several connectors in one statement hold each connector\'s cluster limit, beside leased writes, without deadlocks', async () => {
    const connectors = ['c-many-a', 'c-many-b', 'c-many-c', 'c-many-d'];
    const now = T0 + 1;
    const LEASE = MINUTE;
    for (const connectorId of connectors) {
      await stores[0]!.deliveries.insert(Array.from({ length: 200 }, (_, i) => ({
        connectorId, eventId: `m${i}`, body: Buffer.from('{}'), enqueueTime: T0, dueTime: T0,
      })));
    }
    const cap = { max: 10, whileHanging: 2, hangingIfLeasedBefore: now };
    // 16 claims at once over both stores, each of these four connectors and two more with nothing due, in a rotation
    // of its own (the locks are taken in one order whatever the rotation), beside transactions writing leased rows of
    // all six in reverse order (the store sorts their locks too): the two without rows due are locked by the claims
    // and by the writes alike.
    const all = [...connectors, 'c-many-e', 'c-many-f'];
    const claims = Array.from({ length: 16 }, (_, i) => {
      const order = all.map((_, k) => all[(i + k) % all.length]!);
      return stores[i % 2]!.deliveries.claimMany(order.map((connectorId) => ({ connectorId, limit: 4, cap })), 1000, now, T0 - MINUTE, now + LEASE);
    });
    const writes = Array.from({ length: 8 }, (_, i) => stores[i % 2]!.transaction((tx) => tx.deliveries.add([...all].reverse().map((connectorId) => ({
      connectorId, eventId: `w${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now + LEASE, leaseUntil: now + LEASE,
      leaseIf: { cap, enqueuedAfter: T0 - MINUTE },
    }))), { rerunnable: true }));
    const claimed = (await Promise.all(claims)).flat(2);
    await Promise.all(writes);
    const ids = claimed.map((r) => r.id);
    assert.equal(new Set(ids).size, ids.length, 'a row leased twice');
    // A connector's rows due go first: the writes found them and queued theirs due. So each such connector's 10 in
    // flight are its claimed rows (and the writes leased theirs for the other two).
    for (const connectorId of connectors) assert.equal(claimed.filter((r) => r.connectorId === connectorId).length, 10, connectorId);
    assert.equal(claimed.filter((r) => !connectors.includes(r.connectorId)).length, 0);
    // What an attempt here has ended frees its slot for this process's claims, connector by connector.
    const [a, b] = [claimed.find((r) => r.connectorId === 'c-many-a')!, claimed.find((r) => r.connectorId === 'c-many-b')!];
    const more = await stores[0]!.deliveries.claimMany([
      { connectorId: 'c-many-b', limit: 4, cap },
      { connectorId: 'c-many-a', limit: 4, cap: { ...cap, ended: new Set([a.id]) } },
    ], 1000, now, T0 - MINUTE, now + LEASE);
    assert.deepEqual(more.map((rows) => rows.length), [0, 1], `${b.id} ended nowhere`);
  });

  it('rows queued leased under leaseIf keep the limit with each other and with claims; the rest are queued due', async () => {
    const connectorId = 'c-leased';
    const now = T0 + 1;
    const LEASE = MINUTE;
    const cap = (at: number) => ({ max: 10, whileHanging: 2, hangingIfLeasedBefore: at + LEASE - 1_000_000 });
    const leased = (name: string, at = now): NewDelivery => ({
      connectorId, eventId: name, body: Buffer.from('{}'), enqueueTime: at, dueTime: at + LEASE, leaseUntil: at + LEASE,
      leaseIf: { cap: cap(at), enqueuedAfter: T0 - MINUTE },
    });
    const read = async (r: NewDelivery) => {
      const d = (await stores[0]!.deliveries.get(r.queued!.id))!;
      return [d.leaseUntil, d.dueTime];
    };
    // 12 transactions at once over both stores, 3 rows each: alone, in a transaction, in a group-commit batch.
    const batches = Array.from({ length: 12 }, (_, b) => [0, 1, 2].map((k) => leased(`l${b}-${k}`)));
    await Promise.all(batches.map((rows, b) => {
      const store = stores[b % 2]!;
      return b % 3 === 0 ? store.deliveries.add(rows) : store.transaction((tx) => tx.deliveries.add(rows), { rerunnable: b % 3 === 2 });
    }));
    const all = batches.flat();
    const kept = all.filter((r) => r.queued!.leased);
    assert.equal(kept.length, 10);
    for (const r of kept) assert.deepEqual(await read(r), [now + LEASE, now + LEASE]);
    // The others are due at once, for a claim to take when there is room.
    for (const r of all.filter((x) => !x.queued!.leased)) assert.deepEqual(await read(r), [null, now]);
    // Two answered: there is room for two, but rows are due, and they go first.
    for (const r of kept.slice(0, 2)) assert.equal(await stores[0]!.deliveries.delete(r.queued!.id), true);
    const late = leased('late');
    await stores[1]!.deliveries.add([late]);
    assert.equal(late.queued!.leased, false);
    assert.equal((await stores[1]!.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now))).length, 2);
    // Once nothing is due, a row is leased again when there is room, and leases that have hung for over a second
    // cut the limit to whileHanging.
    await stores[0]!.deliveries.deleteByConnector(connectorId, 100);
    const fresh = [leased('f1'), leased('f2'), leased('f3')];
    await stores[0]!.deliveries.add(fresh);
    assert.deepEqual(fresh.map((r) => r.queued!.leased), [true, true, true]);
    const later = now + 2_000_000;
    const hung = leased('h', later);
    await stores[1]!.deliveries.add([hung]);
    assert.equal(hung.queued!.leased, false);
  });

  it('rows named as ended (attempt over, outcome not yet recorded) are left out of the count, by claims and leased writes', async () => {
    const connectorId = 'c-ended';
    const now = T0 + 1;
    const LEASE = MINUTE;
    const inFlight = await stores[0]!.deliveries.insert(Array.from({ length: 10 }, (_, i) => ({
      connectorId, eventId: `e${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now + LEASE, leaseUntil: now + LEASE,
    })));
    // In no order, as a live set holds them: the store sorts them (an event batch's count searches them, migration 009).
    const ended = new Set(inFlight.slice(0, 4).reverse());
    const cap = (names?: ReadonlySet<number>) => ({ max: 10, whileHanging: 2, hangingIfLeasedBefore: now, ended: names });
    const leased = (name: string, names?: ReadonlySet<number>): NewDelivery => ({
      connectorId, eventId: name, body: Buffer.from('{}'), enqueueTime: now, dueTime: now + LEASE, leaseUntil: now + LEASE,
      leaseIf: { cap: cap(names), enqueuedAfter: T0 - MINUTE },
    });
    // 10 in flight: nothing more, unless some of them have ended.
    const refused = leased('refused');
    await stores[0]!.deliveries.add([refused]);
    assert.equal(refused.queued!.leased, false);
    await stores[0]!.deliveries.deleteMany([refused.queued!.id]);
    // 4 of them ended: room for 4 (in a group-commit batch, from the other store); the fifth is queued due.
    const rows = [leased('a', ended), leased('b', ended), leased('c', ended), leased('d', ended), leased('e', ended)];
    await stores[1]!.transaction((tx) => tx.deliveries.add(rows), { rerunnable: true });
    assert.deepEqual(rows.map((r) => r.queued!.leased), [true, true, true, true, false]);
    // A claim counts the same way: 10 leased and not ended (6 + the 4 above), no room; one more ended, room for one.
    // Ids that name no leased row of the connector (here, none at all), below and above its own, change nothing.
    assert.deepEqual(await stores[0]!.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(ended)), []);
    const claimed = await stores[1]!.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(new Set([1e12, inFlight[4]!, ...ended, 1])));
    assert.deepEqual(claimed.map((r) => r.eventId), ['e']);
  });

  it('a claim waits for a transaction queueing leased rows of its connector, then counts them', async () => {
    const connectorId = 'c-wait';
    const now = T0 + 1;
    const cap = { max: 10, whileHanging: 2, hangingIfLeasedBefore: now };
    const rows: NewDelivery[] = Array.from({ length: 8 }, (_, i) => ({
      connectorId, eventId: `w${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now + MINUTE, leaseUntil: now + MINUTE,
      leaseIf: { cap, enqueuedAfter: T0 - MINUTE },
    }));
    let claim: Promise<DeliveryRecord[]> | null = null;
    let claimedEarly = false;
    await stores[0]!.transaction(async (tx) => {
      await tx.deliveries.add(rows);
      // Rows due meanwhile (no lease asked: no lock needed), and a claim of them from the other store.
      await stores[1]!.deliveries.add(Array.from({ length: 5 }, (_, i) => ({ connectorId, eventId: `d${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now })));
      claim = stores[1]!.deliveries.claim(connectorId, now, T0 - MINUTE, now + MINUTE, 8, cap);
      void claim.then(() => {
        claimedEarly = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(claimedEarly, false, 'the claim waits for the commit');
    });
    assert.deepEqual(rows.map((r) => r.queued!.leased), Array(8).fill(true));
    assert.equal((await claim!).length, 2);
  });

  it('rows asking for a lease of a connector with rows due are queued due without waiting for its claim lock', async () => {
    const now = T0 + 1;
    const cap = { max: 10, whileHanging: 2, hangingIfLeasedBefore: now };
    const leased = (connectorId: string): NewDelivery => ({
      connectorId, eventId: `x-${connectorId}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now + MINUTE, leaseUntil: now + MINUTE,
      leaseIf: { cap, enqueuedAfter: T0 - MINUTE },
    });
    await stores[0]!.deliveries.insert([{ connectorId: 'c-behind', eventId: 'old', body: Buffer.from('{}'), enqueueTime: now, dueTime: now }]);
    // Another session holds both connectors' claim locks, as a claim or an event batch of another process does.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || id, 0)) FROM unnest(ARRAY['c-behind', 'c-free']) AS id");
      const behind = leased('c-behind');
      const first = stores[0]!.transaction((tx) => tx.deliveries.add([behind]), { rerunnable: true }).then(() => 'written');
      const waited = new Promise((resolve) => setTimeout(resolve, 2_000, 'waited for the lock'));
      assert.equal(await Promise.race([first, waited]), 'written');
      assert.equal(behind.queued!.leased, false, 'queued due behind the row due');
      const free = leased('c-free');
      let written = false;
      const waiting = stores[0]!.transaction((tx) => tx.deliveries.add([free]), { rerunnable: true }).then(() => {
        written = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(written, false, 'a connector with nothing due is counted under its lock');
      await holder.query('COMMIT');
      await Promise.all([first, waiting]);
      assert.equal(free.queued!.leased, true);
    } finally {
      await holder.end();
    }
  });

  it('the process leading the job vacuums the queue once it holds enough dead rows', async () => {
    const db = await createTestDatabase();
    const store = await createPostgresStore(db.url, { poolSize: 2 });
    try {
      const vacuums = async () => {
        const [r] = await store.pool.query<{ n: number }>("SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relname = 'deliveries'").then((x) => x.rows);
        return r!.n;
      };
      assert.equal(await vacuums(), 0);
      const rows: NewDelivery[] = Array.from({ length: 1_000 }, (_, i) => ({ connectorId: 'c-vacuum', eventId: `v${i}`, body: Buffer.from('{}'), enqueueTime: T0, dueTime: T0 }));
      await store.deliveries.add(rows);
      await store.deliveries.deleteMany(rows.map((r) => r.queued!.id));
      const deadline = Date.now() + 10_000;
      while ((await vacuums()) === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok((await vacuums()) > 0, 'vacuumed');
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('the leader rewrites the queue once a backlog left it large and nearly empty, not while it holds the backlog', async () => {
    const db = await createTestDatabase();
    const store = await createPostgresStore(db.url, { poolSize: 2 });
    const pool = new pg.Pool({ connectionString: db.url, max: 3 });
    const { lines: logged, logger } = capturedLog(['info', 'warn']);
    const vacuum = startQueueVacuum(pool, { tryLead: async () => true }, logger, TEST_COMPACTION);
    const holder = await pool.connect();
    try {
      const size = () => queueBytes(pool);
      // A backlog of 4,000 rows of 1 KB: several MB, more rows than a rewrite is tried for.
      const rows = kilobyteRows('c-compact', 4_000);
      await store.deliveries.add(rows);
      const big = await size();
      assert.ok(big >= 4 * 2 ** 20, `${big} bytes`);
      await sleep(500);
      assert.equal(await size(), big, 'not rewritten while it holds the backlog');
      // Worked off but for 10 rows, while a transaction holds a lock on the table: the rewrite gives up and waits.
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM deliveries LIMIT 1 FOR UPDATE');
      await store.deliveries.deleteMany(rows.slice(10).map((r) => r.queued!.id));
      await sleep(500);
      assert.equal(await size(), big, 'not rewritten while the table is locked');
      await holder.query('COMMIT');
      const deadline = Date.now() + 10_000;
      // The line is logged after the rewrite's size is read back: wait for both.
      while (((await size()) >= big / 4 || !logged.some((l) => l.level === 'info')) && Date.now() < deadline) await sleep(100);
      assert.ok((await size()) < big / 4, 'rewritten');
      const left = await pool.query<{ id: number }>('SELECT id FROM deliveries ORDER BY id');
      assert.deepEqual(left.rows.map((r) => Number(r.id)), rows.slice(0, 10).map((r) => r.queued!.id));
      assert.deepEqual(logged.filter((l) => l.level === 'warn'), []);
      const rewritten = logged.find((l) => l.level === 'info');
      assert.equal(rewritten?.fields.rows, 10);
      assert.ok((rewritten!.fields.bytesAfter as number) < big / 4);
    } finally {
      holder.release();
      await vacuum.stop();
      await pool.end();
      await store.close();
      await db.drop();
    }
  });

  it('a process whose database user does not own the queue says once that it cannot rewrite it', async () => {
    const db = await createTestDatabase();
    const store = await createPostgresStore(db.url, { poolSize: 2 });
    const role = `sc_reader_${process.pid}`;
    await store.pool.query(`CREATE ROLE ${role} LOGIN`);
    await store.pool.query(`GRANT SELECT ON deliveries TO ${role}`);
    const url = new URL(db.url);
    url.username = role;
    const pool = new pg.Pool({ connectionString: url.href, max: 2 });
    const { lines: logged, logger } = capturedLog(['info', 'warn']);
    let vacuum: { stop(): Promise<void> } | null = null;
    try {
      const rows = kilobyteRows('c-owner', 2_000);
      await store.deliveries.add(rows);
      await store.deliveries.deleteMany(rows.slice(10).map((r) => r.queued!.id));
      const big = await queueBytes(pool);
      vacuum = startQueueVacuum(pool, { tryLead: async () => true }, logger, TEST_COMPACTION);
      const deadline = Date.now() + 10_000;
      while (!logged.some((l) => l.level === 'warn') && Date.now() < deadline) await sleep(100);
      await sleep(500);
      assert.equal(await queueBytes(pool), big, 'not rewritten');
      assert.equal(logged.length, 1, JSON.stringify(logged));
      assert.equal(logged[0]!.level, 'warn');
      assert.equal(logged[0]!.fields.bytesAfter, big);
    } finally {
      await vacuum?.stop();
      await pool.end();
      await store.close();
      await db.drop();
    }
  });

  it('finds the connectors with rows due with one probe each, whatever their backlogs hold', async () => {
    const db = await createTestDatabase();
    const store = await createPostgresStore(db.url, { poolSize: 2 });
    const client = await store.pool.connect();
    try {
      const CONNECTORS = 32;
      const ROWS = 300;
      const add = async (from: number, to: number) => {
        for (let c = 0; c < CONNECTORS; c++) {
          await store.deliveries.add(Array.from({ length: to - from }, (_, i) => ({
            connectorId: `c-due-${String(c).padStart(2, '0')}`, eventId: `d${c}-${from + i}`, body: Buffer.from('{}'), enqueueTime: T0, dueTime: T0 + from + i,
          })));
        }
      };
      const now = T0 + ROWS;
      // The query of the function the store calls (migration 007), with the function's settings, planned both ways
      // PostgreSQL may plan it, under statistics of three kinds. A node that read the backlogs (9,600 rows due)
      // rather than a row or two per connector fails the check: without those settings, the probes were planned as a
      // semi join over every due row, a sequential scan each, or a bitmap scan and a sort of each connector's rows.
      const [fn] = (await client.query<{ src: string; config: string[] }>(
        "SELECT prosrc AS src, proconfig AS config FROM pg_proc WHERE proname = 'sensorcloud_connectors_with_due'")).rows;
      for (const setting of fn!.config) if (!setting.startsWith('plan_cache_mode=')) await client.query(`SET ${setting.replace('=', ' = ')}`);
      const query = /RETURN QUERY([\s\S]*);\s*END/.exec(fn!.src)![1]!;
      await client.query(`PREPARE due(bigint, bigint) AS ${query}`);
      const check = async (statistics: string) => {
        assert.equal((await store.deliveries.connectorsWithDue(now, 0)).length, CONNECTORS, statistics);
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          await client.query(`SET plan_cache_mode = ${mode}`);
          const [row] = (await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE due(${now}, 0)`)).rows;
          const most = mostRowsRead(row!['QUERY PLAN'][0]!.Plan);
          assert.ok(most <= 4 * CONNECTORS, `${statistics}, ${mode}: a plan node read ${most} rows`);
        }
      };
      // Statistics of a queue that held one other connector's backlog (10,000 rows), taken before it was worked off.
      await store.deliveries.add(Array.from({ length: 10_000 }, (_, i) => ({
        connectorId: 'c-due-backlog', eventId: `b${i}`, body: Buffer.from('{}'), enqueueTime: T0, dueTime: T0 + 10 * ROWS,
      })));
      await client.query('ANALYZE deliveries');
      await client.query("DELETE FROM deliveries WHERE connector_id = 'c-due-backlog'");
      await add(0, 1);
      await check('statistics of another connector\'s backlog');
      await client.query('ANALYZE deliveries');
      await add(1, ROWS);
      await check('statistics of one row per connector');
      await client.query('ANALYZE deliveries');
      await check('statistics of the whole queue');
    } finally {
      client.release();
      await store.close();
      await db.drop();
    }
  });
});

interface PlanNode { 'Actual Rows': number; 'Actual Loops': number; 'Rows Removed by Filter'?: number; Plans?: PlanNode[] }

/** The most rows any node of a plan produced or filtered out, over all its loops. */
function mostRowsRead(node: PlanNode): number {
  const own = (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'];
  return Math.max(own, ...(node.Plans ?? []).map(mostRowsRead));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The queue's rewrite, looked for every 100 ms from 1 MB. */
const TEST_COMPACTION = { everyMs: 100, minBytes: 2 ** 20, maxRows: 1_000, maxBytesPerRow: 8 * 1024 };

/** The queue table's size in bytes (its heap, as the rewrite measures it). */
async function queueBytes(pool: pg.Pool): Promise<number> {
  return Number((await pool.query<{ b: string }>("SELECT pg_relation_size('deliveries') AS b")).rows[0]!.b);
}

/** `n` due rows of the connector with 1 KB bodies. */
function kilobyteRows(connectorId: string, n: number): NewDelivery[] {
  return Array.from({ length: n }, (_, i) => ({ connectorId, eventId: `${connectorId}-${i}`, body: Buffer.alloc(1024, 120), enqueueTime: T0, dueTime: T0 }));
}
