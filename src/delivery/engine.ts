// The delivery engine (contract §6), wired from its parts: fresh queue rows handed off at commit while it runs
// (handoff.ts, intake.ts; rows waiting for a slot in lines.ts), claims of due ones (retries, backlogs, `:sync`;
// pump.ts, backlog.ts), attempts within the attempt slots (attempts.ts, slots.ts; a dead endpoint never slows the
// others) with every outcome recorded (outcomes.ts) and logged (delivery-log.ts), the `:test` push (pushOnce, through
// the attempts' own push), and on a shared store the notices between the engines of a cluster (queued-notices.ts).
// Tests drive it with a fake clock through runOnce(); the service runs it with start()/stop().
import type { SecretBox } from '../auth/secret-box.ts';
import type { EventPipeline } from '../events/pipeline.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Store } from '../store/contract/store.ts';
import { createAttempts } from './attempts.ts';
import { Backlog } from './backlog.ts';
import type { InFlightLimits } from './claim.ts';
import { createConnectorLog } from './connector-log.ts';
import { DEFAULT_DELIVERY_LOG, deliveryLogOn, type DeliveryLogOptions } from './delivery-log.ts';
import { EndedRows } from './ended-rows.ts';
import type { DeliveryHandoff, HandoffPort } from './handoff.ts';
import type { ConnectorHealthListener } from './health.ts';
import { createIntake } from './intake.ts';
import { Lines } from './lines.ts';
import { createOpenedSecrets } from './opened-secrets.ts';
import { createOutcomeRecorder, type RunReport } from './outcomes.ts';
import { createDeferredRelease, DEFERRED_KEEP_DUE } from './deferred.ts';
import { createPump } from './pump.ts';
import { createQueuedNotices } from './queued-notices.ts';
import { createSlots, type Slots } from './slots.ts';
import type { Dispatcher } from './types.ts';

export type { RunReport } from './outcomes.ts';

/** What the engine uses of the service. */
export interface EngineDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Committed events wake the engine when a connector has a backlog. */
  events: Pick<EventPipeline, 'subscribe'>;
  /** Opens connectors' signature secrets. */
  secretBox: Pick<SecretBox, 'open'>;
  /** Where the engine takes fresh rows from the enqueue consumer while it runs. */
  handoff: HandoffPort;
  /** Told of each connector's change of health once it has committed (the alerts' dataConnector trigger). */
  health?: Omit<ConnectorHealthListener, 'enabled'>;
}

export interface EngineOptions {
  /** Attempts in flight per healthy connector. Default 64 (16 capped a single connector at ~1,000/s here). */
  perConnectorConcurrency?: number;
  /** Attempts in flight per connector whose last attempt failed (it is probed, not flooded). Default 2. */
  failingConnectorConcurrency?: number;
  /** Attempts in flight overall. Default 1024. */
  totalConcurrency?: number;
  /** Attempts in flight of failing and suspect connectors together. Default half of totalConcurrency. */
  failingTotalConcurrency?: number;
  /** A connector with an attempt in flight for longer than this is treated like a failing one, ms. Default 1000. */
  suspectAfterMs?: number;
  /** Fallback poll for due retries and for rows queued outside the event pipeline (`:sync`), ms. Default 250. */
  pollIntervalMs?: number;
  /** How long a claimed row stays leased, ms; must exceed the 10 s attempt timeout. Default 60 000. */
  leaseMs?: number;
  /** Dropping expired rows and pruning metrics and the delivery log, every this many ms while running. Default 5 000. */
  housekeepingIntervalMs?: number;
  /**
   * The delivery log (config.deliveryLog): retention and per-connector cap; `max` 0 records nothing (the log is off,
   * and still pruned). Default the service's defaults (72 h, 100,000), on.
   */
  deliveryLog?: DeliveryLogOptions;
  /** Waits for a paced row's start time (attempts.ts AttemptDeps.wait); default a timer. */
  wait?(ms: number): Promise<void>;
}

export interface DeliveryEngine {
  /** Starts the background loop: wakes on every committed event, polls as a fallback. */
  start(): void;
  /** Stops claiming and waits for attempts in flight to be recorded. */
  stop(): Promise<void>;
  /** Claims and delivers everything due now, waiting for every outcome to be recorded (tests, tools). */
  runOnce(): Promise<RunReport>;
  /** Asks the running loop to claim now (new rows were queued). */
  wake(): void;
}

/** The attempt slots of the options, with their defaults. */
function slotsOf(clock: Clock, options: EngineOptions): Slots {
  const perConnector = options.perConnectorConcurrency ?? 64;
  const total = options.totalConcurrency ?? 1024;
  return createSlots(clock, {
    perConnector,
    perFailingConnector: Math.min(perConnector, options.failingConnectorConcurrency ?? 2),
    total,
    suspectTotal: Math.min(total, options.failingTotalConcurrency ?? Math.floor(total / 2)),
    suspectAfterMs: options.suspectAfterMs ?? 1000,
  });
}

