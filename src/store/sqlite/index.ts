// The SQLite Store: one connection, one writer. Top-level calls wait while a transaction is open.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Repos, Store } from '../store.ts';
import { createInviteRepo, createKeyRepo, createServiceAccountRepo, createUserRepo } from './accounts.ts';
import { startCheckpointer, type CheckpointOptions } from './checkpointer.ts';
import { Lock, SqliteDb } from './db.ts';
import { createDeviceRepo } from './devices.ts';
import { createEventRepo } from './events.ts';
import { createConnectorMetricRepo } from './connector-metrics.ts';
import { createDataConnectorRepo } from './data-connectors.ts';
import { createDeliveryRepo } from './deliveries.ts';
import { createMembershipRepo } from './memberships.ts';
import { createOrganizationRepo, createProjectRepo } from './organizations.ts';

function createRepos(db: SqliteDb): Repos {
  return {
    organizations: createOrganizationRepo(db),
    projects: createProjectRepo(db),
    users: createUserRepo(db),
    serviceAccounts: createServiceAccountRepo(db),
    keys: createKeyRepo(db),
    memberships: createMembershipRepo(db),
    invites: createInviteRepo(db),
    devices: createDeviceRepo(db),
    events: createEventRepo(db),
    dataConnectors: createDataConnectorRepo(db),
    deliveries: createDeliveryRepo(db),
    connectorMetrics: createConnectorMetricRepo(db),
  };
}

/** Wraps every repository method so that it waits for an open transaction to finish first. */
function guarded(repos: Repos, lock: Lock): Repos {
  const out: Record<string, unknown> = {};
  for (const [name, repo] of Object.entries(repos)) {
    const wrapped: Record<string, unknown> = {};
    for (const [method, fn] of Object.entries(repo as Record<string, (...a: unknown[]) => Promise<unknown>>)) {
      wrapped[method] = async (...args: unknown[]) => {
        if (!lock.busy) return fn(...args);
        await lock.acquire();
        try {
          return await fn(...args);
        } finally {
          lock.release();
        }
      };
    }
    out[name] = wrapped;
  }
  return out as unknown as Repos;
}

/** Opens (creating if needed) the database file; ':memory:' gives a private in-memory store. */
export function createSqliteStore(file: string, options: { checkpoints?: CheckpointOptions } = {}): Store & { db: SqliteDb; checkpointRounds(): number } {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new SqliteDb(file);
  const lock = new Lock();
  const checkpointer = file === ':memory:' ? null : startCheckpointer(db.raw, file, lock, options.checkpoints);
  const txRepos = createRepos(db);

  // Group commit. Each COMMIT writes every page the transaction touched to the WAL; with several commits per
  // event that write was the largest single cost of the publish-to-delivery path. Transactions requested in
  // the same turn of the event loop run one after another inside one BEGIN … COMMIT, each in its own
  // SAVEPOINT: one that throws is rolled back alone, and every caller is answered only after the COMMIT.
  interface Queued { fn: (tx: Repos) => Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void }
  const queued: Queued[] = [];
  let scheduled = false;
  const MAX_BATCH = 64;

  async function runBatches(): Promise<void> {
    while (queued.length > 0) {
      await lock.acquire();
      const batch = queued.splice(0, MAX_BATCH);
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      try {
        db.raw.exec('BEGIN IMMEDIATE');
        for (const item of batch) {
          db.raw.exec('SAVEPOINT tx');
          try {
            const value = await item.fn(txRepos);
            db.raw.exec('RELEASE tx');
            outcomes.push({ ok: true, value });
          } catch (error) {
            // A cache may hold rows this transaction wrote and then undid.
            db.caches.clearAll();
            if (!db.raw.inTransaction) throw error; // SQLite aborted the whole transaction: nothing is kept
            db.raw.exec('ROLLBACK TO tx');
            db.raw.exec('RELEASE tx');
            outcomes.push({ ok: false, error });
          }
        }
        db.raw.exec('COMMIT');
      } catch (error) {
        if (db.raw.inTransaction) db.raw.exec('ROLLBACK');
        db.caches.clearAll();
        outcomes.length = 0;
        for (let i = 0; i < batch.length; i++) outcomes.push({ ok: false, error });
      } finally {
        lock.release();
      }
      batch.forEach((item, i) => {
        const o = outcomes[i]!;
        if (o.ok) item.resolve(o.value);
        else item.reject(o.error);
      });
    }
    scheduled = false;
  }

  return {
    kind: 'sqlite',
    db,
    authVersion: () => db.authWrites,
    checkpointRounds: () => checkpointer?.rounds ?? 0,
    ...guarded(txRepos, lock),
    transaction<T>(fn: (tx: Repos) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queued.push({ fn, resolve, reject } as Queued);
        if (!scheduled) {
          scheduled = true;
          // Start after this turn's I/O callbacks, so the transactions they request share one commit.
          setImmediate(runBatches);
        }
      });
    },
    async ping() {
      db.get('SELECT 1');
    },
    async close() {
      await checkpointer?.stop();
      await lock.acquire();
      db.close();
      lock.release();
    },
  };
}
