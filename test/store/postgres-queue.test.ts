// PostgreSQL only: what the delivery queue's promises to several processes (the Store contract's shared part,
// test/store/contract/shared/queue.ts) rest on here: the claim locks a leased write skips, the plans of the due
// connectors' read, the vacuum and the rewrite of the queue table. The queue has no foreign keys, so no organization
// or project is needed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NewDelivery } from '../../src/store/contract/connector-repos.ts';
import { createPostgresStore } from '../../src/store/postgres/index.ts';
import { startQueueVacuum } from '../../src/store/postgres/operations/queue-vacuum.ts';
import pg from 'pg';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { sleep, until } from '../helpers/until.ts';

const T0 = 1_748_779_200_000_000;
const MINUTE = 60_000_000;

describe("postgres: the queue's claim locks, plans and upkeep", () => {
  it('rows asking for a lease of a connector with rows due are queued due without waiting for its claim lock', async () => {
    const db = await createTestDatabase();
    const store = await createPostgresStore(db.url, { poolSize: 4 });
    const now = T0 + 1;
    const cap = { max: 10, whileHanging: 2, hangingIfLeasedBefore: now };
    const leased = (connectorId: string): NewDelivery => ({
      connectorId,
      eventId: `x-${connectorId}`,
      body: Buffer.from('{}'),
      enqueueTime: now,
      dueTime: now + MINUTE,
      leaseUntil: now + MINUTE,
      leaseIf: { cap, enqueuedAfter: T0 - MINUTE },
    });
    await store.deliveries.insert([
      { connectorId: 'c-behind', eventId: 'old', body: Buffer.from('{}'), enqueueTime: now, dueTime: now },
    ]);
    // Another session holds both connectors' claim locks, as a claim or an event batch of another process does.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        "SELECT pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || id, 0)) FROM unnest(ARRAY['c-behind', 'c-free']) AS id",
      );
      const behind = leased('c-behind');
      const first = store.transaction((tx) => tx.deliveries.add([behind]), { rerunnable: true }).then(() => 'written');
      const waited = new Promise((resolve) => setTimeout(resolve, 2_000, 'waited for the lock'));
      assert.equal(await Promise.race([first, waited]), 'written');
      assert.equal(behind.queued!.leased, false, 'queued due behind the row due');
      const free = leased('c-free');
      let written = false;
      const waiting = store
        .transaction((tx) => tx.deliveries.add([free]), { rerunnable: true })
        .then(() => {
          written = true;
        });
      await sleep(200);
      assert.equal(written, false, 'a connector with nothing due is counted under its lock');
      await holder.query('COMMIT');
      await Promise.all([first, waiting]);
      assert.equal(free.queued!.leased, true);
    } finally {
      await holder.end();
      await store.close();
      await db.drop();
    }
  });

  it('the process leading the job vacuums the queue once it holds enough dead rows', async () => {
    const db = await createTestDatabase();
    const store = await createPostgresStore(db.url, { poolSize: 2 });
    try {
      const vacuums = async () => {
        const [r] = await store.pool
          .query<{ n: number }>("SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relname = 'deliveries'")
          .then((x) => x.rows);
        return r!.n;
      };
      assert.equal(await vacuums(), 0);
      // Autovacuum off for this table: in the full suite the server has run for minutes and autovacuum visits each
      // database in turn; when it cleared the dead rows first (or held the table: the job's VACUUM skips a locked
      // one), the job had nothing left to do and vacuum_count, which counts only manual vacuums, stayed 0.
      await store.pool.query('ALTER TABLE deliveries SET (autovacuum_enabled = false)');
      const rows: NewDelivery[] = Array.from({ length: 1_000 }, (_, i) => ({
        connectorId: 'c-vacuum',
        eventId: `v${i}`,
        body: Buffer.from('{}'),
        enqueueTime: T0,
        dueTime: T0,
      }));
      await store.deliveries.add(rows);
      await store.deliveries.deleteMany(rows.map((r) => r.queued!.id));
      // The dead rows reach pg_stat_user_tables when the deleting backend flushes its statistics (within a second
      // when idle, later on a loaded server).
      await until('a vacuum', async () => (await vacuums()) > 0, { everyMs: 100, timeoutMs: 30_000 });
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
      // The line is logged after the rewrite's size is read back: wait for both.
      await until(
        'the rewrite and its line',
        async () => (await size()) < big / 4 && logged.some((l) => l.level === 'info'),
        { everyMs: 100 },
      );
      const left = await pool.query<{ id: number }>('SELECT id FROM deliveries ORDER BY id');
      assert.deepEqual(
        left.rows.map((r) => Number(r.id)),
        rows.slice(0, 10).map((r) => r.queued!.id),
      );
      assert.deepEqual(
        logged.filter((l) => l.level === 'warn'),
        [],
      );
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
      await until('the warning', () => logged.some((l) => l.level === 'warn'), { everyMs: 100 });
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
          await store.deliveries.add(
            Array.from({ length: to - from }, (_, i) => ({
              connectorId: `c-due-${String(c).padStart(2, '0')}`,
              eventId: `d${c}-${from + i}`,
              body: Buffer.from('{}'),
              enqueueTime: T0,
              dueTime: T0 + from + i,
            })),
          );
        }
      };
      const now = T0 + ROWS;
      // The query of the function the store calls (migration 007), with the function's settings, planned both ways
      // PostgreSQL may plan it, under statistics of three kinds. A node that read the backlogs (9,600 rows due)
      // rather than a row or two per connector fails the check: without those settings, the probes were planned as a
      // semi join over every due row, a sequential scan each, or a bitmap scan and a sort of each connector's rows.
      const [fn] = (
        await client.query<{ src: string; config: string[] }>(
          "SELECT prosrc AS src, proconfig AS config FROM pg_proc WHERE proname = 'sensorcloud_connectors_with_due'",
        )
      ).rows;
      for (const setting of fn!.config)
        if (!setting.startsWith('plan_cache_mode=')) await client.query(`SET ${setting.replace('=', ' = ')}`);
      const query = /RETURN QUERY([\s\S]*);\s*END/.exec(fn!.src)![1]!;
      await client.query(`PREPARE due(bigint, bigint) AS ${query}`);
      const check = async (statistics: string) => {
        assert.equal((await store.deliveries.connectorsWithDue(now, 0)).length, CONNECTORS, statistics);
        for (const mode of ['force_custom_plan', 'force_generic_plan']) {
          await client.query(`SET plan_cache_mode = ${mode}`);
          const [row] = (
            await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
              `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE due(${now}, 0)`,
            )
          ).rows;
          const most = mostRowsRead(row!['QUERY PLAN'][0]!.Plan);
          assert.ok(most <= 4 * CONNECTORS, `${statistics}, ${mode}: a plan node read ${most} rows`);
        }
      };
      // Statistics of a queue that held one other connector's backlog (10,000 rows), taken before it was worked off.
      await store.deliveries.add(
        Array.from({ length: 10_000 }, (_, i) => ({
          connectorId: 'c-due-backlog',
          eventId: `b${i}`,
          body: Buffer.from('{}'),
          enqueueTime: T0,
          dueTime: T0 + 10 * ROWS,
        })),
      );
      await client.query('ANALYZE deliveries');
      await client.query("DELETE FROM deliveries WHERE connector_id = 'c-due-backlog'");
      await add(0, 1);
      await check("statistics of another connector's backlog");
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

interface PlanNode {
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** The most rows any node of a plan produced or filtered out, over all its loops. */
function mostRowsRead(node: PlanNode): number {
  const own = (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'];
  return Math.max(own, ...(node.Plans ?? []).map(mostRowsRead));
}

/** The queue's rewrite, looked for every 100 ms from 1 MB. */
const TEST_COMPACTION = { everyMs: 100, minBytes: 2 ** 20, maxRows: 1_000, maxBytesPerRow: 8 * 1024 };

/** The queue table's size in bytes (its heap, as the rewrite measures it). */
async function queueBytes(pool: pg.Pool): Promise<number> {
  return Number((await pool.query<{ b: string }>("SELECT pg_relation_size('deliveries') AS b")).rows[0]!.b);
}

/** `n` due rows of the connector with 1 KB bodies. */
function kilobyteRows(connectorId: string, n: number): NewDelivery[] {
  return Array.from({ length: n }, (_, i) => ({
    connectorId,
    eventId: `${connectorId}-${i}`,
    body: Buffer.alloc(1024, 120),
    enqueueTime: T0,
    dueTime: T0,
  }));
}
