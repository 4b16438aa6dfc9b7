// The PostgreSQL Store, shared by several processes: a connection pool, one connection per transaction, and one
// read cache, of projects and active connectors, checked against a version every process's writes move
// (config-cache.ts; see docs/architecture.md). Not exclusive: a delivery lease ends only when its time is up.
import type pg from 'pg';
import type { Logger } from '../../runtime/logger.ts';
import type { Repos, Store, TransactionOptions } from '../store.ts';
import { createInviteRepo, createKeyRepo, createServiceAccountRepo, createUserRepo } from './accounts.ts';
import { createPostgresCluster } from './cluster.ts';
import { createConnectorMetricRepo } from './connector-metrics.ts';
import { ConfigCache, type ConfigView } from './config-cache.ts';
import { createDataConnectorRepo } from './data-connectors.ts';
import { createPool, isConnectionError, migrate, sqlOn, unreachable, type Sql } from './db.ts';
import { createDeliveryRepo } from './deliveries.ts';
import { createDeviceRepo } from './devices.ts';
import { createEventRepo } from './events.ts';
import { createMembershipRepo } from './memberships.ts';
import { createOrganizationRepo, createProjectRepo } from './organizations.ts';
import { createSealedRepo } from './sealed.ts';

function createRepos(sql: Sql, view: ConfigView): Repos {
  return {
    organizations: createOrganizationRepo(sql),
    projects: createProjectRepo(sql, view),
    users: createUserRepo(sql),
    serviceAccounts: createServiceAccountRepo(sql),
    keys: createKeyRepo(sql),
    memberships: createMembershipRepo(sql),
    invites: createInviteRepo(sql),
    devices: createDeviceRepo(sql, view.transaction),
    events: createEventRepo(sql),
    dataConnectors: createDataConnectorRepo(sql, view),
    deliveries: createDeliveryRepo(sql),
    connectorMetrics: createConnectorMetricRepo(sql),
    sealed: createSealedRepo(sql, view),
  };
}

// SQLSTATEs after which a transaction may be run again from the start: serialization failure, deadlock.
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_RERUNS = 3;

export interface PostgresStoreOptions {
  /** Connections in the pool; each process needs one per transaction in flight. */
  poolSize?: number;
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** The connections' application_name; a serve process's by default (see SERVICE_APPLICATION_NAME). */
  applicationName?: string;
}

export type PostgresStore = Store & { pool: pg.Pool };

/** Connects, creates or upgrades the schema (once per database, under a lock), and returns the store. */
export async function createPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const pool = createPool(url, { max: options.poolSize ?? 10, logger: options.logger, applicationName: options.applicationName });
  try {
    await migrate(pool, options.logger);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  const top = sqlOn(pool);
  const cache = new ConfigCache();
  const cluster = createPostgresCluster(pool, url, options.logger, options.applicationName);

  async function once<T>(fn: (tx: Repos) => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown; rerun: boolean }> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      return { ok: false, error: unreachable(error), rerun: false };
    }
    let committing = false;
    let broken = false;
    try {
      await client.query('BEGIN');
      const view: ConfigView = { cache, transaction: true, wrote: false };
      const value = await fn(createRepos(sqlOn(client), view));
      committing = true;
      await client.query('COMMIT');
      if (view.wrote) cache.clear();
      return { ok: true, value };
    } catch (error) {
      // A COMMIT whose answer was lost may have committed: never run again, the caller hears of the failure.
      const rerun = !committing && RETRYABLE.has((error as { code?: string }).code ?? '');
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      return { ok: false, error: isConnectionError(error) ? unreachable(error) : error, rerun };
    } finally {
      client.release(broken ? true : undefined);
    }
  }

  return {
    exclusive: false,
    cluster,
    pool,
    ...createRepos(top, { cache, transaction: false, wrote: false }),
    async transaction<T>(fn: (tx: Repos) => Promise<T>, options?: TransactionOptions): Promise<T> {
      for (let run = 1; ; run++) {
        const result = await once(fn);
        if (result.ok) return result.value;
        if (!(result.rerun && options?.rerunnable === true && run < MAX_RERUNS)) throw result.error;
      }
    },
    async ping() {
      await top.query('SELECT 1');
    },
    async authVersion() {
      // The config version rides along: the read caches of projects and connectors are checked at the same time.
      const [row] = await top.query<{ auth: number; config: number }>('SELECT a.value AS auth, c.value AS config FROM auth_version a, config_version c');
      cache.checked(row!.config);
      return row!.auth;
    },
    async close() {
      await cluster.close();
      await pool.end();
    },
  };
}
