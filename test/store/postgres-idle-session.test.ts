// PostgreSQL only: a server that ends idle sessions (idle_session_timeout, set by some hosted services). The
// cluster's LISTEN connection is idle by design and pooled connections wait idle between requests; neither may be
// ended for it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { Logger } from '../../src/runtime/logger.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { createTestDatabase } from '../helpers/postgres.ts';

describe('postgres: a server that ends idle sessions after 1 s', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const stores: PostgresStore[] = [];
  const lines: string[] = [];
  const logger = {
    info: (_fields: unknown, message: string) => lines.push(message),
    warn: (_fields: unknown, message: string) => lines.push(message),
  } as unknown as Logger;
  before(async () => {
    db = await createTestDatabase();
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${new URL(db.url).pathname.slice(1)} SET idle_session_timeout = '1s'`);
    } finally {
      await admin.end();
    }
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
