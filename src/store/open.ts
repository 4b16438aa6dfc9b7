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

/** The user and database a URL names (the database: its path, or the user's name, as PostgreSQL takes it then). */
function names(url: string): { user: string; database: string } {
  try {
    const u = new URL(url);
    const user = decodeURIComponent(u.username) || 'sensorcloud';
    return { user, database: decodeURIComponent(u.pathname.slice(1)) || user };
  } catch {
    return { user: 'sensorcloud', database: 'sensorcloud' };
  }
}

/** Why a connection to PostgreSQL failed, in words an operator acts on. */
function explainConnectError(err: unknown, url: string): StartupError {
  const e = err as { code?: string; message?: string };
  const where = redactDatabaseUrl(url);
  const { user, database } = names(url);
  const hint: Record<string, string> = {
    ECONNREFUSED: 'nothing listens there: is PostgreSQL running, on that host and port?',
    ENOTFOUND: 'the host name does not resolve',
    ETIMEDOUT: 'no answer: a firewall, or the wrong host?',
    '28P01': 'the password was refused',
    '28000': 'the server refused this user (pg_hba.conf)',
    '3D000': `the database does not exist: create it first (createdb ${database})`,
    // PostgreSQL 15 lets only the database's owner create tables in its public schema.
    '42501': `the user may not create the schema's tables: make it the database's owner (ALTER DATABASE ${database} OWNER TO ${user}), or GRANT CREATE ON SCHEMA public TO ${user}, or run the first start as the owner`,
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
