// PostgreSQL only: the schema's migrations, applied once per database. A database a newer release upgraded (a
// process of the release before restarted during a rolling upgrade, or a cluster taken back a release) is served
// with a warning, since each migration keeps the release before it working; SQLite refuses instead
// (test/operator/startup.test.ts), one process owning its database.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase, runAlone } from '../helpers/postgres.ts';
import { organization } from './contract/fixtures.ts';

describe('postgres: schema migrations', () => {
  it('on a schema with migrations this release does not have: one warning naming them, then it serves, applying nothing', async () => {
    const db = await createTestDatabase();
    try {
      const first = await createPostgresStore(db.url, { poolSize: 2 });
      await first.close();
      await runAlone(db.url, 'INSERT INTO schema_migrations (version, applied_time) VALUES (998, 1), (999, 2)');
      const { logger, lines } = capturedLog(['info', 'warn']);
      const store = await createPostgresStore(db.url, { poolSize: 2, logger });
      try {
        const told = lines.filter((l) => /schema|migration/.test(l.message));
        assert.deepEqual(
          told.map((l) => [l.level, l.fields.migrations]),
          [['warn', [998, 999]]],
        );
        assert.match(told[0]!.message, /newer release upgraded the schema.*upgrade it$/);
        const org = organization();
        await store.organizations.create(org);
        assert.equal((await store.organizations.get(org.id))?.displayName, org.displayName);
      } finally {
        await store.close();
      }
    } finally {
      await db.drop();
    }
  });

  it('on its own schema: nothing said', async () => {
    const db = await createTestDatabase();
    try {
      await (await createPostgresStore(db.url, { poolSize: 2 })).close();
      const { logger, lines } = capturedLog(['info', 'warn']);
      await (await createPostgresStore(db.url, { poolSize: 2, logger })).close();
      assert.deepEqual(
        lines.filter((l) => /schema|migration/.test(l.message)),
        [],
      );
    } finally {
      await db.drop();
    }
  });
});
