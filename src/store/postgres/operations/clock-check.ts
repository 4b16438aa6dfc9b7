// The processes of a cluster write times from their own machines' clocks into shared rows: a lease's end, a retry's
// due time, an event's enqueue time (the 12-hour expiry). Another process reads them against its clock: when its
// clock runs ahead of the one that leased a row by the lease's length (15 s at least), that row looks free while its
// attempt is still under way, and it is pushed twice and counted out of the connector's limit. So each process
// compares its clock with the database server's, the one clock they all reach: at start-up, where a gross
// difference refuses the start, and once a minute after, where a difference is a warning until it is gone.
import type pg from 'pg';
import type { Logger } from '../../../runtime/logger.ts';

/** A difference the operator is told of (NTP keeps machines within milliseconds). */
export const CLOCK_WARN_MS = 1_000;
/** A difference a start is refused for: two thirds of the shortest lease. */
export const CLOCK_REFUSE_MS = 10_000;
const CHECK_EVERY_MS = 60_000;

/**
 * How far this machine's clock is from the database server's, ms (positive: this one is ahead), less the doubt the
 * round trip leaves (0 when the difference is within it).
 */
export async function clockDifferenceMs(db: Pick<pg.Pool | pg.Client, 'query'>, now: () => number): Promise<number> {
  const before = now();
  const { rows } = await db.query<{ ms: number }>('SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS ms');
  const after = now();
  const difference = (before + after) / 2 - rows[0]!.ms;
  const doubt = (after - before) / 2;
  return Math.abs(difference) <= doubt ? 0 : difference - Math.sign(difference) * doubt;
}

/** In words: "2.3 s ahead of" or "behind". */
export const describeDifference = (ms: number): string =>
  `${(Math.abs(ms) / 1000).toFixed(1)} s ${ms > 0 ? 'ahead of' : 'behind'}`;

/** Checks once a minute; a difference over CLOCK_WARN_MS is a warning at each check, and its end one info line. */
export function startClockWatch(
  pool: pg.Pool,
  logger: Pick<Logger, 'info' | 'warn'> | undefined,
  now: () => number,
  everyMs = CHECK_EVERY_MS,
): { stop(): void } {
  let off = false;
  const timer = setInterval(() => {
    clockDifferenceMs(pool, now).then(
      (ms) => {
        if (Math.abs(ms) > CLOCK_WARN_MS) {
          off = true;
          logger?.warn(
            { differenceMs: Math.round(ms) },
            `database: this machine's clock is ${describeDifference(ms)} the database server's; the cluster's processes compare the times they write (leases, retries), so a row may be pushed twice or wait longer: keep every machine's clock in sync (NTP), the database server's included`,
          );
        } else if (off) {
          off = false;
          logger?.info(
            { differenceMs: Math.round(ms) },
            "database: this machine's clock agrees with the database server's again",
          );
        }
        // A failed read is the database's outage, told elsewhere.
      },
      () => undefined,
    );
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
