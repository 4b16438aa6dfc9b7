// The SQLite Store: one connection, one writer. Top-level calls wait while a transaction is open.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Repos, Store } from '../store.ts';
import { createInviteRepo, createKeyRepo, createServiceAccountRepo, createUserRepo } from './accounts.ts';
import { startCheckpointer } from './checkpointer.ts';
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
export function createSqliteStore(file: string): Store & { db: SqliteDb } {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new SqliteDb(file);
  const checkpointer = file === ':memory:' ? null : startCheckpointer(db.raw, file);
  const lock = new Lock();
  const txRepos = createRepos(db);
  return {
    kind: 'sqlite',
    db,
    authVersion: () => db.authWrites,
    ...guarded(txRepos, lock),
    async transaction(fn) {
      await lock.acquire();
      try {
        db.raw.exec('BEGIN IMMEDIATE');
        try {
          const result = await fn(txRepos);
          db.raw.exec('COMMIT');
          return result;
        } catch (err) {
          if (db.raw.inTransaction) db.raw.exec('ROLLBACK');
          // A cache may hold rows this transaction wrote and then undid.
          db.caches.clearAll();
          throw err;
        }
      } finally {
        lock.release();
      }
    },
    async ping() {
      db.get('SELECT 1');
    },
    async close() {
      await lock.acquire();
      await checkpointer?.stop();
      db.close();
      lock.release();
    },
  };
}
