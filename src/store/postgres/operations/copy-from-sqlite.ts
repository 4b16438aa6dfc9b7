// Moving an installation from SQLite to PostgreSQL (`sensorcloud admin copy-to-postgres`): every table of the
// stopped installation's SQLite file copied as it is into a new PostgreSQL database, in one transaction, so that a
// cluster serves the same organizations, credentials, devices, history, connectors, queue and delivery log, and the
// same notification rules, contacts, alerts and notifications to send. The two schemas keep the same tables and
// columns; only booleans (0/1 in SQLite), the metrics' histograms and the delivery log's attempts (jsonb) change type. Key and signature secrets stay sealed as they are: the cluster's processes use
// the installation's master key, and the copy seals the cluster's key check with it (main.ts), so a process given
// another key refuses to start.
import Database from 'better-sqlite3';
import type pg from 'pg';
import { MASTER_KEY_CHECK_SETTING } from '../../jobs/cluster.ts';
import { explainConnectError } from '../../operations/open.ts';
import { WAIT_AS_LONG_AS_IT_TAKES } from '../db.ts';
import { createPostgresStore } from '../index.ts';

/** The tables copied, parents before the rows that name them. */
const TABLES = [
  'organizations',
  'users',
  'projects',
  'service_accounts',
  'service_account_keys',
  'memberships',
  'invites',
  'used_assertions',
  'devices',
  'events',
  'data_connectors',
  'connector_pacing',
  'deliveries',
  'delivery_log',
  'connector_syncs',
  'connector_metrics',
  'delivery_counters',
  'rules',
  'contact_groups',
  'contacts',
  'alerts',
  'rule_conditions',
  'alert_outbox',
] as const;
/**
 * Columns only the SQLite schema has, left behind: a published event's deliveries named on its row (SQLite migration
 * 190), which PostgreSQL finds through its delivery_log_by_event index instead.
 */
const SQLITE_ONLY: Record<string, readonly string[]> = { events: ['first_delivery', 'last_delivery'] };
/** SQLite's own tables and the schema's version, which the PostgreSQL database keeps for itself. */
const NOT_COPIED = new Set(['schema_migrations', 'sqlite_sequence']);
/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters in a statement. */
const BATCH_PARAMETERS = 30_000;

export interface CopyOptions {
  /** The cluster's master key check (MASTER_KEY_CHECK) sealed under the installation's key (main.ts). */
  keyCheck: string;
  /** Progress of a long table, and each table when done. */
  progress?: (table: string, copied: number, total: number) => void;
}

/** A refusal the operator acts on (the database is not new, a process runs on it, the schemas differ). */
export class CopyRefused extends Error {}

/** Copies the SQLite file into the (new, empty) database at `url`; returns the rows copied per table. */
export async function copySqliteToPostgres(
  sqliteFile: string,
  url: string,
  options: CopyOptions,
): Promise<Record<string, number>> {
  // The server's checks and the schema, as a serve process's first start makes them. Two connections: the
  // bootstrap lock's, and the copy's.
  const store = await createPostgresStore(url, { poolSize: 2, applicationName: 'sensorcloud-admin' }).catch(
    (err: unknown) => {
      throw explainConnectError(err, url);
    },
  );
  try {
    // Under the bootstrap lock: a serve process that starts meanwhile waits, then finds the database set up.
    return await store.cluster!.withLock('bootstrap', async () => {
      const organizations = await store.organizations.count();
      if (organizations > 0) {
        throw new CopyRefused(
          `the database already holds an installation (${organizations} organizations): copy into a new, empty database (createdb --encoding=UTF8 --locale=C --template=template0 NAME)`,
        );
      }
      const sessions = await store.cluster!.serviceSessions();
      if (sessions > 0)
        throw new CopyRefused(
          `serve processes are connected to the database (${sessions} connections): stop them, and copy into a new, empty database`,
        );
      return copyTables(sqliteFile, store.pool, options);
    });
  } finally {
    await store.close();
  }
}

