// How the shared part of the Store contract gets its stores: a new, empty database, and on it one store per process
// that shares it (each with connections of its own, as separate processes have). Written against the Store
// interface only: a backend says how to make such a database and open a store on it (OpenSharedStore).
import { after, before } from 'node:test';
import type { Store } from '../../../../src/store/contract/store.ts';

/** A new, empty database of a store several processes share. */
export interface SharedDatabase {
  /** Opens one more process's store on the database. */
  open(): Promise<Store>;
  /** Removes the database; called once every store opened on it is closed. */
  drop(): Promise<void>;
}

/** Makes a new, empty shared database at each call (PostgreSQL: a new database of the test server). */
export type OpenSharedStore = () => Promise<SharedDatabase>;

/** The stores of one shared database: each open() is another process's, closed (if still open) at the end. */
interface Processes {
  open(): Promise<Store>;
  closeAll(): Promise<void>;
}

async function processesOf(openShared: OpenSharedStore): Promise<Processes> {
  const db = await openShared();
  const opened: Store[] = [];
  return {
    async open() {
      // One at a time: the first may create the schema.
      const store = await db.open();
      // A test may close a store (a process that stops) before the end: closing it again does nothing.
      const close = store.close.bind(store);
      let closing: Promise<void> | null = null;
      store.close = () => (closing ??= close());
      opened.push(store);
      return store;
    },
    async closeAll() {
      await Promise.all(opened.map((s) => s.close()));
      await db.drop();
    },
  };
}

/**
 * `count` processes' stores on one shared database for the tests of a describe block, opened before them and closed
 * after; `another()` opens one more on the same database (a process a test may stop).
 */
export function useSharedStores(
  openShared: OpenSharedStore,
  count = 2,
): { stores: () => Store[]; another: () => Promise<Store> } {
  let processes: Processes | null = null;
  const stores: Store[] = [];
  before(async () => {
    processes = await processesOf(openShared);
    for (let i = 0; i < count; i++) stores.push(await processes.open());
  });
  after(() => processes?.closeAll());
  return {
    stores: () => {
      if (stores.length < count) throw new Error('the stores are opened in before()');
      return stores;
    },
    another: () => {
      if (!processes) throw new Error('the database is made in before()');
      return processes.open();
    },
  };
}

/** Runs fn on a shared database of its own, for promises about everything on it (every connection, say). */
export async function withSharedDatabase<T>(
  openShared: OpenSharedStore,
  fn: (open: () => Promise<Store>) => Promise<T>,
): Promise<T> {
  const processes = await processesOf(openShared);
  try {
    return await fn(() => processes.open());
  } finally {
    await processes.closeAll();
  }
}
