// This machine's clock against the database server's: processes of a cluster compare the times they write (a lease's
// end), so a start whose clock is far off is refused, a smaller difference is a warning, and a clock that drifts
// later is warned of at the next minute's check until it agrees again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { clockDifferenceMs, startClockWatch } from '../../src/store/postgres/operations/clock-check.ts';
import { createPostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { sleep } from '../helpers/until.ts';

describe("postgres: this machine's clock against the database server's", () => {
  it('a start 30 s ahead or behind is refused, naming how far and what to do, before any table is made', async () => {
    const db = await createTestDatabase();
    try {
      for (const [offset, words] of [
        [30_000, '30.0 s ahead of'],
        [-30_000, '30.0 s behind'],
      ] as const) {
        await assert.rejects(
          createPostgresStore(db.url, { poolSize: 2, machineClock: () => Date.now() + offset }),
          (err: Error & { code?: string }) => {
            assert.equal(err.code, 'CLOCK');
            assert.equal(
              err.message,
              `this machine's clock is ${words} the database server's: the cluster's processes compare the times they write (the end of a row's lease among them), and with clocks this far apart a row still being pushed looks free to another process; set the clock that is wrong right (NTP), this machine's or the database server's, and start again`,
            );
            return true;
          },
        );
      }
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      const { rows } = await c
        .query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")
        .finally(() => c.end());
      assert.equal(rows[0]!.n, 0);
    } finally {
      await db.drop();
    }
  });

  it('a start 3 s ahead is told once as a warning; a clock in agreement is not', async () => {
    const db = await createTestDatabase();
    try {
      const off = capturedLog(['info', 'warn']);
      const store = await createPostgresStore(db.url, {
        poolSize: 2,
        logger: off.logger,
        machineClock: () => Date.now() + 3_000,
      });
      await store.close();
      const warnings = off.lines.filter((l) => l.level === 'warn');
      assert.equal(warnings.length, 1, JSON.stringify(off.lines));
      assert.equal(
        warnings[0]!.message,
        "database: this machine's clock is 3.0 s ahead of the database server's; keep every machine's clock in sync (NTP), the database server's included",
      );
      assert.ok(
        Math.abs((warnings[0]!.fields.differenceMs as number) - 3_000) < 500,
        JSON.stringify(warnings[0]!.fields),
      );

      const right = capturedLog(['info', 'warn']);
      await (await createPostgresStore(db.url, { poolSize: 2, logger: right.logger })).close();
      assert.deepEqual(
        right.lines.filter((l) => /clock/.test(l.message)),
        [],
      );
    } finally {
      await db.drop();
    }
  });

  it('a clock that drifts later is warned of at each check while it is off, and its return is one info line', async () => {
    const db = await createTestDatabase();
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    let offset = 0;
    const { logger, lines } = capturedLog(['info', 'warn']);
    const watch = startClockWatch(pool, logger, () => Date.now() + offset, 50);
    try {
      assert.ok(Math.abs(await clockDifferenceMs(pool, Date.now)) < 1_000, 'the same machine: no difference');
      await sleep(300);
      assert.equal(lines.length, 0, `nothing while the clocks agree: ${JSON.stringify(lines)}`);
      offset = -5_000;
      while (lines.filter((l) => l.level === 'warn').length < 2) await sleep(20);
      offset = 0;
      while (!lines.some((l) => l.level === 'info')) await sleep(20);
      await sleep(200);
      const warnings = lines.filter((l) => l.level === 'warn');
      assert.match(
        warnings[0]!.message,
        /^database: this machine's clock is 5\.0 s behind the database server's; the cluster's processes compare the times they write \(leases, retries\), so a row may be pushed twice or wait longer: keep every machine's clock in sync \(NTP\), the database server's included$/,
      );
      assert.equal(lines.at(-1)!.message, "database: this machine's clock agrees with the database server's again");
      assert.equal(lines.filter((l) => l.level === 'info').length, 1, 'told once');
    } finally {
      watch.stop();
      await pool.end();
      await db.drop();
    }
  });
});
