// The engine's periodic housekeeping: the 12-hour drop of unacknowledged rows (contract §6.5) and metric buckets
// past the 3-hour window, in bounded batches, so one pass never holds the writer for long.
import type { Repos } from '../store/contract/store.ts';
import { dropExpired } from './claim.ts';
import { pruneMetrics, series } from './metrics.ts';

/** Inside the caller's transaction, at `now` (micros); returns the rows dropped. */
export async function dropExpiredAndPrune(tx: Repos, now: number): Promise<number> {
  let dropped = 0;
  for (let i = 0; i < 100; i++) {
    const n = await dropExpired(tx, now);
    dropped += n;
    if (n < 10_000) break;
  }
  if (dropped > 0) await tx.connectorMetrics.addCounters({ [series.deliveries('dropped')]: dropped });
  await pruneMetrics(tx, now);
  return dropped;
}
