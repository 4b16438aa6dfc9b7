// The PostgreSQL Store, shared by several processes: a connection pool, one connection per transaction, and one
// read cache, of projects and active connectors, checked against a version every process's writes move
// (config-cache.ts; see docs/postgres-store.md). Not exclusive: a delivery lease ends only when its time is up.
import type pg from 'pg';
import { unavailable } from '../../domain/errors.ts';
import { connectTimeoutMs, driverUrl } from '../../runtime/database-url.ts';
import type { Logger } from '../../runtime/logger.ts';
import type { Repos, Store, TransactionOptions } from '../contract/store.ts';
import {
  createAssertionIdRepo,
  createInviteRepo,
  createKeyRepo,
  createServiceAccountRepo,
  createUserRepo,
} from './repos/accounts.ts';
import { createPostgresCluster } from './repos/cluster.ts';
import { createConnectorMetricRepo } from './repos/connector-metrics.ts';
import { ConfigCache, type ConfigView } from './repos/config-cache.ts';
import { createDataConnectorRepo } from './repos/data-connectors.ts';
import { lazyRecord } from './repos/lazy-record.ts';
import { asUnavailable, createPool, diskState, migrate, readOnlySession, sqlOn, unreachable, type Sql } from './db.ts';
import { createDeliveryRepo } from './repos/deliveries.ts';
import { createDeliveryLogRepo } from './repos/delivery-log.ts';
import { createDeviceRepo, type RowLocking } from './repos/devices.ts';
import { createGroupCommit } from './batching/group-commit.ts';
import { isStale, writeBehind } from './batching/write-behind.ts';
import { createDeviceHints } from './batching/device-hints.ts';
import { DeviceVersions } from './batching/device-versions.ts';
import { createEventRepo } from './repos/events.ts';
import { createMembershipRepo } from './repos/memberships.ts';
import { createOrganizationRepo, createProjectRepo } from './repos/organizations.ts';
import { createSealedRepo } from './repos/sealed.ts';
import { createRuleRepo } from './repos/rules.ts';
import { createContactRepo } from './repos/contacts.ts';
import { createAlertRepo, createConditionRepo, createOutboxRepo } from './repos/alerts.ts';
import { startQueueVacuum } from './operations/queue-vacuum.ts';
import { checkServer } from './operations/server-check.ts';
import { startClockWatch } from './operations/clock-check.ts';

const makers: { [K in keyof Repos]: (sql: Sql, view: ConfigView, locking: RowLocking) => Repos[K] } = {
  organizations: (sql) => createOrganizationRepo(sql),
  projects: (sql, view) => createProjectRepo(sql, view),
  users: (sql) => createUserRepo(sql),
  serviceAccounts: (sql) => createServiceAccountRepo(sql),
  keys: (sql) => createKeyRepo(sql),
  memberships: (sql) => createMembershipRepo(sql),
  invites: (sql) => createInviteRepo(sql),
  assertionIds: (sql) => createAssertionIdRepo(sql),
  devices: (sql, _view, locking) => createDeviceRepo(sql, locking),
  events: (sql) => createEventRepo(sql),
  dataConnectors: (sql, view) => createDataConnectorRepo(sql, view),
  deliveries: (sql) => createDeliveryRepo(sql),
  deliveryLog: (sql) => createDeliveryLogRepo(sql),
  connectorMetrics: (sql) => createConnectorMetricRepo(sql),
  sealed: (sql, view) => createSealedRepo(sql, view),
  rules: (sql, view) => createRuleRepo(sql, view),
  contacts: (sql) => createContactRepo(sql),
  alerts: (sql) => createAlertRepo(sql),
  conditions: (sql) => createConditionRepo(sql),
  outbox: (sql) => createOutboxRepo(sql),
};

const REPO_NAMES = Object.keys(makers);

/** A transaction's repos, each made on first use (lazy-record.ts). */
function createRepos(sql: Sql, view: ConfigView, locking: RowLocking): Repos {
  return lazyRecord<Repos>(REPO_NAMES, (name) => makers[name as keyof Repos](sql, view, locking));
}

// SQLSTATEs after which a transaction may be run again from the start: serialization failure, deadlock.
const RETRYABLE = new Set(['40001', '40P01']);
const MAX_RERUNS = 3;
/** The least time between the starts of two batches of background transactions, ms. */
const BACKGROUND_GAP_MS = 20;

export interface PostgresStoreOptions {
  /** Connections in the pool; each process needs one per transaction in flight. */
  poolSize?: number;
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** The connections' application_name; a serve process's by default (see SERVICE_APPLICATION_NAME). */
  applicationName?: string;
  /**
   * Tell the other processes the device versions this one's batches commit, and keep theirs (device-hints.ts).
   * Default true; tests of what a batch does with a version out of date turn it off, to make one for certain.
   */
  deviceHints?: boolean;
  /**
   * This machine's clock, compared with the database server's (clock-check.ts), and the time of the operator's
   * warnings and of a full disk's report; Date.now by default. Not the service's injected clock, which tests set by
   * hand: what the check is about is the machine's.
   */
  machineClock?: () => number;
}

export type PostgresStore = Store & { pool: pg.Pool };

/**
 * Connects, checks the server (server-check.ts: its text settings, the tables' owner, its clock, one session per
 * connection), creates or upgrades the schema (once per database, under a lock), and returns the store; checks the
 * clock once a minute after.
 */
