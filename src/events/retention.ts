// History retention (contract §7 #6): events stored longer ago than SENSORCLOUD_EVENT_RETENTION are deleted in
// small batches, yielding to the event loop between batches, so a large backlog never stalls API requests
// (SQLite has one writer; each batch is a short statement of its own). The same pass forgets the JWT-bearer assertion
// ids past their time (auth/assertion-ids.ts).
import type { Config } from '../config.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { createPeriodic } from '../runtime/periodic.ts';
import { pruneAssertionIds } from '../auth/assertion-ids.ts';
import { leadsJob } from '../store/jobs/cluster.ts';
import type { Store } from '../store/contract/store.ts';

export const DEFAULT_PRUNE_BATCH_SIZE = 1000;
/** How often the background pass runs; retention is counted in days, so a minute is plenty fine-grained. */
export const DEFAULT_PRUNE_INTERVAL_MS = 60_000;

type RetentionDeps = { store: Store; clock: Clock; config: Pick<Config, 'eventRetentionSeconds'>; logger: Logger };

export interface PruneOptions {
  /** Rows per delete statement. */
  batchSize?: number;
  /** Checked between batches; true ends the pass early (service shutdown). */
  shouldStop?: () => boolean;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Deletes every event stored before now − retention. Returns how many were deleted. */
export async function pruneOnce(deps: RetentionDeps, options: PruneOptions = {}): Promise<number> {
  const batchSize = options.batchSize ?? DEFAULT_PRUNE_BATCH_SIZE;
  const cutoff = nowMicros(deps) - Math.floor(deps.config.eventRetentionSeconds * 1_000_000);
  let total = 0;
  // Ends when a batch comes back short: rows stored from now on are never older than the fixed cutoff.
  while (!options.shouldStop?.()) {
    const deleted = await deps.store.events.deleteStoredBefore(cutoff, batchSize);
    total += deleted;
    if (deleted < batchSize) break;
    await yieldToEventLoop();
  }
  return total;
}

export interface RetentionTimer {
  /** Stops the timer and waits for a pass in progress to end (it stops after its current batch). */
  stop(): Promise<void>;
}

/** Runs pruneOnce at once and then every `intervalMs`, never overlapping; the timer does not keep the process alive. */
export function startRetention(
  deps: RetentionDeps,
  options: { intervalMs?: number; batchSize?: number } = {},
): RetentionTimer {
  let stopped = false;
  const periodic = createPeriodic(
    async () => {
      if (!(await leadsJob(deps.store, 'retention'))) return;
      const deleted = await pruneOnce(deps, { batchSize: options.batchSize, shouldStop: () => stopped });
      if (deleted > 0) deps.logger.info({ deleted }, 'event history: pruned events past retention');
      // The same leader's minute forgets the assertion ids past their time (auth/assertion-ids.ts): a few rows a minute.
      await pruneAssertionIds(deps);
    },
    deps.logger,
    { failing: 'event history: pruning failed; will retry', recovered: 'event history: pruning works again' },
    () => deps.clock.now(),
  );
  periodic.start(options.intervalMs ?? DEFAULT_PRUNE_INTERVAL_MS);
  return {
    async stop() {
      stopped = true;
      await periodic.stop();
    },
  };
}
