// The store the configuration names: PostgreSQL when SENSORCLOUD_DATABASE_URL is set, else SQLite in the data dir.
import { join } from 'node:path';
import type { Logger } from '../runtime/logger.ts';
import { StartupError } from '../runtime/startup-error.ts';
import { createPostgresStore } from './postgres/index.ts';
import { createSqliteStore } from './sqlite/index.ts';
import type { Store } from './store.ts';

export interface StoreConfig {
  dataDir: string;
  databaseUrl: string | null;
  databasePoolSize: number;
}

/** The URL without its password, for messages and logs. */
export function redactDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://…';
  }
}

/** The database a URL names: its path, or (none) the user's name, as PostgreSQL takes it then. */
function databaseName(url: string): string {
  try {
    const u = new URL(url);
    return decodeURIComponent(u.pathname.slice(1) || u.username) || 'sensorcloud';
  } catch {
    return 'sensorcloud';
  }
}

/** Why a connection to PostgreSQL failed, in words an operator acts on. */
function explainConnectError(err: unknown, url: string): StartupError {
  const e = err as { code?: string; message?: string };
  const where = redactDatabaseUrl(url);
  const database = databaseName(url);
  const hint: Record<string, string> = {
    ECONNREFUSED: 'nothing listens there: is PostgreSQL running, on that host and port?',
    ENOTFOUND: 'the host name does not resolve',
    ETIMEDOUT: 'no answer: a firewall, or the wrong host?',
    '28P01': 'the password was refused',
    '28000': 'the server refused this user (pg_hba.conf)',
    '3D000': `the database does not exist: create it first (createdb ${database})`,
    '42501': 'the user may not create the schema: grant it CREATE on the database, or run the first start as its owner',
  };
  const why = hint[e.code ?? ''] ?? e.message ?? String(err);
  return new StartupError(`SENSORCLOUD_DATABASE_URL ${where}: cannot use the database (${e.code ?? 'error'}): ${why}`, { cause: err });
}

/** `applicationName`: how the connections name themselves on PostgreSQL; a serve process's by default. */
export async function openConfiguredStore(config: StoreConfig, logger?: Logger, applicationName?: string): Promise<Store> {
  if (config.databaseUrl === null) return createSqliteStore(join(config.dataDir, 'sensorcloud.db'), { logger });
  try {
    return await createPostgresStore(config.databaseUrl, { poolSize: config.databasePoolSize, logger, applicationName });
  } catch (err) {
    throw explainConnectError(err, config.databaseUrl);
  }
}