export async function createPostgresStore(
  configured: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresStore> {
  const url = driverUrl(configured);
  const machineClock = options.machineClock ?? Date.now;
  const pool = createPool(url, {
    max: options.poolSize ?? 10,
    logger: options.logger,
    applicationName: options.applicationName,
    now: machineClock,
  });
  try {
    await checkServer(pool, connectTimeoutMs(url), machineClock, options.logger);
    await migrate(pool, options.logger);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  const top = sqlOn(pool);
  const cache = new ConfigCache();
  const cluster = createPostgresCluster(pool, url, options.logger, options.applicationName);
  const vacuum = startQueueVacuum(pool, cluster, options.logger);
  const clockWatch = startClockWatch(pool, options.logger, machineClock);

  async function once<T>(
    fn: (tx: Repos) => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; error: unknown; rerun: boolean }> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      return { ok: false, error: unreachable(error, pool), rerun: false };
    }
    let committing = false;
    let broken = false;
    try {
      await client.query('BEGIN');
      const view: ConfigView = { cache, transaction: true, wrote: false };
      const value = await fn(createRepos(sqlOn(client), view, 'wait'));
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
      return { ok: false, error: asUnavailable(error, pool), rerun };
    } finally {
      client.release(broken ? true : undefined);
    }
  }

  async function alone<T>(fn: (tx: Repos) => Promise<T>, rerunnable: boolean): Promise<T> {
    for (let run = 1; ; run++) {
      const result = await once(fn);
      if (result.ok) return result.value;
      if (!(result.rerun && rerunnable && run < MAX_RERUNS)) throw result.error;
    }
  }

  let versionRead: Promise<number> | null = null;

  const versions = new DeviceVersions();
  const hints = options.deviceHints === false ? null : createDeviceHints(cluster, versions);
  const groupDeps: Parameters<typeof createGroupCommit>[0] = {
    pool,
    batchRepos(client, watch, unlocked) {
      const view: ConfigView = { cache, transaction: true, wrote: false };
      const sql = sqlOn(client, watch);
      const held = writeBehind(createRepos(sql, view, 'skip'), sql, watch, versions, unlocked);
      return {
        repos: held.repos,
        readAhead: held.readAhead,
        beforeCommit: held.flush,
        committed: () => {
          const kept = held.committed();
          hints?.committed(kept);
          if (view.wrote) cache.clear();
        },
        stale: () => {
          const ids = [...held.devices()];
          for (const id of ids) versions.drop(id);
          hints?.stale(ids);
        },
      };
    },
    mayRunUnlocked: (devices) => devices.every((id) => versions.has(id)),
    isStale,
    alone: (fn) => alone(fn, true),
    retryable: (error) => RETRYABLE.has((error as { code?: string } | null)?.code ?? ''),
  };
  // Events (which name their devices) and the rest (the delivery outcomes) in batches of their own: an outcome's
  // statements run one after another and would lengthen the batch every waiting publish is answered after.
  // Background transactions (the outcomes) start a batch at most every BACKGROUND_GAP_MS; no request waits for
  // them. The outcome recorder keeps one transaction at a time, taking in the outcomes that arrived meanwhile, so
  // the gap sets how many batches there are at any load: 5 ms made ~200 a second, 20 ms makes at most 50 (PostgreSQL
  // CPU per event at 1,000 events/s −20 %). The price: an attempt's end is recorded up to ~20 ms later, so a
  // process killed meanwhile has more acknowledged rows pushed again, and the other processes count them in flight
  // that much longer.
  // An event batch that commits took new room in the tables: a full disk the server reported is no longer.
  const disk = diskState(pool);
  const events = createGroupCommit({
    ...groupDeps,
    batchRepos(client, watch, unlocked) {
      const batch = groupDeps.batchRepos(client, watch, unlocked);
      return { ...batch, committed: () => (batch.committed(), disk.roomSeen()) };
    },
  });
  const topView: ConfigView = { cache, transaction: false, wrote: false };
  const topRepos = Object.fromEntries(
    Object.entries(makers).map(([name, make]) => [name, make(top, topView, 'none')]),
  ) as unknown as Repos;
  const others = createGroupCommit(groupDeps);
  const background = createGroupCommit(groupDeps, { gapMs: BACKGROUND_GAP_MS, unlockedWithoutDevices: true });

  return {
    exclusive: false,
    cluster,
    pool,
    ...topRepos,
    transaction<T>(fn: (tx: Repos) => Promise<T>, options?: TransactionOptions): Promise<T> {
      if (options?.rerunnable !== true) return alone(fn, false);
      if (options.devices?.length) return events.run(fn, options.devices);
      return options.background ? background.run(fn) : others.run(fn);
    },
    async ping() {
      if (disk.full) throw unavailable("the database server's disk is full");
      // A session of the pool is writable when it is opened (prepareSession), but a server whose configuration is
      // reloaded with default_transaction_read_only on takes writes from none of them: not healthy either.
      const [r] = await top.query<{ read_only: boolean }>(
        "SELECT current_setting('transaction_read_only') = 'on' AS read_only",
      );
      if (r!.read_only) throw asUnavailable(readOnlySession(), pool);
    },
    authVersion() {
      // Asked at the start of every request: the requests of one turn of the event loop share one read, sent
      // after all of them were asked (so it is no older than any of them would have read alone).
      versionRead ??= new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        versionRead = null;
        // The config version rides along: the read caches of projects and connectors are checked at the same time.
        const [row] = await top.query<{ auth: number; config: number }>(
          'SELECT a.value AS auth, c.value AS config FROM auth_version a, config_version c',
        );
        cache.checked(row!.config);
        return row!.auth;
      });
      return versionRead;
    },
    async close() {
      await Promise.all([events.idle(), others.idle(), background.idle()]);
      hints?.stop();
      clockWatch.stop();
      await vacuum.stop();
      await cluster.close();
      await pool.end();
    },
  };
}
