// Vacuuming the delivery queue. Every queued row is deleted within moments (an acknowledgement), so the table is
// small but its indexes fill with entries of deleted rows: ~4,500 a second at one process's full rate. The count of
// a connector's rows in flight (migration 003), made at every write of leased rows and every claim, walked all of
// them until a vacuum removed them (22,000 dead entries and 2.8 ms per count after five seconds of load; autovacuum
// visits a table at most once a minute by default). So the cluster vacuums the table itself: once a second, the
// process that leads the job looks at the table's dead rows (every process's deletes count there) and vacuums it
// when there are enough of them.
import type pg from 'pg';
import type { Logger } from '../../runtime/logger.ts';
import type { Cluster } from '../store.ts';

const EVERY_MS = 1_000;
/** Dead rows before a vacuum is worth it. */
const MIN_DEAD = 1_000;
const DEAD = "SELECT n_dead_tup::int AS n FROM pg_stat_user_tables WHERE relid = 'deliveries'::regclass";
// INDEX_CLEANUP on: the dead index entries are what matters here, and on its own (AUTO) vacuum may leave them when
// few heap pages hold dead rows. No truncation (migration 003 also sets it for autovacuum): the table's last pages
// empty all the time, and truncating them takes a lock that stops every write of the table. SKIP_LOCKED: an
// autovacuum at work already does the job.
const VACUUM = 'VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false) deliveries';

export interface QueueVacuum {
  stop(): Promise<void>;
}

export function startQueueVacuum(pool: pg.Pool, cluster: Pick<Cluster, 'tryLead'>, logger?: Pick<Logger, 'warn'>): QueueVacuum {
  let running: Promise<void> | null = null;
  const pass = async () => {
    if (!(await cluster.tryLead('queue-vacuum'))) return;
    const { rows } = await pool.query<{ n: number }>(DEAD);
    if ((rows[0]?.n ?? 0) >= MIN_DEAD) await pool.query(VACUUM);
  };
  const timer = setInterval(() => {
    if (running !== null) return;
    running = pass().catch((err: unknown) => {
      logger?.warn({ err: (err as Error).message }, 'database: vacuuming the delivery queue failed; autovacuum will');
    }).finally(() => {
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
