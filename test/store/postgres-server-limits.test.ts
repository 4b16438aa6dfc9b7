// PostgreSQL only: limits a server (or a hosted service) sets for the service's sessions.
// - statement_timeout and lock_timeout: the waits the service makes on purpose (a process starting while another
//   migrates the schema, the first start's bootstrap) are not cut by them; a request's statement that is cut
//   answers 503, keeps nothing, and the operator is told.
// - too few connections: a transaction that cannot have one answers 503 the same way.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ApiError } from '../../src/domain/errors.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import type { Repos } from '../../src/store/contract/store.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase, runAlone, testPostgresUrl } from '../helpers/postgres.ts';
import { device, event, organization, row, seedConnector, T0 } from './contract/fixtures.ts';
import { sleep } from '../helpers/until.ts';

/** The lock under which the schema is migrated (src/store/postgres/db.ts). */
const MIGRATION_LOCK = 7_140_219_001;

describe('postgres: a server with statement_timeout = 1s and lock_timeout = 300ms for every session', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const stores: PostgresStore[] = [];
  const { logger, lines: warnings } = capturedLog(['warn']);

  const session = async (): Promise<pg.Client> => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    return c;
  };
  const open = async () => {
    const s = await createPostgresStore(db.url, { poolSize: 3, logger });
    stores.push(s);
    return s;
  };

  before(async () => {
    db = await createTestDatabase({ statement_timeout: '1s', lock_timeout: '300ms' });
  });
  after(async () => {
    for (const s of stores) await s.close();
    await db?.drop();
  });

  it('a process starting while another holds the migration lock for 2.5 s waits for it, then starts', async () => {
    const other = await session();
    try {
      // The settings are in force: a plain session's wait for a lock is cut.
      const probe = await session();
      await other.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
      await assert.rejects(probe.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]), { code: '55P03' });
      await probe.end();

      const started = Date.now();
      const starting = open();
      setTimeout(() => void other.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]), 2_500);
      const store = await starting;
      assert.ok(Date.now() - started >= 2_400, 'it waited for the lock');
      assert.equal(await store.organizations.count(), 0);
      // The connection that waited is not given back to the pool without the server's limits.
      const { rows } = await store.pool.query<{ s: string; l: string }>(
        "SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l",
      );
      assert.deepEqual(rows, [{ s: '1s', l: '300ms' }]);
    } finally {
      await other.end();
    }
  });

  it('two processes bootstrapping at once: the second waits 1.5 s for the first, past both limits', async () => {
    const [a, b] = [await open(), await open()];
    const order: string[] = [];
    const first = a.cluster!.withLock('bootstrap', async () => {
      order.push('a in');
      await sleep(1_500);
      order.push('a out');
    });
    await sleep(100);
    const second = b.cluster!.withLock('bootstrap', async () => {
      order.push('b in');
    });
    await Promise.all([first, second]);
    assert.deepEqual(order, ['a in', 'a out', 'b in']);
  });

  it('a request whose statement waits on a lock past lock_timeout: 503, nothing kept, the operator told once', async () => {
    const store = await open();
    const blocker = await session();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE organizations IN ACCESS EXCLUSIVE MODE');
      warnings.length = 0;
      for (let i = 0; i < 3; i++) {
        const org = organization();
        await assert.rejects(
          store.transaction((t) => t.organizations.create(org)),
          (err: unknown) => {
            assert.ok(err instanceof ApiError, `an ApiError, not ${String(err)}`);
            assert.equal(err.status, 503);
            assert.match(
              err.message,
              /the database cancelled a statement that waited or ran too long; try again shortly/,
            );
            return true;
          },
        );
      }
      await assert.rejects(store.organizations.count(), { status: 503 });
      await blocker.query('ROLLBACK');
      const org = organization();
      await store.transaction((t) => t.organizations.create(org));
      assert.equal(await store.organizations.count(), 1, 'only the transaction after the lock went is kept');
      assert.equal(warnings.length, 1, warnings.map((w) => w.message).join('\n'));
      assert.match(
        warnings[0]!.message,
        /database: the server cancelled statements that waited or ran too long: requests answered 503, background work tried again.*statement_timeout or lock_timeout/,
      );
      assert.match(String(warnings[0]!.fields.reason), /lock timeout/);
    } finally {
      await blocker.end();
    }
  });

  it('a batch of publishes whose writes wait past lock_timeout: each answered 503 in the same words, none kept', async () => {
    const store = await open();
    const c = await seedConnector(store);
    const devices = [device(c.projectId), device(c.projectId)];
    for (const d of devices) await store.devices.create(d);
    const publish = (i: number) => {
      const d = devices[i % devices.length]!;
      return store.transaction(
        async (t: Repos) => {
          const e = event(d, T0 + i);
          await t.events.insert(e);
          await t.deliveries.add([row(c.id, T0 + i, { eventId: e.id })]);
          await t.devices.updateReported(d.id, { n: i }, { touch: [T0 + i, e.id] }, T0 + i);
          return e.id;
        },
        { rerunnable: true, devices: [d.id] },
      );
    };
    // First with the table free, so the process knows the devices' versions (a batch may then write unlocked).
    await Promise.all([0, 1].map(publish));
    const blocker = await session();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
      const results = await Promise.allSettled([2, 3, 4, 5].map(publish));
      for (const r of results) {
        assert.equal(r.status, 'rejected');
        assert.match(
          String((r as PromiseRejectedResult).reason),
          /the database cancelled a statement that waited or ran too long/,
        );
      }
      await blocker.query('ROLLBACK');
    } finally {
      await blocker.end();
    }
    const kept = await Promise.all(
      devices.map((d) =>
        store.events.listByDevice({ deviceId: d.id, eventTypes: [], startTime: 0, endTime: T0 * 2, limit: 10 }),
      ),
    );
    assert.deepEqual(
      kept.map((k) => k.length),
      [1, 1],
      'only the events published before the lock',
    );
    assert.equal((await store.deliveries.claim(c.id, T0 * 2, 0, T0 * 2, 10)).length, 2);
  });

  it('with lock_timeout off, the same wait cut by statement_timeout: 503 as well', async () => {
    await runAlone(db.url, `ALTER DATABASE ${new URL(db.url).pathname.slice(1)} RESET lock_timeout`);
    const store = await open();
    const before = await store.organizations.count();
    const blocker = await session();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE organizations IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      await assert.rejects(
        store.transaction((t) => t.organizations.create(organization())),
        { status: 503 },
      );
      assert.ok(Date.now() - started >= 900, 'cut by the 1 s statement_timeout');
      await blocker.query('ROLLBACK');
      assert.equal(await store.organizations.count(), before, 'nothing kept');
    } finally {
      await blocker.end();
    }
  });
});