async function copyTables(sqliteFile: string, pool: pg.Pool, options: CopyOptions): Promise<Record<string, number>> {
  const sqlite = new Database(sqliteFile, { readonly: true, fileMustExist: true });
  try {
    const present = (
      sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]
    ).filter((t) => !NOT_COPIED.has(t));
    const unknown = present.filter((t) => !(TABLES as readonly string[]).includes(t));
    if (unknown.length > 0)
      throw new CopyRefused(
        `the SQLite file holds tables this release does not copy (${unknown.join(', ')}): use the release that made it`,
      );
    const client = await pool.connect();
    try {
      // A long history takes as long as it takes, whatever limits the user or database sets.
      await client.query(WAIT_AS_LONG_AS_IT_TAKES);
      await client.query('BEGIN');
      const copied: Record<string, number> = {};
      for (const table of TABLES) copied[table] = await copyTable(sqlite, client, table, options);
      // The queue's ids go on from the copied ones, the delivery log's too (a TEST's id is drawn from the same sequence).
      await client.query(
        "SELECT setval(pg_get_serial_sequence('deliveries', 'id'), GREATEST((SELECT max(id) FROM deliveries), (SELECT max(id) FROM delivery_log), 1))",
      );
      await client.query(
        "SELECT setval(pg_get_serial_sequence('alert_outbox', 'id'), GREATEST((SELECT max(id) FROM alert_outbox), 1))",
      );
      const { rows } = await client.query<{ value: string }>(
        `WITH ins AS (INSERT INTO cluster_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value)
         SELECT value FROM ins UNION ALL SELECT value FROM cluster_settings WHERE name = $1 LIMIT 1`,
        [MASTER_KEY_CHECK_SETTING, options.keyCheck],
      );
      if (rows[0]?.value !== options.keyCheck)
        throw new CopyRefused(
          'a serve process has started on the database with a master key of its own: copy into a new, empty database',
        );
      for (const table of TABLES) {
        const {
          rows: [n],
        } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
        if (Number(n!.n) !== copied[table])
          throw new Error(`${table}: ${copied[table]} rows copied, ${n!.n} in the database`);
      }
      await client.query('COMMIT');
      // Plans from statistics of the copied rows, not of empty tables.
      await client.query('ANALYZE');
      return copied;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  } finally {
    sqlite.close();
  }
}

async function copyTable(
  sqlite: Database.Database,
  client: pg.PoolClient,
  table: string,
  options: CopyOptions,
): Promise<number> {
  const { rows: columns } = await client.query<{ name: string; type: string }>(
    'SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position',
    [table],
  );
  const theirs = new Set(sqlite.prepare(`SELECT name FROM pragma_table_info('${table}')`).pluck().all() as string[]);
  for (const name of SQLITE_ONLY[table] ?? []) theirs.delete(name);
  if (columns.some((c) => !theirs.has(c.name)) || theirs.size !== columns.length) {
    throw new CopyRefused(
      `${table}: the SQLite file's columns (${[...theirs].join(', ')}) are not this release's (${columns.map((c) => c.name).join(', ')}): start the service on the data dir once with this release, then copy`,
    );
  }
  const convert = columns.map((c) => {
    if (c.type === 'boolean') return (v: unknown) => (v === null ? null : v !== 0);
    // A leased row was being pushed (or sent) by the stopped process: no one holds it now, and it is due when its lease
    // would have ended (a leased row's due time).
    if ((table === 'deliveries' || table === 'alert_outbox') && c.name === 'lease_until') return () => null;
    return (v: unknown) => v;
  });
  const names = columns.map((c) => `"${c.name}"`).join(', ');
  const total = sqlite.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  const perBatch = Math.max(1, Math.floor(BATCH_PARAMETERS / columns.length));
  // In the order the rows were written; a table WITHOUT ROWID (connector_pacing, rule_conditions) has no rowid, and is
  // read in its primary key's order.
  const withoutRowid = sqlite.prepare('SELECT wr FROM pragma_table_list WHERE name = ?').pluck().get(table) === 1;
  const read = sqlite.prepare(`SELECT ${names} FROM ${table}${withoutRowid ? '' : ' ORDER BY rowid'}`).raw();
  let batch: unknown[][] = [];
  let copied = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const values = batch
      .map((_, r) => `(${columns.map((_c, i) => `$${r * columns.length + i + 1}`).join(', ')})`)
      .join(', ');
    await client.query(`INSERT INTO ${table} (${names}) VALUES ${values}`, batch.flat());
    copied += batch.length;
    batch = [];
    options.progress?.(table, copied, total);
  };
  for (const row of read.iterate() as Iterable<unknown[]>) {
    batch.push(row.map((v, i) => convert[i]!(v)));
    if (batch.length === perBatch) await flush();
  }
  await flush();
  if (total === 0) options.progress?.(table, 0, 0);
  return copied;
}
