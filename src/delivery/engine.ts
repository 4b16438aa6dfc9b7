// The delivery engine (contract §6): takes fresh queue rows handed off at commit while it runs (handoff.ts) and
// claims due ones (retries, backlogs, `:sync`; claim.ts), pushes them through the Dispatcher within the attempt
// slots (slots.ts; a dead endpoint never slows the others), and records every outcome (outcomes.ts). Rows handed
// off while their connector's slots are taken wait in its line (lines.ts); connectors that may have due rows in the
// queue are its backlog (backlog.ts). Tests drive it with a fake clock through runOnce(); the service runs it with
// start()/stop().
import type { SecretBox } from '../auth/secret-box.ts';
import { dataConnectorName } from '../domain/names.ts';
import type { EventPipeline } from '../events/pipeline.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Store } from '../store/store.ts';
import { Backlog } from './backlog.ts';
import { claimDue, dropExpired, type ClaimedDelivery } from './claim.ts';
import type { DeliveryHandoff, HandoffPort } from './handoff.ts';
import { Lines } from './lines.ts';
import { pruneMetrics, series } from './metrics.ts';
import { createOpenedSecrets } from './opened-secrets.ts';
import { createOutcomeRecorder, type Finished, type RunReport } from './outcomes.ts';
import { createSlots } from './slots.ts';
import type { AttemptOutcome, Dispatcher } from './types.ts';

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
}