describe('postgres: a user allowed 3 connections, a pool of 6', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const role = `sc_few_${process.pid}`;
  let store: PostgresStore | undefined;
  const { logger, lines: warnings } = capturedLog(['warn']);
  before(async () => {
    db = await createTestDatabase();
    await runAlone(db.url, `CREATE ROLE ${role} LOGIN CONNECTION LIMIT 3`);
    await runAlone(db.url, `ALTER DATABASE ${new URL(db.url).pathname.slice(1)} OWNER TO ${role}`);
  });
  after(async () => {
    await store?.close();
    await db?.drop();
    await runAlone(await testPostgresUrl(), `DROP ROLE IF EXISTS ${role}`);
  });

  it('transactions the server has no connection for: 503 in words that say so, the others kept, the operator told once', async () => {
    const url = new URL(db.url);
    url.username = role;
    store = await createPostgresStore(url.toString(), { poolSize: 6, logger });
    // The listening connection, opened now: with it, two are left for the pool.
    await store.cluster!.subscribe('probe', () => undefined);
    let go!: () => void;
    const held = new Promise<void>((r) => (go = r));
    const orgs = Array.from({ length: 5 }, () => organization());
    const settling = Promise.allSettled(
      orgs.map((org) =>
        store!.transaction(async (t) => {
          await t.organizations.create(org);
          await held;
        }),
      ),
    );
    await sleep(500);
    go();
    const settled = await settling;
    const refused = settled.filter((r) => r.status === 'rejected');
    assert.ok(refused.length >= 1 && refused.length < 5, `some refused, some kept (${refused.length} refused)`);
    for (const r of refused) {
      const err = (r as PromiseRejectedResult).reason;
      assert.ok(err instanceof ApiError && err.status === 503, String(err));
      assert.match(
        err.message,
        /the database lacks the resources to do this now \(connections or memory\); try again shortly/,
      );
    }
    const kept = [];
    for (const o of orgs) kept.push(await store.organizations.get(o.id)); // one at a time: two connections left
    assert.deepEqual(
      kept.map((k) => k !== null),
      settled.map((r) => r.status === 'fulfilled'),
      'exactly the transactions that answered are kept',
    );
    assert.equal(warnings.length, 1, warnings.map((w) => w.message).join('\n'));
    assert.match(
      warnings[0]!.message,
      /database: the server lacked the resources for work: requests answered 503, background work tried again.*max_connections \(this process: 6 \+ 1\)/,
    );
    assert.match(String(warnings[0]!.fields.reason), /too many connections/);
    await store.transaction((t) => t.organizations.create(organization()));
  });
});
