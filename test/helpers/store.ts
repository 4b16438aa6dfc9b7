// The store the service tests run on, chosen in one place, so the API, event, delivery and e2e suites can run on
// another backend with one switch: SENSORCLOUD_TEST_STORE=sqlite (the default; the only backend today). An
// unknown value fails every test that asks for a store, never falling back to SQLite. A new backend adds its
// kind here: createTestStore makes a new, empty database for the data dir (a throwaway server or schema), whose
// close() also removes it; reopenTestStore opens a second connection to it, as another process would.
import { join } from 'node:path';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import type { Store } from '../../src/store/store.ts';

export const TEST_STORE_KINDS = ['sqlite'] as const;
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
  }
}

/** Another store over the same database as createTestStore(dataDir) made: what a second process would see. */
export async function reopenTestStore(dataDir: string): Promise<Store> {
  switch (testStoreKind()) {
    case 'sqlite':
      return createSqliteStore(join(dataDir, 'sensorcloud.db'));
  }
}
