// A pool whose every connection stays taken: requests that wait longer than the connect timeout are answered 503
// (a moment's unavailability the client may retry), not 500, and the operator is told once a minute.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { ApiError } from '../../src/domain/errors.ts';
import { createPool, sqlOn } from '../../src/store/postgres/db.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase } from '../helpers/postgres.ts';

async function refusedBusy(promise: Promise<unknown>): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ApiError, `an ApiError, not ${String(err)}`);
    assert.equal(err.status, 503);
    assert.match(err.message, /no database connection came free in time; try again shortly/);
    return true;
  });
}

describe('postgres: a pool with no free connection', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  // libpq's connect_timeout counts 1 as 2 s: the shortest wait the URL can ask for.
  let url: string;
  before(async () => {
    db = await createTestDatabase();
    const u = new URL(db.url);
    u.searchParams.set('connect_timeout', '1');
    url = u.toString();
  });
  after(() => db.drop());

  it('answers a read that waited past the connect timeout with a 503, and warns once a minute with the count', async () => {
    const { logger, lines: warnings } = capturedLog(['warn']);
    let now = 1_000_000;
    const pool = createPool(url, { max: 1, logger, now: () => now });
    let held: pg.PoolClient | null = null;
    try {
      held = await pool.connect();
      const sql = sqlOn(pool);
      const started = Date.now();
      await Promise.all([refusedBusy(sql.query('SELECT 1')), refusedBusy(sql.run('SELECT 1'))]);
      assert.ok(Date.now() - started >= 1_900, 'waited for the connect timeout');
      assert.equal(warnings.length, 1, 'one warning for both waits');
      assert.deepEqual(warnings[0]!.fields, { waits: 1, poolSize: 1, timeoutSeconds: 2 });
      assert.match(warnings[0]!.message, /raise SENSORCLOUD_DATABASE_POOL_SIZE/);

      now += 59_000;
      await refusedBusy(sql.query('SELECT 1'));
      assert.equal(warnings.length, 1, 'no second warning within the minute');
      now += 2_000;
      await refusedBusy(sql.query('SELECT 1'));
      assert.equal(warnings.length, 2);
      assert.equal(warnings[1]!.fields.waits, 3, 'the waits not told, and this one');

      held.release();
      held = null;
      assert.deepEqual(await sql.query('SELECT 1 AS one'), [{ one: 1 }], 'a freed connection serves at once');
    } finally {
      held?.release();
      await pool.end();
    }
  });

  it('answers a transaction that waited past the connect timeout with a 503, and runs it once a connection is free', async () => {
    const { logger, lines: warnings } = capturedLog(['warn']);
    let store: PostgresStore | null = null;
    let held: pg.PoolClient | null = null;
    try {
      store = await createPostgresStore(url, { poolSize: 1, logger });
      held = await store.pool.connect();
      await refusedBusy(store.transaction((tx) => tx.organizations.count()));
      assert.equal(warnings.length, 1);
      held.release();
      held = null;
      assert.equal(await store.transaction((tx) => tx.organizations.count()), 0);
    } finally {
      held?.release();
      await store?.close();
    }
  });
});
