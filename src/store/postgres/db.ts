// The PostgreSQL connection pool (node-postgres): named prepared statements, bigint and numeric columns read as
// JS numbers (times are microseconds, below 2^53), and the numbered migrations, applied once per database under
// an advisory lock whichever process starts first, then the schema's functions as functions/ holds them.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ApiError, unavailable } from '../../domain/errors.ts';
import { connectTimeoutMs } from '../../runtime/database-url.ts';
import type { Logger } from '../../runtime/logger.ts';
import { DiskFull } from '../../runtime/disk-full.ts';
import { spaced } from '../../runtime/spaced.ts';
import { migrationFiles, newerMigrations } from '../sql/migrations.ts';
import { findsNothing, nulRefused } from '../sql/nul-text.ts';
import { withArrayLiterals } from './array-literal.ts';
import { usePasswordFile } from './operations/password-file.ts';

/** Something that runs SQL: the pool (each call on any free connection) or one transaction's connection. */
export interface Sql {
  /** Rows of one statement, $1… parameters; prepared once per connection and reused. */
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Rows changed (or returned) by one statement. */
  run(text: string, params?: readonly unknown[]): Promise<number>;
}

const INT8 = 20;
const NUMERIC = 1700;
const parseNumber = (v: string): number => Number(v);
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return parseNumber;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

