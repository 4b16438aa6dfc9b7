// The SQLite Store: one connection, one writer. Top-level calls wait while a transaction is open.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { unavailable } from '../../domain/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { createPrivateFile, makePrivate } from '../operations/private-file.ts';
import type { Repos, Store, TransactionOptions } from '../contract/store.ts';
import {
  createAssertionIdRepo,
  createInviteRepo,
  createKeyRepo,
  createServiceAccountRepo,
  createUserRepo,
} from './repos/accounts.ts';
import { startCheckpointer, type CheckpointOptions } from './operations/checkpointer.ts';
import { Lock, SqliteDb } from './db.ts';
import { createDeviceRepo } from './repos/devices.ts';
import { createEventRepo } from './repos/events.ts';
import { createConnectorMetricRepo } from './repos/connector-metrics.ts';
import { createDataConnectorRepo } from './repos/data-connectors.ts';
import { createDeliveryRepo } from './repos/deliveries.ts';
import { createDeliveryLogRepo } from './repos/delivery-log.ts';
import { createMembershipRepo } from './repos/memberships.ts';
import { createOrganizationRepo, createProjectRepo } from './repos/organizations.ts';
import { createSealedRepo } from './repos/sealed.ts';
import { createRuleRepo } from './repos/rules.ts';
import { createContactRepo } from './repos/contacts.ts';
import { createAlertRepo, createConditionRepo, createOutboxRepo } from './repos/alerts.ts';

function createRepos(db: SqliteDb): Repos {
  const connectorMetrics = createConnectorMetricRepo(db);
  return {
    organizations: createOrganizationRepo(db),
    projects: createProjectRepo(db),
    users: createUserRepo(db),
    serviceAccounts: createServiceAccountRepo(db),
    keys: createKeyRepo(db),
    memberships: createMembershipRepo(db),
    invites: createInviteRepo(db),
    assertionIds: createAssertionIdRepo(db),
    devices: createDeviceRepo(db),
    events: createEventRepo(db),
    dataConnectors: createDataConnectorRepo(db),
    deliveries: createDeliveryRepo(db, connectorMetrics),
    deliveryLog: createDeliveryLogRepo(db),
    connectorMetrics,
    sealed: createSealedRepo(db),
    rules: createRuleRepo(db),
    contacts: createContactRepo(db),
    alerts: createAlertRepo(db),
    conditions: createConditionRepo(db),
    outbox: createOutboxRepo(db),
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
export function createSqliteStore(
  file: string,
  options: { checkpoints?: CheckpointOptions; logger?: Pick<Logger, 'info' | 'warn'>; now?: () => number } = {},
): Store & { db: SqliteDb; checkpointRounds(): number } {
  if (file !== ':memory:') {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // Created 0600 before SQLite opens it, so the -wal and -shm files SQLite makes get 0600 too.
    createPrivateFile(file);
    makePrivate(`${file}-wal`, `${file}-shm`);
  }
  const db = new SqliteDb(file, options.logger, options.now);
  const lock = new Lock();
  const checkpointer = file === ':memory:' ? null : startCheckpointer(db.raw, file, lock, options.checkpoints);
  const txRepos = createRepos(db);

  // Group commit. Each COMMIT writes every page the transaction touched to the WAL; with several commits per
  // event that write was the largest single cost of the publish-to-delivery path. Transactions requested in
  // the same turn of the event loop run one after another inside one BEGIN … COMMIT, each in its own
  // SAVEPOINT: one that throws is rolled back alone, and every caller is answered only after the COMMIT.
  // A savepoint copies every page it changes to a sub-journal first (and SQLite moves that journal to a
  // temporary file past 64 KiB); at saturation that cost ~8 % of the main thread's CPU per event. So
  // transactions that may be run again (TransactionOptions.rerunnable: the event pipeline's) go first, bare
  // (all were requested in the same turn and no caller has seen another's result, so their order is free).
  // One that throws before writing has nothing to undo. One that throws after writing can only be undone with
  // everything before it: the whole transaction is rolled back, it fails, and the bare ones that had succeeded
  // are queued again, with the rest of the batch, to run in savepoints.
  interface Queued {
    fn: (tx: Repos) => Promise<unknown>;
    resolve: (v: unknown) => void;
    reject: (e: unknown) => void;
    bare: boolean;
  }
  type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
  const queued: Queued[] = [];
  let scheduled = false;
  const MAX_BATCH = 64;

  async function runBatches(): Promise<void> {
    while (queued.length > 0) {
      await lock.acquire();
      const taken = queued.splice(0, MAX_BATCH);
      const batch = [...taken.filter((q) => q.bare), ...taken.filter((q) => !q.bare)];
      const outcomes = new Map<Queued, Outcome>();
      let again: Queued[] = [];
      try {
        db.raw.exec('BEGIN IMMEDIATE');
        for (let i = 0; i < batch.length; i++) {
          const item = batch[i]!;
          const writes = db.writes;
          if (!item.bare) db.raw.exec('SAVEPOINT tx');
          try {
            const value = await item.fn(txRepos);
            if (!item.bare) db.raw.exec('RELEASE tx');
            outcomes.set(item, { ok: true, value });
          } catch (thrown) {
            const error = db.refusal(thrown);
            // A cache may hold rows this transaction wrote and then undid.
            db.caches.clearAll();
            if (!db.raw.inTransaction) throw error; // SQLite aborted the whole transaction: nothing is kept
            outcomes.set(item, { ok: false, error });
            if (!item.bare) {
              db.raw.exec('ROLLBACK TO tx');
              db.raw.exec('RELEASE tx');
            } else if (db.writes !== writes) {
              db.raw.exec('ROLLBACK');
              again = batch.filter((q, j) => j > i || outcomes.get(q)?.ok === true);
              for (const q of again) {
                outcomes.delete(q);
                q.bare = false;
              }
              break;
            }
          }
        }
        if (db.raw.inTransaction) {
          db.raw.exec('COMMIT');
          db.committed();
        }
      } catch (thrown) {
        const error = db.refusal(thrown);
        if (db.raw.inTransaction) db.raw.exec('ROLLBACK');
        db.caches.clearAll();
        again = [];
        for (const item of batch) outcomes.set(item, { ok: false, error });
      } finally {
        lock.release();
      }
      queued.unshift(...again);
      for (const item of batch) {
        const o = outcomes.get(item);
        if (o === undefined) continue; // queued again
        if (o.ok) item.resolve(o.value);
        else item.reject(o.error);
      }
    }
    scheduled = false;
  }

  return {
    exclusive: true,
    cluster: null,
    db,
    authVersion: () => db.authWrites,
    checkpointRounds: () => checkpointer?.rounds ?? 0,
    ...guarded(txRepos, lock),
    transaction<T>(fn: (tx: Repos) => Promise<T>, options?: TransactionOptions): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queued.push({ fn, resolve, reject, bare: options?.rerunnable === true } as Queued);
        if (!scheduled) {
          scheduled = true;
          // Start after this turn's I/O callbacks, so the transactions they request share one commit.
          setImmediate(runBatches);
        }
      });
    },
    async ping() {
      if (db.full) throw unavailable('the disk that holds the database is full');
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
