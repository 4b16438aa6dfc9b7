// PostgreSQL only: settings a server (or a hosted service) may give every session, which the service's own sessions
// turn back for themselves. idle_session_timeout: the cluster's LISTEN connection is idle by design and pooled
// connections wait idle between requests; neither may be ended for it. default_transaction_isolation: the queue's
// claims and the locking of device rows are built for READ COMMITTED. And one it cannot turn back: a server that
// accepts only reads for a while (a standby the URL leads to after a failover), whose sessions it must not keep.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres-server.ts';
import { until, sleep } from '../helpers/until.ts';
import { organization, row, seedConnector, T0 } from './contract/fixtures.ts';

describe('postgres: a server that ends idle sessions after 1 s', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const stores: PostgresStore[] = [];
  const { logger, lines } = capturedLog(['info', 'warn']);
  before(async () => {
    db = await createTestDatabase({ idle_session_timeout: '1s' });
  });
  after(async () => {
    for (const s of stores) await s.close();
    await db?.drop();
  });

  it('keeps the cluster connection and the pooled ones: messages arrive, requests answer, nothing is logged', async () => {
    const a = await createPostgresStore(db.url, { poolSize: 2, logger });
    stores.push(a);
    const b = await createPostgresStore(db.url, { poolSize: 2, logger });
    stores.push(b);
    const heard: string[] = [];
    await b.cluster!.subscribe('probe', (payload) => heard.push(payload));
    assert.equal(await a.organizations.count(), 0);
    assert.equal(await b.organizations.count(), 0);

    // A plain session of that database is ended: the setting is in force.
    const other = new pg.Client({ connectionString: db.url });
    let ended = false;
    other.on('error', () => (ended = true));
    await other.connect();

    await sleep(2_500);
    assert.ok(ended, 'a session left idle was ended by the server');
    await a.cluster!.publish('probe', ['after the idle time']);
    await until('the message on the listening connection', () => heard.length > 0, { timeoutMs: 5_000, everyMs: 20 });
    assert.deepEqual(heard, ['after the idle time'], 'the listening connection stayed open');
    assert.equal(await a.organizations.count(), 0, 'a pooled connection left idle still answers');
    assert.equal(await b.transaction((tx) => tx.organizations.count()), 0);
    assert.deepEqual(lines, [], 'no connection was lost');
  });
});

describe('postgres: a server whose sessions default to SERIALIZABLE', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const stores: PostgresStore[] = [];
  before(async () => {
    db = await createTestDatabase({ default_transaction_isolation: 'serializable' });
  });
  after(async () => {
    for (const s of stores) await s.close();
    await db?.drop();
  });

  it('runs its own at READ COMMITTED: two processes claiming one queue at once, each row claimed once, none refused', async () => {
    const a = await createPostgresStore(db.url, { poolSize: 4 });
    stores.push(a);
    const b = await createPostgresStore(db.url, { poolSize: 4 });
    stores.push(b);
    const plain = new pg.Client({ connectionString: db.url });
    await plain.connect();
    try {
      assert.equal(
        (await plain.query('SHOW transaction_isolation')).rows[0].transaction_isolation,
        'serializable',
        'the setting is in force',
      );
    } finally {
      await plain.end();
    }
    for (const s of [a, b]) {
      const { rows } = await s.pool.query<{ transaction_isolation: string }>('SHOW transaction_isolation');
      assert.deepEqual(rows, [{ transaction_isolation: 'read committed' }]);
    }

    const c = await seedConnector(a);
    const total = 400;
    await a.transaction((t) => t.deliveries.add(Array.from({ length: total }, (_, i) => row(c.id, T0 + i))));
    const cap = { max: 1_000, whileHanging: 1_000, hangingIfLeasedBefore: 0 };
    const claimed: number[] = [];
    // Four claimers per process, ten rows a claim, until the queue is empty.
    const claimer = async (s: PostgresStore) => {
      for (let round = 0; round < total; round++) {
        const got = await s.deliveries.claim(c.id, T0 + total, 0, T0 + 10 * total, 10, cap);
        if (got.length === 0) return;
        claimed.push(...got.map((d) => d.id));
      }
    };
    await Promise.all([a, b, a, b, a, b, a, b].map(claimer));
    assert.equal(claimed.length, total, 'every row claimed');
    assert.equal(new Set(claimed).size, total, 'none claimed twice');
  });
});