const names = new Map<string, string>();
/** A stable statement name per SQL text, so each connection prepares it once. */
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `sc_${createHash('sha1').update(text).digest('base64url').slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}

type Client = pg.Pool | pg.PoolClient;

/**
 * A statement that cannot run now and may a moment later: the server went away, or the connection to it did, or
 * no connection of the pool came free within the connect timeout.
 */
function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string; syscall?: string } | null;
  if (!e) return false;
  if (waitedTooLong(e)) return true;
  // A Unix socket's file is gone while its server is down.
  if (e.code === 'ENOENT' && e.syscall === 'connect') return true;
  if (
    typeof e.code === 'string' &&
    (e.code.startsWith('08') ||
      ['57P01', '57P02', '57P03', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND'].includes(e.code))
  )
    return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error|Connection ended/i.test(
    e.message ?? '',
  );
}

/**
 * pg-pool's error when every connection of the pool stayed taken (busy, or being opened) for the connect timeout;
 * raised only when the pool is full, so a connect attempt of its own that timed out is told apart (above).
 */
function waitedTooLong(err: { message?: string } | null): boolean {
  return err?.message === 'timeout exceeded when trying to connect';
}

// The server cancelled the statement (SQLSTATE 57014: its statement_timeout, or an operator's pg_cancel_backend;
// 55P03: it waited for a lock longer than lock_timeout). Nothing of it was kept, and the same request may pass a
// moment later.
const CANCELLED = new Set(['57014', '55P03']);
// The server lacks what the work needs (SQLSTATE class 53: a full disk, memory, no connection to spare): nothing
// of it was kept, and it may pass once the operator (or the load) has made room.
const SHORT_OF_RESOURCES = /^53/;
// Of those, a full disk (53100: "could not extend file …: No space left on device"), which lasts until the operator
// makes room: told apart, and reported by /healthz (runtime/disk-full.ts).
const DISK_FULL = '53100';
// The server refused a new connection's credentials (SQLSTATE 28P01: the password; 28000: pg_hba.conf, or no such
// user), as after the password was changed: the open connections keep working, and a new one passes once the process
// has the new password (the password file is read at each new connection, password-file.ts).
const CREDENTIALS_REFUSED = new Set(['28P01', '28000']);
// The server accepts only reads (SQLSTATE 25006: a standby, or default_transaction_read_only on), found by a
// statement or by prepareSession: nothing was written, and writes pass again once the URL leads to a primary.
const READ_ONLY = '25006';

/**
 * A failure a moment may cure, as a 503 the client may retry, not a fault; the operator is told of those whose cure
 * is theirs (createPool). Anything else is given back as it is.
 */
export function asUnavailable(err: unknown, via?: Client): unknown {
  if (err instanceof ApiError) return err;
  const notes = via === undefined ? undefined : operatorNotes.get(via);
  if (isConnectionError(err)) {
    const busy = waitedTooLong(err as { message?: string });
    if (busy) notes?.waited();
    return withCause(
      unavailable(
        busy
          ? 'no database connection came free in time; try again shortly'
          : 'the database is unreachable; try again shortly',
      ),
      err,
    );
  }
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return err;
  if (CANCELLED.has(code)) {
    notes?.cancelled((err as Error).message);
    return withCause(
      unavailable('the database cancelled a statement that waited or ran too long; try again shortly'),
      err,
    );
  }
  if (CREDENTIALS_REFUSED.has(code)) {
    notes?.credentialsRefused((err as Error).message);
    return withCause(unavailable('the database refused a new connection; try again shortly'), err);
  }
  if (code === READ_ONLY) {
    notes?.readOnly((err as Error).message);
    return withCause(unavailable('the database accepts only reads now; try again shortly'), err);
  }
  if (code === DISK_FULL) {
    notes?.disk.refused((err as Error).message);
    return withCause(unavailable("the database server's disk is full; try again later"), err);
  }
  if (SHORT_OF_RESOURCES.test(code)) {
    notes?.shortOfResources((err as Error).message);
    return withCause(
      unavailable('the database lacks the resources to do this now (connections or memory); try again shortly'),
      err,
    );
  }
  return err;
}

/** A request that could not have the database (a connection that could not be opened, or was lost): a 503. */
export function unreachable(cause: unknown, via?: Client): Error {
  const known = asUnavailable(cause, via);
  return known instanceof ApiError
    ? known
    : withCause(unavailable('the database is unreachable; try again shortly'), cause);
}

function withCause(err: Error, cause: unknown): Error {
  (err as Error & { cause?: unknown }).cause = cause;
  return err;
}

// PostgreSQL's refusal of text holding the NUL character (SQLSTATE 22021: invalid byte sequence; 22P05:
// untranslatable character), handled as both backends do (../nul-text.ts).
const NUL_REFUSED = new Set(['22021', '22P05']);

/** What a transaction's statements did so far: how many may have written, and whether one failed. */
export interface Watch {
  writes: number;
  failed: boolean;
  /** A failed statement wrote what several transactions held (write-behind.ts): no one of them is to blame. */
  shared?: boolean;
}

const READS = /^\s*SELECT\b/i;

/** SQL on the pool or a connection; with watch, each statement that may write is counted, and a failure noted. */
export function sqlOn(client: Client, watch?: Watch): Sql {
  const exec = async (text: string, params?: readonly unknown[]) => {
    if (watch && !READS.test(text)) watch.writes++;
    try {
      return await client.query({ name: statementName(text), text, values: withArrayLiterals(params) });
    } catch (err) {
      if (watch) watch.failed = true;
      const known = asUnavailable(err, client);
      if (known !== err) throw known;
      if (NUL_REFUSED.has((err as { code?: string }).code ?? '')) {
        if (findsNothing(text)) return { rows: [], rowCount: 0 } as unknown as pg.QueryResult;
        throw nulRefused();
      }
      throw err;
    }
  };
  return {
    async query<T>(text: string, params?: readonly unknown[]) {
      return (await exec(text, params)).rows as T[];
    },
    async run(text: string, params?: readonly unknown[]) {
      return (await exec(text, params)).rowCount ?? 0;
    },
  };
}

export interface PoolOptions {
  /** Connections in the pool (SENSORCLOUD_DATABASE_POOL_SIZE). */
  max: number;
  logger?: Pick<Logger, 'info' | 'warn'>;
  /** The connections' application_name: SERVICE_APPLICATION_NAME for a serve process (default). */
  applicationName?: string;
  /** Milliseconds now (for spacing the warnings of waits that timed out); Date.now by default. */
  now?: () => number;
}

/** What the operator is told of, per pool and per connection of it (createPool). */
interface OperatorNotes {
  /** A wait for a free connection timed out. */
  waited(): void;
  /** The server cancelled a statement, with its message. */
  cancelled(reason: string): void;
  /** The server lacked resources for a statement or a new connection, with its message. */
  shortOfResources(reason: string): void;
  /** The server refused the credentials of a new connection, with its message. */
  credentialsRefused(reason: string): void;
  /** The server accepts only reads (a statement refused, or a new session found read-only), with the message. */
  readOnly(reason: string): void;
  /** Writes the server refused for a full disk; room is seen when an event batch commits (index.ts). */
  disk: DiskFull;
}
const operatorNotes = new WeakMap<Client, OperatorNotes>();
/**
 * Run first on each connection: settings a server (or a hosted service) may give every session, turned back for
 * this process's own.
 * - `idle_session_timeout` off: the cluster's LISTEN connection is idle by design, and a server that set it ended
 *   that connection over and over, with the periodic jobs given up and the other processes' messages missed each
 *   time (a pooled connection ended while idle is a warning, or a 503 when handed out at that moment). A server
 *   before PostgreSQL 14 has no such setting, and it is left out.
 * - `default_transaction_isolation` READ COMMITTED: the queue's claims (FOR UPDATE SKIP LOCKED) and the device row
 *   locks are built for it. Under SERIALIZABLE, two processes claiming one queue failed with serialization errors
 *   (delivery stopped) and publishes were answered 500.
 */
const SESSION_SETTINGS = `SELECT current_setting('transaction_read_only') = 'on' AS read_only,
  (SELECT count(set_config(name, wanted.setting, false))
   FROM (VALUES ('idle_session_timeout', '0'), ('default_transaction_isolation', 'read committed')) AS wanted (name, setting)
   WHERE name IN (SELECT name FROM pg_settings)) AS settings`;

/**
 * Sets SESSION_SETTINGS on a new connection, and refuses (SQLSTATE 25006, as the server's own refusal) a session
 * that may only read: a standby, or default_transaction_read_only on. After a failover the URL may lead to a
 * standby for a while; a pooled session of it, kept busy, was never closed, and every write answered 500 for as
 * long as the process ran (measured under load: still so 45 s after the database took writes again). Refused here,
 * such a session is closed at once and never pooled, and the next connection tries the URL again.
 */
export async function prepareSession(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ read_only: boolean }>(SESSION_SETTINGS);
  if (rows[0]!.read_only) throw readOnlySession();
}

/** The failure of a read-only session: the server's SQLSTATE for a write refused there. */
export function readOnlySession(): Error {
  return Object.assign(new Error('the server accepts only reads (transaction_read_only is on)'), { code: READ_ONLY });
}

/** The application_name of a serve process's connections, by which `admin` commands tell that one is running. */
export const SERVICE_APPLICATION_NAME = 'sensorcloud';

export function createPool(url: string, options: PoolOptions): pg.Pool {
  // For this pool's connections and the cluster's LISTEN connection, opened after it.
  usePasswordFile();
  const timeoutMs = connectTimeoutMs(url);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    types,
    connectionTimeoutMillis: timeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: options.applicationName ?? SERVICE_APPLICATION_NAME,
    // Before a new connection's first use (a query queued behind it instead would have pg print a deprecation
    // warning). Should it fail, the connection is closed and the statement that asked for it fails.
    verify: (client: pg.PoolClient, done: (err?: Error) => void) =>
      void prepareSession(client).then(() => done(), done),
  });
  // Failures whose cure is the operator's (every connection taken, statements cancelled, credentials refused, a
  // server that accepts only reads, resources short): the requests concerned answer 503, and the operator hears of
  // it here.
  const now = options.now ?? Date.now;
  const notes: OperatorNotes = {
    disk: new DiskFull(now, (refusals, reason) =>
      options.logger?.warn(
        { refusals, reason },
        "database: the database server's disk is full: requests that write answered 503, reads go on, background work tried again, /healthz answers 503; make room on the server's disk (where the database or its tablespace lives), and writes pass again with no restart",
      ),
    ),
    waited: spaced(now, (waits) =>
      options.logger?.warn(
        { waits, poolSize: options.max, timeoutSeconds: timeoutMs / 1000 },
        'database: every pooled connection stayed busy for the connect timeout, and requests were answered 503; raise SENSORCLOUD_DATABASE_POOL_SIZE if the database has connections to spare, or look for slow statements',
      ),
    ),
    cancelled: spaced(now, (statements, reason) =>
      options.logger?.warn(
        { statements, reason },
        'database: the server cancelled statements that waited or ran too long: requests answered 503, background work tried again; look for a session holding locks that long, or for a statement_timeout or lock_timeout set too low for this service (see docs/deployment.md)',
      ),
    ),
    credentialsRefused: spaced(now, (refusals, reason) =>
      options.logger?.warn(
        { refusals, reason },
        'database: the server refused the credentials of a new connection: requests that needed one answered 503, background work tried again; if the password was changed, give this process the new one (the password file, ~/.pgpass or PGPASSFILE, is read at each new connection; a password in the URL or in PGPASSWORD takes a restart)',
      ),
    ),
    readOnly: spaced(now, (refusals, reason) =>
      options.logger?.warn(
        { refusals, reason },
        'database: the server accepts only reads (a standby, as after a failover, or default_transaction_read_only on): requests that write answered 503, background work tried again; the process recovers by itself once SENSORCLOUD_DATABASE_URL leads to a server that accepts writes',
      ),
    ),
    shortOfResources: spaced(now, (refusals, reason) =>
      options.logger?.warn(
        { refusals, reason },
        `database: the server lacked the resources for work: requests answered 503, background work tried again; for too many connections keep processes × (SENSORCLOUD_DATABASE_POOL_SIZE + 1) below max_connections (this process: ${options.max} + 1), for memory look at the server's settings and load`,
      ),
    ),
  };
  operatorNotes.set(pool, notes);
  // An idle connection that the server closes (a restart, a network cut) emits here; without a listener the
  // process would exit. The pool drops it and opens a new one when needed.
  pool.on('error', (err) =>
    options.logger?.warn(
      { err: err.message },
      'database: an idle connection was lost; a new one is opened when needed',
    ),
  );
  // A connection lost while it is taken (inside a transaction, between two of its statements: a server restart,
  // pg_terminate_backend, a network cut) emits on its client, where pg-pool listens only while the client is idle:
  // that too would end the process. The transaction hears of it from its next statement (a 503, or run again), and
  // the connection is dropped when it is given back, not kept in the pool.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    operatorNotes.set(client, notes);
  });
  return pool;
}

