// The data directory: created private (0700) when missing, checked to be a writable directory, and held by one
// process at a time. Two servers on one data dir would run two delivery engines on a SQLite file that assumes a
// single writer, and an admin command must not change the database under a running server.
//
// The lock is an exclusive SQLite transaction on `sensorcloud.lock` (locking_mode=EXCLUSIVE, no busy wait): SQLite
// takes it with fcntl locks, which the operating system releases when the process ends in any way, SIGKILL
// included, so a crash never leaves a stale lock behind (a pid file would). No native code of our own.
import Database from 'better-sqlite3';
import { accessSync, constants, mkdirSync, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from '../../runtime/startup-error.ts';
import { createPrivateFile, makePrivate } from './private-file.ts';

export const LOCK_FILE = 'sensorcloud.lock';

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

/** Words for the system errors a data dir meets, for one-line messages. */
function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { code?: string };
  switch (e.code) {
    case 'EACCES':
    case 'EPERM':
    case 'SQLITE_PERM':
      return 'permission denied';
    case 'EROFS':
    case 'SQLITE_READONLY':
      return 'read-only file system';
    case 'ENOTDIR':
      return 'a part of its path is a file';
    case 'ENOSPC':
    case 'SQLITE_FULL':
      return 'no space left on the device';
    default:
      return e.message ?? String(err);
  }
}

/**
 * Makes sure `dir` is a directory this process can write, creating it (mode 0700) when missing. `setting` names how
 * the operator chose it (`--data-dir`, `SENSORCLOUD_DATA_DIR`, or both for the default), for the advice.
 */
export function prepareDataDir(dir: string, setting: string): void {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw unusable(dir, setting, err);
    try {
      if (code === 'ENOTDIR') throw err;
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (mkdirError) {
      throw new StartupError(
        `cannot create the data dir ${dir} (${reason(mkdirError)}): create it yourself, or point ${setting} at a writable directory`,
        { cause: mkdirError },
      );
    }
    return;
  }
  if (!isDirectory)
    throw new StartupError(
      `the data dir ${dir} is a file, not a directory: point ${setting} at a directory (it is created when missing)`,
    );
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    // Credentials of an installation made before its files were private (the database's files: sqlite/index.ts).
    makePrivate(join(dir, 'master.key'), join(dir, 'bootstrap.json'));
  } catch (err) {
    throw unusable(dir, setting, err);
  }
}

function unusable(dir: string, setting: string, err: unknown): StartupError {
  return new StartupError(
    `the data dir ${dir} is not usable by this user (${reason(err)}): make it writable for this user, or point ${setting} at another directory`,
    { cause: err },
  );
}

/** Holds the data dir for this process until `release()` or the process ends; a StartupError when another holds it. */
export function lockDataDir(dir: string, setting: string): DataDirLock {
  const file = join(dir, LOCK_FILE);
  let db: Database.Database | null = null;
  try {
    createPrivateFile(file);
    db = new Database(file, { timeout: 0 });
    // Nothing is ever written; a journal in memory leaves no file behind when the process is killed (OFF is
    // refused in better-sqlite3's defensive mode).
    db.pragma('journal_mode = MEMORY');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    db?.close();
    const code = (err as { code?: string }).code ?? '';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
      throw new StartupError(
        `another Sensor Cloud process (a server or an admin command) is using the data dir ${dir}: stop it first, or point ${setting} at another directory`,
        { cause: err },
      );
    }
    if (code.startsWith('SQLITE_') || code.startsWith('E')) throw unusable(dir, setting, err);
    throw err;
  }
  const held = db;
  return {
    file,
    release() {
      if (held.open) held.close();
    },
  };
}

/**
 * A StartupError for a failure to open or create the files of the data dir (the database, the master key), or
 * null when `err` is not one: a data dir that passed prepareDataDir can still be on a full disk, or hold files of
 * another user.
 */
export function explainDataDirError(err: unknown, dir: string, setting: string): StartupError | null {
  const e = err as { code?: string; message?: string };
  const code = e.code ?? '';
  // SQLite opening a database on a full disk fails to size its shared-memory file: "disk I/O error"
  // (SQLITE_IOERR_SHMSIZE), which says nothing of the cause; the free space does.
  const free = freeBytes(dir);
  const full =
    code === 'ENOSPC' ||
    code.startsWith('SQLITE_FULL') ||
    (code.startsWith('SQLITE_IOERR') && free !== null && free < 1024 * 1024);
  const known =
    full ||
    ['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EISDIR'].includes(code) ||
    code.startsWith('SQLITE_CANTOPEN') ||
    code.startsWith('SQLITE_READONLY') ||
    code.startsWith('SQLITE_PERM') ||
    code.startsWith('SQLITE_NOTADB') ||
    code.startsWith('SQLITE_CORRUPT');
  if (!known) return null;
  if (full) {
    const left = free === null ? '' : `, ${free.toLocaleString('en-US')} bytes free`;
    return new StartupError(
      `cannot open the data in ${dir} (no space left on the device${left}): make room on that disk, or point ${setting} at a directory on another disk`,
      { cause: err },
    );
  }
  const what =
    code.startsWith('SQLITE_NOTADB') || code.startsWith('SQLITE_CORRUPT')
      ? 'the database file is damaged or not a Sensor Cloud database: restore it from a backup'
      : `make its files (sensorcloud.db*, master.key) readable and writable for this user, or point ${setting} at another directory`;
  return new StartupError(`cannot open the data in ${dir} (${reason(err)}): ${what}`, { cause: err });
}

/** Bytes free for this process on the disk of `dir`; null when that cannot be read (the directory is missing). */
export function freeBytes(dir: string): number | null {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}
