// The engine's reads of the queue, for rows not handed off (retries, backlogs, `:sync`): claims of due rows within the
// free slots (claim.ts), each settling the backlog by what it found (backlog.ts), and the housekeeping pass when it
// is due (housekeeping.ts, and the delivery log's pruning, delivery-log.ts; one process of a cluster runs it). In the background one pass runs at a time, again if it
// was woken meanwhile; runOnce claims until nothing due is left (tests, tools).
import { nowMicros, type Clock } from '../runtime/clock.ts';
import { createFailureLog } from '../runtime/failure-log.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Store } from '../store/contract/store.ts';
import { leadsJob } from '../store/jobs/cluster.ts';
import type { Backlog } from './backlog.ts';
import { claimDue, type ClaimedDelivery, type InFlightLimits } from './claim.ts';
import { deliveryLogOn, pruneDeliveryLog, type DeliveryLogOptions } from './delivery-log.ts';
import type { DeferredRelease } from './deferred.ts';
import { PaceMemo } from './pacing.ts';
import { dropExpiredAndPrune } from './housekeeping.ts';
import type { RunReport } from './outcomes.ts';
import type { Slots } from './slots.ts';

export interface PumpDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  slots: Slots;
  backlog: Backlog;
  /** How long a claimed row is leased, micros. */
  leaseMicros: number;
  /** On a store several processes share: the cluster's limits claims are made under. */
  cluster: InFlightLimits | null;
  /** Dropping expired rows and pruning metrics and the delivery log, at most every this many ms in the background. */
  housekeepingIntervalMs: number;
  /** Makes replayed rows due a piece at a time (deferred.ts), at most every RELEASE_EVERY_MS. */
  deferred?: DeferredRelease;
  /** The delivery log: whether drops are logged, and its bounds. */
  deliveryLog: DeliveryLogOptions;
  /** Takes a slot for each claimed row and attempts it (attempts.ts). */
  launch(items: ClaimedDelivery[]): Array<Promise<RunReport>>;
  /** Whether the engine runs (started and not stopping): a wake does nothing otherwise. */
  taking(): boolean;
}

export interface Pump {
  /** Asks for a background pass in the next loop turn (the asks of one turn make one pass). */
  wake(): void;
  /** Wakes only if a connector has a backlog: fresh rows go straight to attempts, the queue needs no read for them. */
  wakeForBacklog(): void;
  /** Claims and attempts everything due now, claiming again as attempts end; resolves once all are recorded. */
  runOnce(): Promise<RunReport>;
  /** Resolves when the background pass under way, if any, is over. */
  finished(): Promise<void>;
  /** Stopped: the next start's first pass releases the leases left over again. */
  reset(): void;
}

/**
 * How often the background loop makes a piece of replayed rows due (ms): with DEFERRED_KEEP_DUE rows a piece, up to
 * ~20,000 rows a second per connector, above what one connector's attempt slots push here.
 */
const RELEASE_EVERY_MS = 100;

export function createPump(deps: PumpDeps): Pump {
  const { store, slots, backlog } = deps;
  // Every poll fails while the database is unreachable: logged when that starts and when it ends.
  const claimFailures = createFailureLog(
    deps.logger,
    'error',
    {
      failing: 'delivery engine: claiming due deliveries failed',
      recovered: 'delivery engine: claiming due deliveries works again',
    },
    () => deps.clock.now(),
  );
  const pruneFailures = createFailureLog(
    deps.logger,
    'warn',
    {
      failing: 'delivery engine: pruning the delivery log failed; it is tried again at the next housekeeping pass',
      recovered: 'delivery engine: pruning the delivery log works again',
    },
    () => deps.clock.now(),
  );
  const logging = deliveryLogOn(deps.deliveryLog);
  let rotation = 0;
  let pumping: Promise<void> | null = null;
  let again = false;
  let wakeScheduled = false;
  let lastHousekeeping = -Infinity;
  let lastRelease = -Infinity;
  let leasesReleased = false;
  const pace = new PaceMemo();

  async function claim(): Promise<ClaimedDelivery[]> {
    const seen = backlog.snapshot();
    const result = await claimDue(store, {
      now: nowMicros(deps),
      leaseMicros: deps.leaseMicros,
      capacityOf: slots.capacityOf,
      total: slots.room(),
      suspect: slots.suspect,
      suspectLeft: slots.options.suspectTotal - Math.max(slots.inFlightSuspect, slots.suspectHeld()),
      rotation: rotation++,
      cluster: deps.cluster,
      logDrops: logging,
      pace,
    });
    if (result.due !== null) backlog.settle(seen, result.due, result.drained);
    return result.items;
  }

  async function housekeeping(): Promise<number> {
    lastHousekeeping = deps.clock.now();
    const now = nowMicros(deps);
    const dropped = await store.transaction((tx) => dropExpiredAndPrune(tx, now, logging));
    // In transactions of its own, a bounded piece each; a failure is the next pass's to try again.
    try {
      await pruneDeliveryLog(store, now, deps.deliveryLog);
      pruneFailures.succeeded();
    } catch (err) {
      pruneFailures.failed(err);
    }
    return dropped;
  }

  async function runPasses(): Promise<void> {
    do {
      again = false;
      try {
        if (!leasesReleased) {
          leasesReleased = true;
          // A store that one process owns: a lease left over from before a restart belongs to no live attempt.
          if (store.exclusive) await store.deliveries.releaseLeases(nowMicros(deps));
        }
        if (deps.clock.now() - lastHousekeeping >= deps.housekeepingIntervalMs) {
          if (await leadsJob(store, 'delivery-housekeeping')) await housekeeping();
          else lastHousekeeping = deps.clock.now();
        }
        if (deps.deferred && deps.clock.now() - lastRelease >= RELEASE_EVERY_MS) {
          lastRelease = deps.clock.now();
          await deps.deferred.release();
        }
        const items = await claim();
        claimFailures.succeeded();
        if (items.length > 0) deps.launch(items);
      } catch (err) {
        claimFailures.failed(err);
      }
    } while (again && deps.taking());
  }

  function pump(): void {
    if (pumping) {
      again = true;
      return;
    }
    pumping = runPasses().finally(() => {
      pumping = null;
    });
  }

  function wake(): void {
    if (!deps.taking() || wakeScheduled) return;
    wakeScheduled = true;
    setImmediate(() => {
      wakeScheduled = false;
      if (deps.taking()) pump();
    });
  }

  return {
    wake,
    wakeForBacklog() {
      if (backlog.size > 0) wake();
    },

    async runOnce() {
      const report: RunReport = { attempted: 0, acked: 0, failed: 0, dropped: 0 };
      report.dropped += await housekeeping();
      const inFlight = new Set<Promise<void>>();
      const claimMore = async () => {
        await deps.deferred?.release(true);
        for (const p of deps.launch(await claim())) {
          const tracked: Promise<void> = p.then((r) => {
            report.attempted += r.attempted;
            report.acked += r.acked;
            report.failed += r.failed;
            report.dropped += r.dropped;
            inFlight.delete(tracked);
          });
          inFlight.add(tracked);
        }
      };
      // Claims again whenever an attempt finishes (capacity freed), like the background loop. Every claimed row
      // is deleted or rescheduled at least 8 s ahead, so this ends once nothing due is left.
      await claimMore();
      while (inFlight.size > 0) {
        await Promise.race(inFlight);
        await claimMore();
      }
      return report;
    },

    async finished() {
      if (pumping) await pumping;
    },

    reset() {
      leasesReleased = false;
    },
  };
}