/** The pool's full-disk state: what /healthz reports, and what an event batch's commit ends. */
export function diskState(pool: pg.Pool): DiskFull {
  return operatorNotes.get(pool)!.disk;
}

/** Any two processes migrating the same database: the second waits for the first, then finds nothing to do. */
const MIGRATION_LOCK = 7_140_219_001;

/**
 * For the waits the service makes on purpose: a process starting while another migrates the schema (which may take
 * minutes on a long history) or bootstraps. The operator's statement_timeout and lock_timeout, meant for requests,
 * would cut them and the process could not start. A session that ran this is closed after, never pooled again.
 */
export const WAIT_AS_LONG_AS_IT_TAKES = 'SET statement_timeout = 0; SET lock_timeout = 0';

export async function migrate(pool: pg.Pool, logger?: Pick<Logger, 'info' | 'warn'>): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query(WAIT_AS_LONG_AS_IT_TAKES);
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_time bigint NOT NULL)',
    );
    const applied = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    const from = migrationsDir();
    const files = migrationFiles(from);
    // A process of an older release during a rolling upgrade (one restarted before its turn), or a cluster taken
    // back a release: each migration keeps the release before it working on the new schema, which is all it can
    // promise, so this process serves, and says so.
    const newer = newerMigrations(applied, files);
    if (newer.length > 0) {
      logger?.warn(
        { migrations: newer },
        'database: a newer release upgraded the schema (migrations this release does not have); this process works on it only if it is of the release just before that one: upgrade it',
      );
    }
    const upgrading = applied.size > 0;
    for (const { version, file } of files) {
      if (applied.has(version)) continue;
      const started = Date.now();
      if (upgrading)
        logger?.info(
          { migration: file },
          'upgrading the database schema; with a long event history this can take minutes',
        );
      await client.query('BEGIN');
      try {
        await client.query(readFileSync(join(from, file), 'utf8'));
        await client.query('INSERT INTO schema_migrations (version, applied_time) VALUES ($1, $2)', [
          version,
          Date.now(),
        ]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
      if (upgrading) logger?.info({ migration: file, ms: Date.now() - started }, 'database schema upgraded');
    }
    // At every start, but never over the functions of a newer release (a function changed comes with a migration,
    // functions/README.md): a process of the release before, restarted during a rolling upgrade, would undo them.
    if (newer.length === 0) await applyFunctions(client);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    client.release(true);
  }
}

/**
 * Each function of the schema as functions/ holds it (CREATE OR REPLACE, one file per function; the rules of a change
 * are in functions/README.md), in one transaction: whatever the migrations left, the database ends with these.
 * Idempotent; a function replaced keeps its oid, so the triggers that name one keep working.
 */
async function applyFunctions(client: pg.ClientBase): Promise<void> {
  await client.query('BEGIN');
  try {
    for (const { sql } of functionFiles()) await client.query(sql);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

/** The files of functions/, by name: `<function>.sql` and its text. */
export function functionFiles(): Array<{ file: string; sql: string }> {
  const dir = besideModule('functions', 'postgres-functions');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((file) => ({ file, sql: readFileSync(join(dir, file), 'utf8') }));
}

function migrationsDir(): string {
  return besideModule('migrations', 'postgres-migrations');
}

/** A folder beside this module: `source` in the sources, `bundled` beside the bundle (scripts/build-service.mjs). */
function besideModule(source: string, bundled: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return existsSync(join(here, bundled)) ? join(here, bundled) : join(here, source);
}
