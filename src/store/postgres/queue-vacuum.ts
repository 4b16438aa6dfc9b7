// Vacuuming the delivery queue. Every queued row is deleted within moments (an acknowledgement), so the table is
// small but its indexes fill with entries of deleted rows: ~4,500 a second at one process's full rate. The count of
// a connector's rows in flight (migration 003), made at every insert of leased rows and every claim, walked all of
// them until a vacuum removed them (22,000 dead entries and 2.8 ms per count after five seconds of load; autovacuum
// visits a table at most once a minute by default). So the store vacuums the table itself, once a second while
// rows are being queued; SKIP_LOCKED passes if another process is vacuuming it already.
import type pg from 'pg';
import type { Logger } from '../../runtime/logger.ts';

const EVERY_MS = 1_000;
// INDEX_CLEANUP on: the dead index entries are what matters here, and on its own (AUTO) vacuum may leave them when
// few heap pages hold dead rows. No truncation (migration 003 also sets it for autovacuum): the table's last pages
// empty all the time, and truncating them takes a lock that stops every write of the table.
const VACUUM = 'VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false) deliveries';
/** Rows queued since the last vacuum before the next one is worth it. */
const MIN_ROWS = 1_000;

export interface QueueVacuum {
  /** Rows were queued (counted toward the next vacuum). */
  queued(n: number): void;
  stop(): Promise<void>;
}

export function startQueueVacuum(pool: pg.Pool, logger?: Pick<Logger, 'warn'>): QueueVacuum {
  let rows = 0;
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    if (running !== null || rows < MIN_ROWS) return;
    rows = 0;
    running = pool.query(VACUUM).then(
      () => undefined,
      (err: unknown) => logger?.warn({ err: (err as Error).message }, 'database: vacuuming the delivery queue failed; autovacuum will'),
    ).finally(() => {
      running = null;
    });
  }, EVERY_MS);
  timer.unref();
  return {
    queued(n) {
      rows += n;
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
