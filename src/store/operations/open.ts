// The store the configuration names: PostgreSQL when SENSORCLOUD_DATABASE_URL is set, else SQLite in the data dir.
import { join } from 'node:path';
import { databaseUrlNames, plainTcp, redactDatabaseUrl } from '../../runtime/database-url.ts';
import type { Logger } from '../../runtime/logger.ts';
import { StartupError } from '../../runtime/startup-error.ts';
import { anotherApplication } from '../postgres/operations/another-application.ts';
import { createSqliteStore } from '../sqlite/index.ts';
import type { Store } from '../contract/store.ts';

export interface StoreConfig {
  dataDir: string;
  databaseUrl: string | null;
  databasePoolSize: number;
}

// Node's names for a TLS certificate no trusted CA signed.
const UNTRUSTED = [
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
];

const ADD_TLS = "add sslmode=verify-full&sslrootcert=<the CA certificate that signed the server's> to the URL";

/** What to do about a failed connection, in words an operator acts on; null: the driver's own message says it. */
function hintFor(e: { code?: string; message?: string; syscall?: string; path?: string }, url: string): string | null {
  const { user, database } = databaseUrlNames(url);
  const message = e.message ?? '';
  if (e.code === '28000' && /no encryption/.test(message))
    return `the server accepts this user over TLS only: ${ADD_TLS}`;
  // The server's words are in its own language (lc_messages), and "no encryption" is English: whatever they say, a
  // connection made without TLS may have been refused for that.
  if (e.code === '28000' && plainTcp(url))
    return `the server refused this user (pg_hba.conf); if it accepts this user over TLS only, ${ADD_TLS}`;
  if (UNTRUSTED.includes(e.code ?? '')) {
    return "the server's TLS certificate is not signed by a CA this process trusts: name that CA's certificate with sslrootcert=/path/ca.pem in the URL (sslmode=require checks it too with this driver), or use sslmode=no-verify to encrypt without checking who answers";
  }
  if (/does not support SSL/.test(message)) {
    return 'the server has TLS off (ssl = off in postgresql.conf), or the URL names its Unix socket, which never uses TLS: turn ssl on, or remove sslmode from the URL';
  }
  // Read as the URL is parsed; a socket's read errors (ECONNRESET) are not about a file.
  if (e.syscall === 'open' || e.code === 'EISDIR')
    return `cannot read ${e.path ?? 'a directory as a file'}, named in the URL (sslrootcert, sslcert or sslkey)`;
  if (e.syscall === 'connect' && e.code === 'ENOENT') {
    return 'no PostgreSQL socket there: is PostgreSQL running, is host= the directory of its socket (such as /var/run/postgresql), and is the port its port?';
  }
  if (/client password must be a (non-empty )?string/.test(message)) {
    return 'the server asks for a password and none was found: put it in the URL (postgres://user:password@host/…), in PGPASSWORD, or in the password file (~/.pgpass, or the file PGPASSFILE names; mode 0600)';
  }
  if (e.syscall === 'connect' && e.code === 'EACCES')
    return 'this process may not open the socket: its user needs access to the socket and its directory';
  const hint: Record<string, string> = {
    ECONNREFUSED: 'nothing listens there: is PostgreSQL running, on that host and port?',
    ENOTFOUND: 'the host name does not resolve',
    ETIMEDOUT: 'no answer: a firewall, or the wrong host?',
    CERT_HAS_EXPIRED: "the server's TLS certificate has expired",
    ERR_TLS_CERT_ALTNAME_INVALID:
      "the server's TLS certificate is not for this host name: connect by a name the certificate lists",
    '28P01': 'the password was refused',
    '28000': 'the server refused this user (pg_hba.conf)',
    '3D000': `the database does not exist: create it first (createdb --encoding=UTF8 --locale=C --template=template0 ${database})`,
    '53300':
      'the server has no connection to spare (max_connections, or a CONNECTION LIMIT of this user or database): keep processes × (SENSORCLOUD_DATABASE_POOL_SIZE + 1) below it, or raise it',
    // The first write of a start (the migrations' table) on a standby, or with default_transaction_read_only on.
    '25006':
      'the server accepts only reads: it is a standby, or default_transaction_read_only is on for this database or user; point the URL at the primary, or turn the setting off',
    // A hardened search_path ("$user", without public) and no schema of the user's name: nowhere to make the tables.
    '3F000': `the search_path of this user or database names no schema that exists (such as "$user" without a schema of that name): create one (CREATE SCHEMA ${user} AUTHORIZATION ${user}), or set a search_path that names one`,
    // A first start's migration meets a table of another application's (the other kind of schema_migrations is
    // found before, by server-check.ts).
    '42P07': anotherApplication(`a table the service makes is there already: ${message}`),
    // PostgreSQL 15 lets only the database's owner create tables in its public schema.
    '42501': `the user may not create the schema's tables: make it the database's owner (ALTER DATABASE ${database} OWNER TO ${user}), or GRANT CREATE ON SCHEMA public TO ${user}`,
  };
  return hint[e.code ?? ''] ?? null;
}

/** Why a connection to PostgreSQL failed: the URL without its secrets, the error's code, and what to do. */
export function explainConnectError(err: unknown, url: string): StartupError {
  const e = err as { code?: string; message?: string };
  const why = hintFor(e, url) ?? e.message ?? String(err);
  return new StartupError(
    `SENSORCLOUD_DATABASE_URL ${redactDatabaseUrl(url)}: cannot use the database (${e.code ?? 'error'}): ${why}`,
    { cause: err },
  );
}

/** `applicationName`: how the connections name themselves on PostgreSQL; a serve process's by default. */
export async function openConfiguredStore(
  config: StoreConfig,
  logger?: Logger,
  applicationName?: string,
): Promise<Store> {
  if (config.databaseUrl === null) return createSqliteStore(join(config.dataDir, 'sensorcloud.db'), { logger });
  // Loaded only here: a process on SQLite never loads the PostgreSQL driver and store (~3 MB resident).
  const { createPostgresStore } = await import('../postgres/index.ts');
  try {
    return await createPostgresStore(config.databaseUrl, {
      poolSize: config.databasePoolSize,
      logger,
      applicationName,
    });
  } catch (err) {
    throw explainConnectError(err, config.databaseUrl);
  }
}
