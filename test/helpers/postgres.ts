// PostgreSQL for the tests: the server `npm test` started for the whole run (SENSORCLOUD_TEST_PG_URL, see
// scripts/test.ts), or one started by this test process on first use; and a new, empty database per store.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startPostgresServer } from './postgres-server.ts';

let server: Promise<string> | null = null;

/** The admin URL of the test server (a superuser on its maintenance database). */
export function testPostgresUrl(): Promise<string> {
  server ??= process.env.SENSORCLOUD_TEST_PG_URL
    ? Promise.resolve(process.env.SENSORCLOUD_TEST_PG_URL)
    : startPostgresServer().then((s) => s.url);
  return server;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: await testPostgresUrl() });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A database URL with the database name replaced. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Creates a new, empty database, with settings its sessions get (ALTER DATABASE … SET, as an operator may set them);
 * returns its URL and a function that drops it (closing what is still connected).
 */
export async function createTestDatabase(
  settings: Record<string, string> = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `sc_test_${randomBytes(6).toString('hex')}`;
  await admin(async (c) => {
    await c.query(`CREATE DATABASE ${name}`);
    for (const [setting, value] of Object.entries(settings))
      await c.query(`ALTER DATABASE ${name} SET ${setting} = '${value}'`);
  });
  return {
    url: withDatabase(await testPostgresUrl(), name),
    drop: () =>
      admin(async (c) => {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }),
  };
}

/** One statement (or several, in one string) on a session of its own. */
export async function runAlone(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
