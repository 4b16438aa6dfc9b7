// The cluster's shared facilities on PostgreSQL: advisory locks, a leader per periodic job and LISTEN/NOTIFY.
// Leadership is a session-level advisory lock held on one dedicated connection: when the process dies or that
// connection is lost, PostgreSQL releases the lock and the next process to ask takes the job over. The same
// connection LISTENs; after it is lost it is opened again (with the jobs given up and the channels listened again).
import { createHash } from 'node:crypto';
import pg from 'pg';
import { connectTimeoutMs } from '../../../runtime/database-url.ts';
import { createFailureLog } from '../../../runtime/failure-log.ts';
import type { Logger } from '../../../runtime/logger.ts';
import type { Cluster, LoginFailures } from '../../contract/store.ts';
import {
  asUnavailable,
  prepareSession,
  SERVICE_APPLICATION_NAME,
  sqlOn,
  unreachable,
  WAIT_AS_LONG_AS_IT_TAKES,
} from '../db.ts';
import { PackedValues, packedText } from '../batching/packed-values.ts';

/** A 64-bit advisory lock key per name (the namespace keeps clear of keys other software may take). */
function lockKey(name: string): string {
  return createHash('sha256').update(`sensorcloud:${name}`).digest().readBigInt64BE(0).toString();
}

/** The channel's name in PostgreSQL: LISTEN takes it as an identifier, unquoted, so it is a plain lowercase word. */
const channelName = (channel: string) => {
  if (!/^[a-z][a-z0-9_]*$/.test(channel))
    throw new Error(`a cluster channel is a lowercase word, not ${JSON.stringify(channel)}`);
  return `sensorcloud_${channel}`;
};
const RECONNECT_MS = 1_000;
/** How often a process deletes the login attempts of every key whose window has passed (migration 012). */
const LOGIN_SWEEP_MS = 60_000;
/**
 * Counts an attempt under a key ($1) at $2 if fewer than $4 of its attempts are later than $3 (the others go). The
 * upsert locks the key's row and reads it as the last attempt to commit left it, so attempts racing, in any process,
 * are counted one after another and none passes the limit.
 */
const RESERVE_LOGIN = `INSERT INTO login_attempts AS a (key, times, last) VALUES ($1, ARRAY[$2::bigint], $2)
  ON CONFLICT (key) DO UPDATE
  SET times = ARRAY(SELECT t FROM unnest(a.times) AS t WHERE t > $3 UNION ALL SELECT $2::bigint ORDER BY 1), last = greatest(a.last, $2)
  WHERE (SELECT count(*) FROM unnest(a.times) AS t WHERE t > $3) < $4`;
/** The attempt whose leaving the window gives a full key ($1, limit $3) room again: the limit-th latest. */
const FILLED_AT =
  'SELECT t AS at FROM login_attempts, unnest(times) AS t WHERE key = $1 AND t > $2 ORDER BY t DESC OFFSET $3 - 1 LIMIT 1';
const noLog = () => undefined;
const PUBLISH_MANY = `SELECT pg_notify($1, ${packedText(2, 's', 'l')}) FROM unnest($3::int[], $4::int[]) WITH ORDINALITY AS u(s, l, n) ORDER BY n`;

export interface PostgresCluster extends Cluster {
  close(): Promise<void>;
}