describe('postgres: a server that accepts only reads for a while', () => {
  // A server of its own: ALTER SYSTEM changes every database of it.
  let server: PostgresServer;
  let admin: pg.Client;
  let store: PostgresStore | undefined;
  const { logger, lines } = capturedLog(['warn']);
  before(async () => {
    server = await startPostgresServer();
    admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE DATABASE read_only_for_a_while');
  });
  after(async () => {
    await store?.close();
    await admin?.end();
    server?.stop();
  });

  const refusedAsReadOnly = (err: unknown) =>
    (err as { status?: number }).status === 503 && /accepts only reads/.test((err as Error).message);

  it('answers 503 while it does, keeps none of its sessions, and takes writes again by itself when the server does', async () => {
    const url = server.url.replace(/\/postgres$/, '/read_only_for_a_while');
    store = await createPostgresStore(url, { poolSize: 2, logger });
    const s = store;
    await s.organizations.create(organization());
    const heard: string[] = [];
    await s.cluster!.subscribe('probe', (payload) => heard.push(payload));
    const writes = () =>
      s.organizations.create(organization()).then(
        () => true,
        (err) => {
          if (refusedAsReadOnly(err)) return false;
          throw err;
        },
      );
    const healthy = () =>
      s.ping().then(
        () => true,
        () => false,
      );

    // The configuration reloaded with writes off: the open sessions take no writes.
    await admin.query('ALTER SYSTEM SET default_transaction_read_only = on');
    await admin.query('SELECT pg_reload_conf()');
    await until('a write refused as read-only', async () => !(await writes()));
    await assert.rejects(s.ping(), refusedAsReadOnly, '/healthz says 503, and why');
    await admin.query('ALTER SYSTEM RESET default_transaction_read_only');
    await admin.query('SELECT pg_reload_conf()');
    await until('writes taken again', writes);
    assert.equal(await healthy(), true);

    // A failover whose URL leads to a standby for a while: every session ended, the new ones read-only.
    await admin.query('ALTER DATABASE read_only_for_a_while SET default_transaction_read_only = on');
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'read_only_for_a_while'");
    // A pooled session ended before the pool heard of it answers 'the database is unreachable' (503) meanwhile.
    await until('a write refused as read-only', async () => {
      try {
        await s.organizations.create(organization());
      } catch (err) {
        if ((err as { status?: number }).status === 503) return refusedAsReadOnly(err);
      }
      throw new Error('a write passed, or failed otherwise than with a 503');
    });
    for (let i = 0; i < 5; i++) await assert.rejects(s.organizations.create(organization()), refusedAsReadOnly);
    assert.equal(await healthy(), false);
    // The cluster connection tries again every second, each session closed as soon as it is found read-only.
    await sleep(1_500);
    const { rows } = await admin.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = 'read_only_for_a_while' AND backend_start < now() - interval '1 second'",
    );
    assert.equal(rows[0].n, 0, 'no session of the read-only server is kept');
    // The URL leads to a server that takes writes again: the very next write passes, no restart.
    await admin.query('ALTER DATABASE read_only_for_a_while RESET default_transaction_read_only');
    assert.equal(await writes(), true);
    assert.equal(await healthy(), true);
    // The cluster connection is back too: a message published is heard.
    await until('a message heard on the cluster connection', async () => {
      await s.cluster!.publish('probe', ['back']);
      return heard.length > 0;
    });

    // Told once (at most once a minute), not at every refusal.
    const told = lines.filter((l) => /accepts only reads/.test(l.message));
    assert.equal(told.length, 1, JSON.stringify(lines));
    assert.match(told[0]!.message, /SENSORCLOUD_DATABASE_URL leads to a server that accepts writes/);
  });
});
