// The store the service tests run on, chosen in one place, so the API, event, delivery and e2e suites can run on
// another backend with one switch: SENSORCLOUD_TEST_STORE=sqlite (the default) or postgres (a new database on
// the test server, test/helpers/postgres.ts). An unknown value fails every test that asks for a store, never
// falling back to SQLite. createTestStore makes a new, empty database for the data dir, whose close() also removes
// it; reopenTestStore opens a second connection to it, as another process would.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPostgresStore } from '../../src/store/postgres/index.ts';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import type { Repos, Store } from '../../src/store/contract/store.ts';
import { createTestDatabase } from './postgres.ts';

export const TEST_STORE_KINDS = ['sqlite', 'postgres'] as const;
export type TestStoreKind = (typeof TEST_STORE_KINDS)[number];

/** The backend SENSORCLOUD_TEST_STORE names; unset or empty means sqlite. Throws on any other value. */
export function testStoreKind(env: Record<string, string | undefined> = process.env): TestStoreKind {
  const value = env.SENSORCLOUD_TEST_STORE;
  if (value === undefined || value === '') return 'sqlite';
  if ((TEST_STORE_KINDS as readonly string[]).includes(value)) return value as TestStoreKind;
  throw new Error(`SENSORCLOUD_TEST_STORE=${value}: no such test store (known: ${TEST_STORE_KINDS.join(', ')})`);
}

/** A new, empty store for a test service whose data dir is `dataDir`, on the backend chosen above. */
export async function createTestStore(dataDir: string): Promise<Store> {
  switch (testStoreKind()) {
    case 'sqlite':
      return createSqliteStore(join(dataDir, 'sensorcloud.db'));
    case 'postgres':
      return createPostgresTestStore(dataDir);
  }
}

/**
 * createTestStore, with the repositories of each transaction passed through `wrap` first: a test watches a method
 * there, or makes it fail (calls outside transactions are left alone).
 */
export function createTestStoreWrapping(wrap: (tx: Repos) => Repos): (dataDir: string) => Promise<Store> {
  return async (dataDir) => {
    const inner = await createTestStore(dataDir);
    return {
      ...inner,
      close: () => inner.close(),
      transaction: (fn, options) => inner.transaction((tx) => fn(wrap(tx)), options),
    };
  };
}

/** A new, empty PostgreSQL store for the data dir, whatever the test store is (tests of the shared store alone). */
export async function createPostgresTestStore(dataDir: string): Promise<Store> {
  const db = await createTestDatabase();
  // Where reopenTestStore and a `serve` process of the test find it (SENSORCLOUD_DATABASE_URL).
  writeFileSync(join(dataDir, 'postgres-url'), db.url);
  return openPostgres(db.url, db.drop);
}

/** The database URL of the test store made for this data dir (postgres), for a `serve` process of the test. */
export function testDatabaseUrl(dataDir: string): string | null {
  return testStoreKind() === 'postgres' ? readFileSync(join(dataDir, 'postgres-url'), 'utf8') : null;
}

async function openPostgres(url: string, drop?: () => Promise<void>): Promise<Store> {
  const store = await createPostgresStore(url, { poolSize: 8 });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await drop?.();
  };
  return store;
}

/** Another store over the same database as createTestStore(dataDir) made: what a second process would see. */
export async function reopenTestStore(dataDir: string): Promise<Store> {
  switch (testStoreKind()) {
    case 'sqlite':
      return createSqliteStore(join(dataDir, 'sensorcloud.db'));
    case 'postgres':
      return openPostgres(readFileSync(join(dataDir, 'postgres-url'), 'utf8'));
  }
}
