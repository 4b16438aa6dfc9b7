// Vacuuming the delivery queue. Every queued row is deleted within moments (an acknowledgement), so the table is
// small but its indexes fill with entries of deleted rows: ~4,500 a second at one process's full rate. The count of
// a connector's rows in flight (migration 003), made at every write of leased rows and every claim, walked all of
// them until a vacuum removed them (22,000 dead entries and 2.8 ms per count after five seconds of load; autovacuum
// visits a table at most once a minute by default). So the cluster vacuums the table itself: once a second, the
// process that leads the job looks at the table's dead rows (every process's deletes count there) and vacuums it
// when there are enough of them.
//
// A vacuum never gives the table's space back (see VACUUM below), so a backlog leaves the table as large as it made
// it: 250 MB after 400,000 rows, and then delivery to 32 connectors at endpoints answering after 500 ms ran at
// 25-68 % of its rate, PostgreSQL spending 3-11 times the CPU per push (docs/benchmarks-log.md), until the table was
// rewritten (`VACUUM FULL`: 96 ms for the queue nearly empty). So once a minute the leader also looks at
// the table's size, and rewrites a table that is large and nearly empty. The rewrite holds the table's lock, and
// every statement of the queue waits for it; it is only tried when the rows left are few (the copy is short), and
// gives up at once when it cannot have the lock soon (a long transaction on the queue), to try again later.
import type pg from 'pg';
import type { Logger } from '../../../runtime/logger.ts';
import type { Cluster } from '../../contract/store.ts';

const EVERY_MS = 1_000;
/** Dead rows before a vacuum is worth it. */
const MIN_DEAD = 1_000;
const DEAD = "SELECT n_dead_tup::int AS n FROM pg_stat_user_tables WHERE relid = 'deliveries'::regclass";
// INDEX_CLEANUP on: the dead index entries are what matters here, and on its own (AUTO) vacuum may leave them when
// few heap pages hold dead rows. No truncation (migration 003 also sets it for autovacuum): the table's last pages
// empty all the time, and truncating them takes a lock that stops every write of the table. SKIP_LOCKED: an
// autovacuum at work already does the job.
const VACUUM = 'VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false) deliveries';

export interface CompactionOptions {
  /** How often the leader looks at the table's size, ms. */
  everyMs: number;
  /** A table this large (heap bytes) or larger may be rewritten... */
  minBytes: number;
  /** ...when it holds at most this many rows... */
  maxRows: number;
  /** ...taking at most this many bytes of it per row: a table that size holds its rows several times over. */
  maxBytesPerRow: number;
}

const COMPACTION: CompactionOptions = {
  everyMs: 60_000,
  minBytes: 64 * 2 ** 20,
  maxRows: 50_000,
  maxBytesPerRow: 8 * 1024,
};
const SIZE = "SELECT pg_relation_size('deliveries')::bigint AS bytes";
// Counted exactly, but never past maxRows + 1: on a nearly empty table this reads it once (~0.1 s for 250 MB).
const ROWS = 'SELECT count(*)::int AS n FROM (SELECT 1 FROM deliveries LIMIT $1) r';
const LOCK_WAIT = "SET lock_timeout = '200ms'";
const REWRITE = 'VACUUM FULL deliveries';

export interface QueueVacuum {
  stop(): Promise<void>;
}

export function startQueueVacuum(
  pool: pg.Pool,
  cluster: Pick<Cluster, 'tryLead'>,
  logger?: Pick<Logger, 'warn' | 'info'>,
  compaction: CompactionOptions = COMPACTION,
): QueueVacuum {
  let running: Promise<void> | null = null;
  // Real time, not the service's clock: this paces work on the database, which only the wall can tell.
  let lastSizeCheck = performance.now();
  /** Told once: the rewrite did nothing (the table is not this user's). */
  let refused = false;
  const pass = async () => {
    if (!(await cluster.tryLead('queue-vacuum'))) return;
    const { rows } = await pool.query<{ n: number }>(DEAD);
    if ((rows[0]?.n ?? 0) >= MIN_DEAD) await pool.query(VACUUM);
    if (performance.now() - lastSizeCheck >= compaction.everyMs) {
      lastSizeCheck = performance.now();
      await compact();
    }
  };
  const compact = async () => {
    const bytes = Number((await pool.query<{ bytes: string }>(SIZE)).rows[0]!.bytes);
    if (bytes < compaction.minBytes) return;
    const n = (await pool.query<{ n: number }>(ROWS, [compaction.maxRows + 1])).rows[0]!.n;
    if (n > compaction.maxRows || bytes < n * compaction.maxBytesPerRow) return;
    const client = await pool.connect();
    const start = performance.now();
    let broken = false;
    try {
      await client.query(LOCK_WAIT);
      await client.query(REWRITE);
      const after = Number((await client.query<{ bytes: string }>(SIZE)).rows[0]!.bytes);
      const figures = { rows: n, bytesBefore: bytes, bytesAfter: after, ms: Math.round(performance.now() - start) };
      if (after < bytes) {
        logger?.info(figures, "database: the delivery queue, left large by a backlog, was rewritten to its rows' size");
      } else if (!refused) {
        // PostgreSQL skips the table with a warning of its own, not an error, when this user does not own it.
        refused = true;
        logger?.warn(
          figures,
          "database: the delivery queue, left large by a backlog, could not be rewritten: the service's database user must own the table deliveries (see docs/deployment.md)",
        );
      }
    } catch (err) {
      // 55P03: the lock was not had in time; the next look tries again.
      if ((err as { code?: string }).code !== '55P03') throw err;
    } finally {
      try {
        await client.query('RESET lock_timeout');
      } catch {
        broken = true;
      }
      client.release(broken ? true : undefined);
    }
  };
  const timer = setInterval(() => {
    if (running !== null) return;
    running = pass()
      .catch((err: unknown) => {
        logger?.warn({ err: (err as Error).message }, 'database: vacuuming the delivery queue failed; autovacuum will');
      })
      .finally(() => {
        running = null;
      });
  }, EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