export function createPostgresCluster(
  pool: pg.Pool,
  url: string,
  logger?: Pick<Logger, 'warn' | 'info'>,
  applicationName = SERVICE_APPLICATION_NAME,
): PostgresCluster {
  const listeners = new Map<string, Set<(payload: string) => void>>();
  const led = new Set<string>();
  let session: Promise<pg.Client> | null = null;
  let closed = false;
  /** The one timer that opens the connection again after it was lost (or a new one failed). */
  let reconnect: NodeJS.Timeout | null = null;
  // Once when the connection is lost and once when it is back, however many attempts fail in between.
  const log = {
    info: (o: object, m: string) => logger?.info(o, m),
    warn: (o: object, m: string) => logger?.warn(o, m),
    error: noLog,
  };
  const failures = createFailureLog(
    log,
    'warn',
    {
      failing: 'database: the cluster connection was lost; periodic jobs are given up until it is back',
      recovered: 'database: the cluster connection is back; periodic jobs resume',
    },
    () => performance.now(),
  );

  function connect(): Promise<pg.Client> {
    session ??= (async () => {
      const client = new pg.Client({
        connectionString: url,
        application_name: applicationName,
        connectionTimeoutMillis: connectTimeoutMs(url),
      });
      const lost = (err?: Error) => {
        if (session === null) return;
        session = null;
        led.clear();
        client.removeAllListeners();
        client.end().catch(() => undefined);
        if (closed) return;
        failures.failed(err?.message);
        reconnect ??= setTimeout(() => {
          reconnect = null;
          void connect().catch(() => undefined);
        }, RECONNECT_MS);
        reconnect.unref();
      };
      client.on('error', lost);
      client.on('end', () => lost());
      client.on('notification', (n) => {
        const fns = listeners.get(n.channel);
        if (fns) for (const fn of fns) fn(n.payload ?? '');
      });
      try {
        await client.connect();
        await prepareSession(client);
        for (const channel of listeners.keys()) await client.query(`LISTEN ${channel}`);
      } catch (err) {
        lost(err as Error);
        throw err;
      }
      failures.succeeded();
      return client;
    })();
    return session;
  }

  // The session connection's queries one at a time (a job's lock beside a LISTEN): pg 8 warns on every start when a
  // query is sent while the client runs another (DeprecationWarning), and pg 9 refuses it.
  let queue: Promise<unknown> = Promise.resolve();
  function onSession<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const run = queue.then(async () => fn(await connect()));
    queue = run.catch(() => undefined);
    return run;
  }

  let loginSweptAt = -Infinity;
  const loginFailures: LoginFailures = {
    async reserve(counts, at, since) {
      // The keys whose window has passed go once a minute (those of emails and addresses never tried again).
      if (performance.now() - loginSweptAt >= LOGIN_SWEEP_MS) {
        loginSweptAt = performance.now();
        await sqlOn(pool).run('DELETE FROM login_attempts WHERE last <= $1', [since]);
      }
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw unreachable(err, pool);
      }
      let broken = false;
      try {
        const sql = sqlOn(client);
        await client.query('BEGIN');
        for (const { key, limit } of counts) {
          // Each key's row stays locked to the end: when a later key is full, the rollback takes back what the earlier
          // ones counted, before any other attempt could see it.
          if ((await sql.run(RESERVE_LOGIN, [key, at, since, limit])) > 0) continue;
          const [full] = await sql.query<{ at: number }>(FILLED_AT, [key, since, limit]);
          await client.query('ROLLBACK');
          return { key, retryAt: (full?.at ?? since) + (at - since) };
        }
        await client.query('COMMIT');
        return null;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw asUnavailable(err, pool);
      } finally {
        client.release(broken ? true : undefined);
      }
    },
    async forgive(key, at) {
      await sqlOn(pool).run(
        'UPDATE login_attempts SET times = times[:array_position(times, $2::bigint) - 1] || times[array_position(times, $2::bigint) + 1:] WHERE key = $1 AND $2::bigint = ANY (times)',
        [key, at],
      );
    },
    async clear(key) {
      await sqlOn(pool).run('DELETE FROM login_attempts WHERE key = $1', [key]);
    },
  };

  return {
    loginFailures,
    async withLock(name, fn) {
      const client = await pool.connect();
      try {
        await client.query(WAIT_AS_LONG_AS_IT_TAKES);
        await client.query('SELECT pg_advisory_lock($1::bigint)', [lockKey(name)]);
        try {
          return await fn();
        } finally {
          await client.query('SELECT pg_advisory_unlock($1::bigint)', [lockKey(name)]);
        }
      } finally {
        // Closed, which also lets go of the lock should the unlock have failed.
        client.release(true);
      }
    },
    async tryLead(job) {
      try {
        return await onSession(async (client) => {
          if (led.has(job)) return true;
          const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [
            lockKey(`job:${job}`),
          ]);
          if (rows[0]?.ok) led.add(job);
          return led.has(job);
        });
      } catch {
        return false;
      }
    },
    async publish(channel, payloads) {
      if (payloads.length === 1) await pool.query('SELECT pg_notify($1, $2)', [channelName(channel), payloads[0]]);
      else if (payloads.length > 1) {
        // Packed (packed-values.ts): in a text array, each message of up to 8,000 bytes of JSON was escaped.
        const packed = new PackedValues();
        const at = payloads.map((p) => packed.add(p));
        await pool.query(PUBLISH_MANY, [
          channelName(channel),
          packed.bytes(),
          at.map(([start]) => start),
          at.map(([, length]) => length),
        ]);
      }
    },
    async subscribe(channel, fn) {
      const name = channelName(channel);
      let fns = listeners.get(name);
      if (!fns) {
        fns = new Set();
        listeners.set(name, fns);
        await onSession((client) => client.query(`LISTEN ${name}`));
      }
      fns.add(fn);
      return () => {
        fns.delete(fn);
      };
    },
    async serviceSessions() {
      const { rows } = await pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
        [SERVICE_APPLICATION_NAME],
      );
      return rows[0]!.n;
    },
    async settle(name, value) {
      // Two at once: the second's insert waits for the first's commit and does nothing, but its statement's snapshot
      // predates that row; asked again, it sees it.
      for (;;) {
        const { rows } = await pool.query<{ value: string }>(
          `WITH ins AS (INSERT INTO cluster_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value)
           SELECT value FROM ins UNION ALL SELECT value FROM cluster_settings WHERE name = $1 LIMIT 1`,
          [name, value],
        );
        if (rows[0]) return rows[0].value;
      }
    },
    async close() {
      closed = true;
      if (reconnect !== null) clearTimeout(reconnect);
      const s = session;
      session = null;
      led.clear();
      if (s) await s.then((c) => c.end()).catch(() => undefined);
    },
  };
}
