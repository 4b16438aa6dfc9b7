// The engine's periodic housekeeping: the 12-hour drop of unacknowledged rows (contract §6.5) and metric buckets
// past the 3-hour window, in bounded batches, so one pass never holds the writer for long. The same pass prunes the
// delivery log, in transactions of its own (delivery-log.ts pruneDeliveryLog).
import type { Repos } from '../store/contract/store.ts';
import { dropExpired } from './claim.ts';
import { pruneMetrics, series } from './metrics.ts';

/**
 * Inside the caller's transaction, at `now` (micros); returns the rows dropped. With `logExpired` (the delivery log
 * is on), the dropped rows are logged EXPIRED.
 */
export async function dropExpiredAndPrune(tx: Repos, now: number, logExpired = false): Promise<number> {
  let dropped = 0;
  // Logging what it drops makes a piece 2-3 times as long (45-60 ms of SQLite's writer per 10,000 rows against
  // 18 ms): fewer pieces per pass keep a pass about as long; the rest goes at the next pass (claims skip them).
  const pieces = logExpired ? 25 : 100;
  for (let i = 0; i < pieces; i++) {
    const n = await dropExpired(tx, now, 10_000, logExpired);
    dropped += n;
    if (n < 10_000) break;
  }
  if (dropped > 0) await tx.connectorMetrics.addCounters({ [series.deliveries('dropped')]: dropped });
  await pruneMetrics(tx, now);
  return dropped;
}
