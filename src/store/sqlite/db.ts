// The SQLite connection: WAL, numbered migrations, a prepared-statement cache and the lock that makes an
// async transaction exclusive (better-sqlite3 is synchronous; without the lock, another request's query could
// run inside an open transaction while it awaits).
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unavailable } from '../../domain/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { StartupError } from '../../runtime/startup-error.ts';
import { DiskFull } from '../../runtime/disk-full.ts';
import { freeBytes } from '../operations/data-dir.ts';
import { migrationFiles, newerMigrations } from '../sql/migrations.ts';
import { findsNothing, holdsNul, nulRefused } from '../sql/nul-text.ts';
import { CacheRegistry } from './repos/read-cache.ts';

type Statement = Database.Statement<unknown[], unknown>;

export class SqliteDb {
  readonly raw: Database.Database;
  /** Read caches of the repositories (see read-cache.ts). */
  readonly caches = new CacheRegistry();
  /** Bumped by every write that can change whom a credential authenticates as (src/auth/auth-cache.ts). */
  authWrites = 0;
  /** Write statements run so far (group commit, index.ts: did a failed transaction write anything?). */
  writes = 0;
  private readonly statements = new Map<string, Statement>();
  /** Writes refused for lack of disk space, until one reaches the disk (or a minute passes). */
  private readonly disk: DiskFull;

  /**
   * `logger` hears about schema upgrades of an existing database, which can take a while on a long history, and
   * about a full disk.
   */
  constructor(
    file: string,
    private readonly logger?: Pick<Logger, 'info' | 'warn'>,
    now: () => number = Date.now,
  ) {
    this.disk = new DiskFull(now, (refusals, reason) =>
      this.logger?.warn(
        { refusals, reason, file, freeBytes: freeBytes(dirname(file)) },
        'database: the disk holding the database is full: writes answered 503, background work tried again; make room on that disk, and the service goes on by itself',
      ),
    );
    this.raw = new Database(file);
    this.raw.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: durable against process crashes (the WAL is written before COMMIT returns);
    // only an OS crash or power loss can lose the last transactions.
    this.raw.pragma('synchronous = NORMAL');
    this.raw.pragma('foreign_keys = ON');
    this.raw.pragma('busy_timeout = 5000');
    try {
      this.migrate(file);
    } catch (err) {
      this.raw.close();
      throw err;
    }
  }

  /**
   * A cached prepared statement. Write a bound LIMIT or OFFSET as `+?`, never a bare `?`: SQLite (3.53 here)
   * compiles a bare one's bound value into the program as a constant, so every new binding makes the statement
   * recompile on its next step (a page of 10 rows: 17 against 8.5 µs). The unary plus keeps it a runtime value.
   */
  stmt(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.raw.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  all<T>(sql: string, ...params: unknown[]): T[] {
    const s = this.counted(sql, params);
    if (!s) return [];
    try {
      const rows = s.all(...params) as T[];
      if (this.disk.refusedAt !== null) this.wrote(s);
      return rows;
    } catch (err) {
      throw this.refusal(err);
    }
  }

  get<T>(sql: string, ...params: unknown[]): T | undefined {
    const s = this.counted(sql, params);
    if (!s) return undefined;
    try {
      const row = s.get(...params) as T | undefined;
      if (this.disk.refusedAt !== null) this.wrote(s);
      return row;
    } catch (err) {
      throw this.refusal(err);
    }
  }

  run(sql: string, ...params: unknown[]): Database.RunResult {
    const s = this.counted(sql, params);
    if (!s) return { changes: 0, lastInsertRowid: 0 };
    try {
      const result = s.run(...params);
      if (this.disk.refusedAt !== null) this.wrote(s);
      return result;
    } catch (err) {
      throw this.refusal(err);
    }
  }

  /**
   * SQLite could not write for lack of disk space (SQLITE_FULL): what the transaction wrote is rolled back, and the
   * same request passes once there is room, so it is a 503, not a fault, and the operator is told (at most once a
   * minute). Before, every write answered 500 with a stack in the log, and /healthz said 200. Anything else is
   * given back as it is.
   */
  refusal(err: unknown): unknown {
    if ((err as { code?: unknown } | null)?.code !== 'SQLITE_FULL') return err;
    this.disk.refused((err as Error).message);
    return Object.assign(unavailable('the disk that holds the database is full; try again later'), { cause: err });
  }

  /** A transaction was committed: the disk had room. */
  committed(): void {
    this.disk.roomSeen();
  }

  /** Whether a write failed for lack of space within the last minute, none having reached the disk since. */
  get full(): boolean {
    return this.disk.full;
  }

  /** A write outside a transaction (committed as it ran) reached the disk. */
  private wrote(s: Statement): void {
    if (!s.readonly && !this.raw.inTransaction) this.disk.roomSeen();
  }

  /**
   * The statement, counted in `writes` (before it runs, so a write that fails counts too) unless read-only. A write
   * with text holding NUL is treated as PostgreSQL treats it (../nul-text.ts): a delete finds nothing (null: not
   * run), any other write is refused. A read runs: no stored text holds NUL, so it finds nothing anyway.
   */
  private counted(sql: string, params: unknown[]): Statement | null {
    const s = this.stmt(sql);
    if (!s.readonly) {
      this.writes++;
      if (holdsNul(params)) {
        if (findsNothing(sql)) return null;
        throw nulRefused();
      }
    }
    return s;
  }

  close(): void {
    this.raw.close();
  }

  private migrate(path: string): void {
    this.raw.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_time INTEGER NOT NULL)',
    );
    const applied = new Set(
      this.raw
        .prepare('SELECT version FROM schema_migrations')
        .all()
        .map((r) => (r as { version: number }).version),
    );
    const dir = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
    const files = migrationFiles(dir);
    // A release going back (an upgrade undone): its code was not written for the newer schema, and one process
    // owns this database, so nothing gains from starting on it; the newer release, or the backup, is the way on.
    const newer = newerMigrations(applied, files);
    if (newer.length > 0) {
      throw new StartupError(
        `the database ${path} was upgraded by a newer release of Sensor Cloud (it has schema migration${newer.length > 1 ? 's' : ''} ${newer.join(', ')}, which this release does not have): start that release again, or restore the backup of the data dir made before the upgrade`,
      );
    }
    // A new database is created in milliseconds; an upgrade may rebuild an index over the whole event history
    // (~1.6 s per million events for 080), so the operator is told what the start is waiting for.
    const upgrading = applied.size > 0;
    for (const { version, file } of files) {
      if (applied.has(version)) continue;
      const sql = readFileSync(join(dir, file), 'utf8');
      const started = Date.now();
      if (upgrading)
        this.logger?.info(
          { migration: file },
          'upgrading the database schema; with a long event history this can take minutes',
        );
      this.raw.transaction(() => {
        this.raw.exec(sql);
        this.raw
          .prepare('INSERT INTO schema_migrations (version, applied_time) VALUES (?, ?)')
          .run(version, Date.now());
      })();
      if (upgrading) this.logger?.info({ migration: file, ms: Date.now() - started }, 'database schema upgraded');
    }
  }
}

/** FIFO async mutex. `run` executes at once (same tick) when the lock is free. */
export class Lock {
  private held = false;
  private readonly waiters: Array<() => void> = [];

  get busy(): boolean {
    return this.held;
  }

  async acquire(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.held = false;
  }
}

/** JSON column helpers. */
export const toJson = (v: unknown): string => JSON.stringify(v);
export const fromJson = <T>(s: string): T => JSON.parse(s) as T;
