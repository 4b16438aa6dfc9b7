// PostgreSQL only: settings a server (or a hosted service) may give every session, which the service's own sessions
// turn back for themselves. idle_session_timeout: the cluster's LISTEN connection is idle by design and pooled
// connections wait idle between requests; neither may be ended for it. default_transaction_isolation: the queue's
// claims and the locking of device rows are built for READ COMMITTED.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { row, seedConnector, T0 } from './contract/fixtures.ts';

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

    await new Promise((r) => setTimeout(r, 2_500));
    assert.ok(ended, 'a session left idle was ended by the server');
    await a.cluster!.publish('probe', ['after the idle time']);
    const deadline = Date.now() + 5_000;
    while (heard.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
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
      assert.equal((await plain.query('SHOW transaction_isolation')).rows[0].transaction_isolation, 'serializable', 'the setting is in force');
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