export interface EngineOptions {
  /** Attempts in flight per healthy connector. Default 64 (16 capped a single connector at ~1,000/s here). */
  perConnectorConcurrency?: number;
  /** Attempts in flight per connector whose last attempt failed (it is probed, not flooded). Default 2. */
  failingConnectorConcurrency?: number;
  /** Attempts in flight overall. Default 1024. */
  totalConcurrency?: number;
  /** A connector with an attempt in flight for longer than this is treated like a failing one, ms. Default 1000. */
  suspectAfterMs?: number;
  /** Fallback poll for due retries and for rows queued outside the event pipeline (`:sync`), ms. Default 250. */
  pollIntervalMs?: number;
  /** How long a claimed row stays leased, ms; must exceed the 10 s attempt timeout. Default 60 000. */
  leaseMs?: number;
  /** Dropping expired rows and pruning metrics, every this many ms while running. Default 5 000. */
  housekeepingIntervalMs?: number;
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

export function createDeliveryEngine(deps: EngineDeps, dispatcher: Dispatcher, options: EngineOptions = {}): DeliveryEngine {
  const perConnector = options.perConnectorConcurrency ?? 64;
  const slots = createSlots(deps.clock, {
    perConnector,
    perFailingConnector: Math.min(perConnector, options.failingConnectorConcurrency ?? 2),
    total: options.totalConcurrency ?? 1024,
    suspectAfterMs: options.suspectAfterMs ?? 1000,
  });
  const total = slots.options.total;
  const pollIntervalMs = options.pollIntervalMs ?? 250;
  const leaseMicros = (options.leaseMs ?? 60_000) * 1000;
  const housekeepingIntervalMs = options.housekeepingIntervalMs ?? 5_000;
  const log = deps.logger;
  const openSecret = createOpenedSecrets(deps.secretBox);
  const backlog = new Backlog();
  // A line is bounded, and all lines together hold at most as many rows as may be in flight.
  const lines = new Lines(perConnector * 4, total);
  const draining = new Set<string>();
  const outcomes = createOutcomeRecorder(deps, (d) => {
    lines.drop(d.connector.id);
    log.warn(
      { connector: dataConnectorName(d.connector.projectId, d.connector.id), from: 'ACTIVE', to: 'SYSTEM_DISABLED', failingSince: d.failingSince, droppedDeliveries: d.dropped },
      'data connector disabled by the service: every push attempt failed for 5 days',
    );
  });

  // Attempts not yet recorded, and who waits for them to reach 0 (stop). A counter, not a set of promises: every
  // attempt passes here, and tracking each one in a set cost three promises and two closures more.
  let running = 0;
  let idle: Array<() => void> = [];
  const settled = (): void => {
    if (--running > 0) return;
    const waiting = idle;
    idle = [];
    for (const resolve of waiting) resolve();
  };
  let rotation = 0;

  // Background loop state.
  let started = false;
  let stopping = false;
  let timer: NodeJS.Timeout | null = null;
  let unsubscribe: (() => void) | null = null;
  let pumping: Promise<void> | null = null;
  let again = false;
  let wakeScheduled = false;
  let lastHousekeeping = -Infinity;
  let leasesReleased = false;

  async function claim(): Promise<ClaimedDelivery[]> {
    const seen = backlog.snapshot();
    const result = await claimDue(deps.store, {
      now: nowMicros(deps), leaseMicros, capacityOf: slots.capacityOf, total: total - slots.inFlightTotal, rotation: rotation++,
    });
    if (result.due !== null) backlog.settle(seen, result.due, result.drained);
    return result.items;
  }

  /** Attempts rows of the connector's line while it has free slots; gives the line back to the queue when it must. */
  async function drain(id: string): Promise<void> {
    if (draining.has(id) || !lines.has(id)) return;
    draining.add(id);
    try {
      // A row in line is attempted with the connector's settings as they are now, as a claimed one would be. A line
      // whose connector is gone, disabled or no longer answering, or whose oldest row has waited half its lease,
      // goes back to the queue as due (a dropped queue's line is gone already: queueDropped).
      const current = await deps.store.dataConnectors.get(id);
      const first = lines.first(id);
      if (!first || stopping) return;
      if (!current || current.status !== 'ACTIVE' || slots.suspect(id) || (first.delivery.leaseUntil ?? 0) - nowMicros(deps) < leaseMicros / 2) {
        await releaseLine(id);
        return;
      }
      while (lines.has(id) && slots.inFlightTotal < total && slots.capacityOf(id) > 0) {
        slots.take(id);
        void run({ delivery: lines.shift(id)!.delivery, connector: current });
      }
    } catch (err) {
      log.error({ err }, 'delivery engine: attempting rows in line failed');
    } finally {
      draining.delete(id);
    }
  }

  /** Makes the connector's line due in the queue again, for claims to take. */
  async function releaseLine(id: string): Promise<void> {
    const line = lines.drop(id);
    if (!line) return;
    backlog.mark(id);
    try {
      await deps.store.transaction((tx) => tx.deliveries.releaseLeases(nowMicros(deps), line.map((item) => item.delivery.id)));
    } catch (err) {
      // The rows stay leased; they come due when their leases end.
      log.error({ err }, 'delivery engine: giving rows in line back to the queue failed');
    }
    wake();
  }

  /** The hand-off of fresh rows (handoff.ts): attached to the port while the loop runs. */
  const handoff: DeliveryHandoff = {
    reserve(connectorId, now, competitors) {
      if (!started || stopping) return null;
      if (!backlog.has(connectorId) && slots.inFlightTotal < total) {
        // The same fair share of the overall cap as a claim gives, here among the connectors the event goes to,
        // so that many new endpoints that turn out dead cannot take every slot before they are found out.
        if (lines.waiting(connectorId) === 0 && slots.capacityOf(connectorId, competitors) > 0) {
          slots.take(connectorId);
          return { leaseUntil: now + leaseMicros, slot: true };
        }
        // Only a connector that answers gets a line (a suspect one's rows queue as due, as behind a backlog).
        if (!slots.suspect(connectorId) && lines.hasRoom(connectorId)) {
          lines.place(connectorId);
          return { leaseUntil: now + leaseMicros, slot: false };
        }
      }
      backlog.mark(connectorId);
      return null;
    },
    launch(item, slot) {
      const id = item.connector.id;
      // Stopping: the row stays leased and is released, then attempted, at the next start.
      if (!started || stopping) {
        if (slot) slots.give(id);
        else lines.unplace(id);
      } else if (slot) {
        void run(item);
      } else {
        lines.push(item);
        void drain(id);
      }
    },
    release(connectorId, slot) {
      if (slot) {
        slots.give(connectorId);
        if (lines.has(connectorId)) void drain(connectorId);
        wake();
      } else {
        lines.unplace(connectorId);
      }
    },
    queueDropped(connectorId) {
      lines.drop(connectorId);
    },
  };

  /** One attempt: the push and how it ended. */
  async function send(item: ClaimedDelivery, startMs: number): Promise<Finished> {
    const c = item.connector;
    let outcome: AttemptOutcome;
    try {
      outcome = await dispatcher.send({ url: c.url, headers: c.headers, signatureSecret: openSecret(c.signatureSecretSealed) }, item.delivery.body);
    } catch (err) {
      // The Dispatcher never throws by contract, and the secret opens unless the master key changed; either
      // way the row must not be lost, so it is a failed attempt like any other.
      outcome = { ok: false, reason: 'connection', responseTimeMs: Math.max(0, deps.clock.now() - startMs), message: `dispatcher error: ${(err as Error).message}` };
    }
    return { item, outcome, endMs: Math.max(deps.clock.now(), startMs + outcome.responseTimeMs) };
  }

  /**
   * Attempts a row in a slot already taken and records the outcome. The slot is given back as soon as the push
   * has ended: it bounds requests at the endpoint, and the row stays leased until the outcome is recorded, so no
   * claim can take it again meanwhile. (Holding the slot through the recording transaction, which waits its
   * turn behind the publishes of a busy event loop, capped one connector at ~2,600 pushes/s with 64 slots.)
   */
  function run(item: ClaimedDelivery): Promise<RunReport> {
    const id = item.connector.id;
    const start = deps.clock.now();
    slots.started(id, start);
    const p = send(item, start).then((done) => {
      // Recorded first: its transaction is asked for before the next claim's, so it goes first in the commit
      // they share. Every moment a success is not yet recorded, a crash would send its event again.
      const recorded = outcomes.record(done);
      slots.ended(id, start, done.outcome.ok);
      slots.give(id);
      if (lines.has(id)) void drain(id);
      wakeForBacklog();
      return recorded;
    });
    running++;
    p.then(settled, settled);
    return p;
  }

  function launch(items: ClaimedDelivery[]): Array<Promise<RunReport>> {
    return items.map((item) => {
      slots.take(item.connector.id);
      return run(item);
    });
  }

  async function housekeeping(): Promise<number> {
    const now = nowMicros(deps);
    lastHousekeeping = deps.clock.now();
    return deps.store.transaction(async (tx) => {
      let dropped = 0;
      // Bounded batches, so one pass never holds the writer for long.
      for (let i = 0; i < 100; i++) {
        const n = await dropExpired(tx, now);
        dropped += n;
        if (n < 10_000) break;
      }
      if (dropped > 0) await tx.connectorMetrics.addCounters({ [series.deliveries('dropped')]: dropped });
      await pruneMetrics(tx, now);
      return dropped;
    });
  }

  async function pumpLoop(): Promise<void> {
    do {
      again = false;
      try {
        if (!leasesReleased) {
          leasesReleased = true;
          // A store that one process owns: a lease left over from before a restart belongs to no live attempt.
          if (deps.store.exclusive) await deps.store.deliveries.releaseLeases(nowMicros(deps));
        }
        if (deps.clock.now() - lastHousekeeping >= housekeepingIntervalMs) await housekeeping();
        const items = await claim();
        if (items.length > 0) launch(items);
      } catch (err) {
        log.error({ err }, 'delivery engine: claiming due deliveries failed');
      }
    } while (again && !stopping);
  }

  function pump(): void {
    if (pumping) {
      again = true;
      return;
    }
    pumping = pumpLoop().finally(() => {
      pumping = null;
    });
  }

  function wake(): void {
    if (!started || stopping || wakeScheduled) return;
    wakeScheduled = true;
    setImmediate(() => {
      wakeScheduled = false;
      if (started && !stopping) pump();
    });
  }

  // Fresh rows go straight to attempts (hand-off); the queue needs reading only when rows were queued as due
  // behind a busy connector. Retries coming due and rows queued outside the pipeline (`:sync`) wait for the poll.
  function wakeForBacklog(): void {
    if (backlog.size > 0) wake();
  }

  function schedulePoll(): void {
    timer = setTimeout(() => {
      wake();
      // A line that stopped moving (its connector turned suspect, or changed) goes back to the queue.
      for (const id of lines.connectors()) void drain(id);
      if (started && !stopping) schedulePoll();
    }, pollIntervalMs);
    timer.unref();
  }

  return {
    start() {
      if (started) return;
      started = true;
      stopping = false;
      unsubscribe = deps.events.subscribe(wakeForBacklog);
      deps.handoff.attach(handoff);
      schedulePoll();
      wake();
      log.info({ perConnectorConcurrency: perConnector, totalConcurrency: total }, 'delivery engine started');
    },

    async stop() {
      if (!started) return;
      stopping = true;
      deps.handoff.attach(null);
      if (timer) clearTimeout(timer);
      timer = null;
      unsubscribe?.();
      unsubscribe = null;
      if (pumping) await pumping;
      while (running > 0) await new Promise<void>((resolve) => idle.push(resolve));
      await outcomes.settled();
      // Rows in line stay leased: the next start releases every lease (no attempt is in flight by then).
      lines.clear();
      leasesReleased = false;
      started = false;
      stopping = false;
      log.info('delivery engine stopped');
    },

    async runOnce() {
      const report: RunReport = { attempted: 0, acked: 0, failed: 0, dropped: 0 };
      report.dropped += await housekeeping();
      const inFlight = new Set<Promise<void>>();
      const claimMore = async () => {
        for (const p of launch(await claim())) {
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

    wake,
  };
}