export function createDeliveryEngine(
  deps: EngineDeps,
  dispatcher: Dispatcher,
  options: EngineOptions = {},
): DeliveryEngine {
  const { store, clock, logger: log } = deps;
  const slots = slotsOf(clock, options);
  const { perConnector, total } = slots.options;
  const pollIntervalMs = options.pollIntervalMs ?? 250;
  const leaseMicros = (options.leaseMs ?? 60_000) * 1000;
  const backlog = new Backlog();
  // A line is bounded, and all lines together hold at most as many rows as may be in flight.
  const lines = new Lines(perConnector * 4, total);
  const connectorLog = createConnectorLog(log, clock);
  const deliveryLog = options.deliveryLog ?? DEFAULT_DELIVERY_LOG;
  const outcomes = createOutcomeRecorder(
    { ...deps, leaseMicros, deliveryLog: deliveryLogOn(deliveryLog) },
    {
      disabled(d) {
        lines.drop(d.connector.id);
        connectorLog.disabled(d.connector, d.failingSince, d.dropped);
        deps.health?.disabled(d.connector);
      },
      failing(connector, outcome) {
        connectorLog.failing(connector, outcome);
        deps.health?.failing(connector);
      },
      recovered(connector) {
        connectorLog.recovered(connector);
        deps.health?.recovered(connector);
      },
    },
  );

  // Several processes on one store: the per-connector limits count the whole cluster's leases, at every claim and
  // at every row queued leased by the hand-off (handoff.ts), leaving out the rows whose attempts here have ended.
  const cluster = store.cluster;
  const ended = cluster === null ? null : new EndedRows();
  const clusterLimits: InFlightLimits | null =
    ended === null
      ? null
      : {
          perConnector,
          perFailing: slots.options.perFailingConnector,
          suspectAfterMicros: slots.options.suspectAfterMs * 1000,
          ended: (connectorId: string) => ended.of(connectorId),
        };
  const notices = cluster === null ? null : createQueuedNotices(cluster, log);

  let started = false;
  let stopping = false;
  let timer: NodeJS.Timeout | null = null;
  let unsubscribe: (() => void) | null = null;
  const taking = (): boolean => started && !stopping;

  const attempts = createAttempts({
    clock,
    logger: log,
    dispatcher,
    slots,
    outcomes,
    openSecret: createOpenedSecrets(deps.secretBox),
    leaseMicros,
    ended,
    wait: options.wait,
    freed(id) {
      if (lines.has(id)) void intake.drain(id);
      pump.wakeForBacklog();
    },
  });
  const pump = createPump({
    store,
    clock,
    logger: log,
    slots,
    backlog,
    leaseMicros,
    cluster: clusterLimits,
    housekeepingIntervalMs: options.housekeepingIntervalMs ?? 5_000,
    deliveryLog,
    deferred: createDeferredRelease({ store, clock, logger: log, keepDue: DEFERRED_KEEP_DUE }),
    launch: attempts.launch,
    taking,
  });
  const intake = createIntake({
    store,
    clock,
    logger: log,
    slots,
    backlog,
    lines,
    leaseMicros,
    cluster: clusterLimits,
    taking,
    run: (item) => void attempts.run(item),
    wake: () => pump.wake(),
  });
  const handoff: DeliveryHandoff = { ...intake.handoff, pushOnce: attempts.pushOnce };

  function schedulePoll(): void {
    timer = setTimeout(() => {
      connectorLog.hanging(attempts.hanging());
      pump.wake();
      // A line that stopped moving (its connector turned suspect, or changed) goes back to the queue.
      for (const id of lines.connectors()) void intake.drain(id);
      if (taking()) schedulePoll();
    }, pollIntervalMs);
    timer.unref();
  }

  return {
    start() {
      if (started) return;
      started = true;
      stopping = false;
      deps.handoff.attach(handoff);
      if (notices === null) {
        unsubscribe = deps.events.subscribe(pump.wakeForBacklog);
      } else {
        // Rows queued due (behind a backlog, or refused a lease by the cluster's limit): this engine claims them at
        // once, and the others hear of them.
        unsubscribe = deps.events.subscribe(() => {
          if (backlog.size === 0) return;
          pump.wake();
          notices.announce();
        });
        notices.listen(pump.wake);
      }
      schedulePoll();
      pump.wake();
      log.info({ perConnectorConcurrency: perConnector, totalConcurrency: total }, 'delivery engine started');
    },

    async stop() {
      if (!started) return;
      stopping = true;
      deps.handoff.attach(null);
      notices?.stopListening();
      if (timer) clearTimeout(timer);
      timer = null;
      unsubscribe?.();
      unsubscribe = null;
      await pump.finished();
      await attempts.idle();
      await outcomes.settled();
      // Rows in line stay leased: the next start releases every lease (no attempt is in flight by then).
      lines.clear();
      pump.reset();
      started = false;
      stopping = false;
      log.info('delivery engine stopped');
    },

    runOnce: pump.runOnce,
    wake: pump.wake,
  };
}
