// PostgreSQL only: the schema's functions as src/store/postgres/functions/ holds them, one file per function, applied
// after the numbered migrations at every start (functions/README.md). Which functions a file defines is read from the
// catalog: the rows of pg_proc its statements rewrote (xmin, in a transaction of its own, rolled back).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import pg from 'pg';
import { functionFiles } from '../../src/store/postgres/db.ts';
import { createPostgresStore } from '../../src/store/postgres/index.ts';
import { migrationFiles } from '../../src/store/sql/migrations.ts';
import { createTestDatabase, runAlone } from '../helpers/postgres.ts';

const MIGRATIONS = join(import.meta.dirname, '../../src/store/postgres/migrations');

interface FunctionRow {
  signature: string;
  oid: string;
  definition: string;
}

// The schema's own functions (an extension's, such as pg_stat_statements's, are not the service's).
const FUNCTIONS = `SELECT p.oid::regprocedure::text AS signature, p.oid::text AS oid, pg_get_functiondef(p.oid) AS definition
  FROM pg_proc p
  WHERE p.pronamespace = current_schema()::regnamespace
    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
  ORDER BY 1`;
const TRIGGERS =
  'SELECT tgname, tgrelid::regclass::text AS "table", tgfoid::regprocedure::text AS function FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1';

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A new database migrated as a start does (the migrations, then the functions). */
async function migratedDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const db = await createTestDatabase();
  await (await createPostgresStore(db.url, { poolSize: 2 })).close();
  return db;
}

describe('postgres: the functions folder', () => {
  it('each function of a migrated database is defined by the file named after it, as the database holds it', async () => {
    const db = await migratedDatabase();
    try {
      await withClient(db.url, async (c) => {
        const held = (await c.query<FunctionRow>(FUNCTIONS)).rows;
        const defined = new Map<string, string>();
        for (const { file, sql } of functionFiles()) {
          await c.query('BEGIN');
          await c.query(sql);
          const touched = (
            await c.query<{ signature: string; name: string }>(
              'SELECT oid::regprocedure::text AS signature, proname AS name FROM pg_proc WHERE xmin = pg_current_xact_id()::xid',
            )
          ).rows;
          // Applied again inside this transaction: what it makes is what the database held.
          const after = (await c.query<FunctionRow>(FUNCTIONS)).rows;
          await c.query('ROLLBACK');
          assert.ok(touched.length > 0, `${file} defines no function`);
          for (const t of touched) {
            assert.equal(`${t.name}.sql`, file, `${file} defines ${t.signature}, which belongs in a file of its own`);
            assert.ok(
              !defined.has(t.signature),
              `${t.signature} is defined by ${defined.get(t.signature)} and ${file}`,
            );
            defined.set(t.signature, file);
          }
          assert.deepEqual(after, held, `${file} differs from what the database holds`);
        }
        const without = held.map((f) => f.signature).filter((s) => !defined.has(s));
        assert.deepEqual(without, [], 'functions of the database with no file in src/store/postgres/functions/');
      });
    } finally {
      await db.drop();
    }
  });

  it('the files define the functions the migrations create, and no other (nothing dropped comes back)', async () => {
    const alone = await createTestDatabase();
    const db = await migratedDatabase();
    try {
      for (const { file } of migrationFiles(MIGRATIONS)) {
        await runAlone(alone.url, `BEGIN; ${readFileSync(join(MIGRATIONS, file), 'utf8')}; COMMIT`);
      }
      const signatures = (url: string) =>
        withClient(url, async (c) => (await c.query<FunctionRow>(FUNCTIONS)).rows.map((f) => f.signature));
      const byMigrations = await signatures(alone.url);
      assert.ok(
        byMigrations.includes(
          'sensorcloud_claim_many(text[],text[],integer[],integer[],integer[],bigint[],integer,bigint,bigint,bigint,bigint[],text[])',
        ),
      );
      assert.ok(!byMigrations.some((s) => s.startsWith('sensorcloud_fresh(')), 'dropped by migration 006');
      assert.deepEqual(await signatures(db.url), byMigrations);
    } finally {
      await alone.drop();
      await db.drop();
    }
  });

  it('applied again at the next start, they change nothing: the same definitions and oids, the triggers on them', async () => {
    const db = await migratedDatabase();
    try {
      const state = () =>
        withClient(db.url, async (c) => ({
          functions: (await c.query(FUNCTIONS)).rows,
          triggers: (await c.query(TRIGGERS)).rows,
        }));
      const first = await state();
      assert.deepEqual(first.triggers.map((t) => `${t.table}: ${t.function}`).sort(), [
        'data_connectors: bump_config_version()',
        'memberships: bump_auth_version()',
        'projects: bump_config_version()',
        'rules: bump_config_version()',
        'service_account_keys: bump_auth_version()',
        'service_accounts: bump_auth_version()',
        'users: bump_auth_version()',
      ]);
      await (await createPostgresStore(db.url, { poolSize: 2 })).close();
      assert.deepEqual(await state(), first);
    } finally {
      await db.drop();
    }
  });

  it('on a schema a newer release upgraded: its functions are left as they are', async () => {
    const db = await migratedDatabase();
    try {
      // A newer release's body (same answers), with the migration it came with.
      const newer = `CREATE OR REPLACE FUNCTION bump_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE config_version SET value = value + 1; -- a newer release's
  RETURN NULL;
END $$`;
      await runAlone(db.url, `${newer}; INSERT INTO schema_migrations (version, applied_time) VALUES (999, 1)`);
      const body = () =>
        withClient(
          db.url,
          async (c) =>
            (await c.query<{ src: string }>("SELECT prosrc AS src FROM pg_proc WHERE proname = 'bump_config_version'"))
              .rows[0]!.src,
        );
      const before = await body();
      assert.match(before, /a newer release's/);
      await (await createPostgresStore(db.url, { poolSize: 2 })).close();
      assert.equal(await body(), before);
    } finally {
      await db.drop();
    }
  });
});
