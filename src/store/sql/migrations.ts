// The numbered schema migrations both stores apply at open (`NNN_name.sql`, in order, each once), and what a
// database has applied that this release does not have: migrations of a newer release, whose schema this one was
// not written for.
import { readdirSync } from 'node:fs';

export interface MigrationFile {
  version: number;
  file: string;
}

/** The migration files of a directory, in the order they apply. */
export function migrationFiles(dir: string): MigrationFile[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()
    .map((file) => ({ version: Number(file.split('_')[0]), file }));
}

/** The applied versions none of `files` has, in order: the database was upgraded by a newer release. */
export function newerMigrations(applied: ReadonlySet<number>, files: readonly MigrationFile[]): number[] {
  const known = new Set(files.map((f) => f.version));
  return [...applied].filter((v) => !known.has(v)).sort((a, b) => a - b);
}
