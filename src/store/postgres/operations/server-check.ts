// What a start checks of the PostgreSQL server before it takes the migration lock, each refused in one line that says
// what to do (a StartupError, by open.ts):
//
// - The server is PostgreSQL 12 or later: the migrations set table and function options that came with 12
//   (vacuum_truncate, plan_cache_mode), and on an older server the first start would fail inside a migration with
//   PostgreSQL's own error. The tests run against 15; 12 to 14 start with a warning that they are not tested.
// - The database holds text as UTF-8, and has ICU's root collation: names and labels are text in any script, and the
//   device search lower-cases with that collation. On a LATIN1 database a label in another script was refused
//   with a 400 naming the NUL character (PostgreSQL's "untranslatable character"), on SQL_ASCII every search
//   answered 500 (no ICU collation for that encoding), and a server built without ICU would do the same.
// - The migrations' table, if there is one, is the service's: in a database another application (Rails, say) had
//   made its own schema_migrations in, the service read that one's versions, said it was upgrading the schema, and
//   failed with "relation … already exists".
// - The service's tables, once made, belong to the user this process connects as (or to a role it acts as): each
//   upgrade's migrations alter them, which only their owner may. A first start made as another user (postgres)
//   left every later start of the service's own user failing with "permission denied for table schema_migrations",
//   and a hint to grant CREATE, which did not help.
// - Each connection stays one PostgreSQL session from its start to its end: the named prepared statements are
//   prepared once per session, the cluster's LISTEN connection hears only its own session's notifications, and the
//   advisory locks (the migration lock, each periodic job's leader) belong to a session. A pooler that hands one
//   client's statements to whichever server session is free (PgBouncer with pool_mode = transaction or statement,
//   or the "pooled" address of many hosted databases) breaks all three: behind PgBouncer in transaction mode the
//   service started and then failed at random ("prepared statement … already exists"), its streams missed other
//   processes' events, and an advisory lock could stay with a server session no process owned.
// - This machine's clock agrees with the database server's (clock-check.ts).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../../../runtime/logger.ts';
import { anotherApplication } from './another-application.ts';
import { CLOCK_REFUSE_MS, CLOCK_WARN_MS, clockDifferenceMs, describeDifference } from './clock-check.ts';

const CHANNEL = 'sensorcloud_session_check';

/** A start-up refusal; `code` names it in the one-line message. */
const refusal = (code: string, message: string): Error => Object.assign(new Error(message), { code });

/** The start-up error of a connection that does not stay one session. */
const notOneSession = (what: string): Error =>
  refusal(
    'SESSION_NOT_KEPT',
    `${what}: a pooler in transaction or statement mode is between this process and PostgreSQL (such as PgBouncer with pool_mode = transaction, or a hosted database's pooled address). The service keeps state in each session (prepared statements, LISTEN, advisory locks): connect to PostgreSQL directly, or through a pooler in session mode`,
  );

/** The database's encoding and whether ICU's root collation is there for it (pg_collation's -1: any encoding). */
const TEXT_SETTINGS = `SELECT current_database() AS database, current_setting('server_encoding') AS encoding,
  EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu' AND collencoding IN (-1, pg_char_to_encoding(current_setting('server_encoding')))) AS icu`;

/**
 * The migrations' table, if there is one yet: its owner, whether this user may act as it, and whether it is the
 * service's (another application's, such as Rails's, has no applied_time).
 */
const MIGRATIONS_TABLE = `SELECT current_user AS me, t.tableowner AS owner, pg_has_role(current_user, t.tableowner, 'USAGE') AS may,
  EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = format('%I.%I', t.schemaname, t.tablename)::regclass AND a.attname = 'applied_time' AND NOT a.attisdropped) AS ours
  FROM pg_tables t WHERE t.schemaname = current_schema() AND t.tablename = 'schema_migrations'`;

async function checkMigrationsTable(client: pg.Client): Promise<void> {
  const row = (await client.query<{ me: string; owner: string; may: boolean; ours: boolean }>(MIGRATIONS_TABLE))
    .rows[0];
  if (row && !row.may) {
    throw refusal(
      'NOT_OWNER',
      `the service's tables in this database belong to the user ${row.owner}, and this process connects as ${row.me}; its upgrades alter them, which only their owner may: connect as ${row.owner}, or make ${row.me} their owner (or a member of ${row.owner})`,
    );
  }
  if (row && !row.ours)
    throw refusal('NOT_OURS', anotherApplication("its schema_migrations table is not the service's"));
}

