// Each connection of this process must stay one PostgreSQL session from its start to its end: the named prepared
// statements are prepared once per session, the cluster's LISTEN connection hears only its own session's
// notifications, and the advisory locks (the migration lock, each periodic job's leader) belong to a session. A
// pooler that hands one client's statements to whichever server session is free — PgBouncer with pool_mode =
// transaction or statement, or the "pooled" address of many hosted databases — breaks all three: behind PgBouncer
// in transaction mode the service started and then failed at random ("prepared statement … already exists"), its
// streams missed other processes' events, and an advisory lock could stay with a server session no process owned.
// So it is checked once at start-up, before the migration lock is taken, and such a start refused.
import { randomUUID } from 'node:crypto';
import pg from 'pg';

const CHANNEL = 'sensorcloud_session_check';

/** The start-up error of a connection that does not stay one session; `code` names it in the one-line message. */
function notOneSession(what: string): Error {
  return Object.assign(
    new Error(`${what}: a pooler in transaction or statement mode is between this process and PostgreSQL (such as PgBouncer with pool_mode = transaction, or a hosted database's pooled address). The service keeps state in each session (prepared statements, LISTEN, advisory locks): connect to PostgreSQL directly, or through a pooler in session mode`),
    { code: 'SESSION_NOT_KEPT' },
  );
}

/**
 * Two connections, one of the pool's and one made as the pool makes them: one LISTENs, the other sends it a
 * notification. The same server process behind both is a pooler for certain; a notification that never arrives (a
 * pooler that rotates its server sessions) is refused too, after `timeoutMs`.
 */
export async function checkSessionsKept(pool: pg.Pool, timeoutMs: number): Promise<void> {
  // Not the pool's, which may have room for one connection only; closed afterwards, with its LISTEN.
  const listener = new pg.Client(pool.options);
  listener.on('error', () => undefined);
  let sender: pg.PoolClient | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    await listener.connect();
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
    const sending = (await sender.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_notify($1, $2)', [CHANNEL, token])).rows[0]!.pid;
    if (listening === sending) throw notOneSession('two connections of this process were served by one PostgreSQL session');
    if (!(await arrived)) {
      throw notOneSession(`a notification this process sent did not reach its own listening connection within ${timeoutMs / 1000} s`);
    }
  } finally {
    clearTimeout(timer);
    sender?.release();
    await listener.end().catch(() => undefined);
  }
}
