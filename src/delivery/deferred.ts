// Replayed rows wait deferred (DEFERRED_DUE) and are made due a piece at a time, so a replay never starves the
// connector's live events. Claims take due rows in due-time order: 100,000 replayed rows all due at once put every
// event published after them behind the whole replay (tens of seconds at this machine's rates), and kept the
// hand-off from attempting fresh rows at once (a connector with rows due hands off nothing). Deferred rows are
// never due; each turn, a connector with deferred rows gets as many made due now as keep its due rows at
// `keepDue`: a live event queued meanwhile waits behind at most that many, and the replay drains as fast as
// claims take them. The rows are durable and expire 12 hours after their enqueue like any other; on a store
// several processes share every engine makes them due (a piece made due twice over is only a larger piece).
import { nowMicros, type Clock } from '../runtime/clock.ts';
import { createFailureLog } from '../runtime/failure-log.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Store } from '../store/contract/store.ts';

/**
 * Due rows a connector with deferred rows is topped up to: what a live event may wait behind (~0.5 s at this
 * machine's single-connector rates), and enough that claims never run dry between two pieces (pump.ts).
 */
export const DEFERRED_KEEP_DUE = 2048;

export interface DeferredRelease {
  /**
   * Makes due a piece of each connector's deferred rows; resolves with how many it made due. The connectors with
   * deferred rows are looked for at most once a second, or now with `rescan` (runOnce: all that is there now).
   */
  release(rescan?: boolean): Promise<number>;
}

/** Connectors with deferred rows are looked for again after this long (micros): a replay may come from any process. */
const RESCAN_MICROS = 1_000_000;

export function createDeferredRelease(deps: {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Due rows a connector is topped up to. */
  keepDue: number;
}): DeferredRelease {
  const { store } = deps;
  let known: string[] = [];
  let scannedAt = -Infinity;
  let running: Promise<number> | null = null;
  const failures = createFailureLog(
    deps.logger,
    'error',
    {
      failing: 'delivery engine: making replayed rows due failed',
      recovered: 'delivery engine: making replayed rows due works again',
    },
    () => deps.clock.now(),
  );

  async function releaseAll(rescan: boolean): Promise<number> {
    const now = nowMicros(deps);
    if (rescan || now - scannedAt >= RESCAN_MICROS) {
      known = await store.deliveries.connectorsWithDeferred();
      scannedAt = now;
    }
    let made = 0;
    for (const id of known) {
      made += await store.transaction((tx) => tx.deliveries.releaseDeferred(id, now, deps.keepDue));
    }
    return made;
  }

  return {
    release(rescan = false) {
      running ??= releaseAll(rescan)
        .then(
          (n) => {
            failures.succeeded();
            return n;
          },
          (err: unknown) => {
            failures.failed(err);
            return 0;
          },
        )
        .finally(() => {
          running = null;
        });
      return running;
    },
  };
}