/** The oldest server the migrations run on, and the one the tests run against (server_version_num). */
const OLDEST_SERVER = 120000;
const TESTED_SERVER = 150000;

/** Refuses a server older than OLDEST_SERVER; warns of one older than TESTED_SERVER. */
export async function checkVersion(client: Pick<pg.Client, 'query'>, logger?: Pick<Logger, 'warn'>): Promise<void> {
  const { num, version } = (
    await client.query<{ num: number; version: string }>(
      "SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS version",
    )
  ).rows[0]!;
  const shown = version.split(' ')[0];
  if (num < OLDEST_SERVER) {
    throw refusal(
      'SERVER_VERSION',
      `the database server runs PostgreSQL ${shown}, and the service needs 12 or later (its tests run against 15): upgrade the server (pg_upgrade), or point the URL at a newer one`,
    );
  }
  if (num < TESTED_SERVER) {
    logger?.warn(
      { serverVersion: shown },
      `database: the server runs PostgreSQL ${shown}, which the service starts on but is not tested with (its tests run against 15); upgrade the server when you can`,
    );
  }
}

async function checkText(client: pg.Client): Promise<void> {
  const { database, encoding, icu } = (
    await client.query<{ database: string; encoding: string; icu: boolean }>(TEXT_SETTINGS)
  ).rows[0]!;
  if (encoding !== 'UTF8') {
    throw refusal(
      'ENCODING',
      `the database ${database} holds text as ${encoding}, and the service keeps text in any script as UTF-8: create a UTF-8 database (createdb --encoding=UTF8 --locale=C --template=template0 NAME) and point the URL at it`,
    );
  }
  if (!icu) {
    throw refusal(
      'NO_ICU',
      `the database ${database} has no ICU root collation (und-x-icu), which the device search uses to lower-case text in any script: this PostgreSQL was built without ICU, or the collation was dropped; use a build with ICU (Debian's packages and the official container images have it)`,
    );
  }
}

async function checkClock(client: pg.Client, now: () => number, logger?: Pick<Logger, 'warn'>): Promise<void> {
  const ms = await clockDifferenceMs(client, now);
  if (Math.abs(ms) > CLOCK_REFUSE_MS) {
    throw refusal(
      'CLOCK',
      `this machine's clock is ${describeDifference(ms)} the database server's: the cluster's processes compare the times they write (the end of a row's lease among them), and with clocks this far apart a row still being pushed looks free to another process; set the clock that is wrong right (NTP), this machine's or the database server's, and start again`,
    );
  }
  if (Math.abs(ms) > CLOCK_WARN_MS) {
    logger?.warn(
      { differenceMs: Math.round(ms) },
      `database: this machine's clock is ${describeDifference(ms)} the database server's; keep every machine's clock in sync (NTP), the database server's included`,
    );
  }
}

/**
 * The version, the text settings, the tables' owner and the clock; then two connections, one of the pool's and one
 * made as the pool makes them: one LISTENs, the other sends it a notification. The same server process behind both
 * is a pooler for certain; a notification that never arrives (a pooler that rotates its server sessions) is refused
 * too, after `timeoutMs`.
 */
export async function checkServer(
  pool: pg.Pool,
  timeoutMs: number,
  now: () => number,
  logger?: Pick<Logger, 'warn'>,
): Promise<void> {
  // Not the pool's, which may have room for one connection only; closed afterwards, with its LISTEN.
  const listener = new pg.Client(pool.options);
  listener.on('error', () => undefined);
  let sender: pg.PoolClient | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await listener.connect();
    await checkVersion(listener, logger);
    await checkText(listener);
    await checkMigrationsTable(listener);
    await checkClock(listener, now, logger);
    const token = randomUUID();
    const arrived = new Promise<boolean>((resolve) => {
      listener.on('notification', (n) => {
        if (n.channel === CHANNEL && n.payload === token) resolve(true);
      });
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    await listener.query(`LISTEN ${CHANNEL}`);
    const listening = (await listener.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    sender = await pool.connect();
    const sending = (
      await sender.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_notify($1, $2)', [CHANNEL, token])
    ).rows[0]!.pid;
    if (listening === sending)
      throw notOneSession('two connections of this process were served by one PostgreSQL session');
    if (!(await arrived)) {
      throw notOneSession(
        `a notification this process sent did not reach its own listening connection within ${timeoutMs / 1000} s`,
      );
    }
  } finally {
    clearTimeout(timer);
    sender?.release();
    await listener.end().catch(() => undefined);
  }
}
