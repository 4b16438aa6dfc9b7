// Files of the data dir hold event data and credentials: readable by their owner only (0600), whatever the umask.
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';

/**
 * Creates `file` empty with mode 0600 if it does not exist, and sets 0600 on it if it does (an installation made
 * before files were private). SQLite gives the `-wal` and `-shm` files it creates the mode of their database file.
 */
export function createPrivateFile(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
}

/** Sets 0600 on each of `files` that exists. */
export function makePrivate(...files: string[]): void {
  for (const file of files) if (existsSync(file)) chmodSync(file, 0o600);
}
