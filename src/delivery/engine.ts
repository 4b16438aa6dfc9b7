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
import { createFailureLog } from '../runtime/failure-log.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Store } from '../store/contract/store.ts';
import { Backlog } from './backlog.ts';
import { claimDue, leaseHalfOver, type ClaimedDelivery } from './claim.ts';
import type { HandoffPort } from './handoff.ts';
import { createIntake } from './intake.ts';
import { Lines } from './lines.ts';
import { dropExpiredAndPrune } from './housekeeping.ts';
import { createConnectorLog } from './connector-log.ts';
import { createOpenedSecrets } from './opened-secrets.ts';
import { createOutcomeRecorder, type Finished, type RunReport } from './outcomes.ts';
import { createSlots } from './slots.ts';
import { leadsJob } from '../store/jobs/cluster.ts';
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
  /** Attempts in flight of failing and suspect connectors together. Default half of totalConcurrency. */
  failingTotalConcurrency?: number;
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

/** Where engines of a cluster hear that rows were queued (one message for many rows). */
const QUEUED_CHANNEL = 'queued';
/** At most one message per this many ms per process: a NOTIFY takes a database-wide lock through its commit. */
const ANNOUNCE_EVERY_MS = 5;

/** Tells the other engines of the cluster that rows were queued, coalesced; a no-op on a store one process owns. */
function createAnnouncer(cluster: Store['cluster'], log: Logger): () => void {
  if (cluster === null) return () => undefined;
  let pending = false;
  let sending = false;
  const send = (): void => {
    sending = true;
    pending = false;
    cluster.publish(QUEUED_CHANNEL, [''])
      .catch((err: unknown) => log.debug({ err }, 'delivery engine: announcing queued rows failed; the others poll'))
      .finally(() => setTimeout(() => {
        sending = false;
        if (pending) send();
      }, ANNOUNCE_EVERY_MS).unref());
  };
  return () => {
    if (sending) pending = true;
    else send();
  };
}

export function createDeliveryEngine(deps: EngineDeps, dispatcher: Dispatcher, options: EngineOptions = {}): DeliveryEngine {
  const perConnector = options.perConnectorConcurrency ?? 64;
  const totalConcurrency = options.totalConcurrency ?? 1024;
  const slots = createSlots(deps.clock, {
    perConnector,
    perFailingConnector: Math.min(perConnector, options.failingConnectorConcurrency ?? 2),
    total: totalConcurrency,
    suspectTotal: Math.min(totalConcurrency, options.failingTotalConcurrency ?? Math.floor(totalConcurrency / 2)),
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
  const connectorLog = createConnectorLog(log, deps.clock);
  // Every poll fails while the database is unreachable: logged when that starts and when it ends.
  const claimFailures = createFailureLog(log, 'error', {
    failing: 'delivery engine: claiming due deliveries failed', recovered: 'delivery engine: claiming due deliveries works again',
  }, () => deps.clock.now());
  // The project of each connector an attempt was made for, to name it in the log.
  const projectOf = new Map<string, string>();
  const outcomes = createOutcomeRecorder({ ...deps, leaseMicros }, {
    disabled(d) {
      lines.drop(d.connector.id);
      connectorLog.disabled(d.connector, d.failingSince, d.dropped);
    },
    failing: connectorLog.failing,
    recovered: connectorLog.recovered,
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

  // Several processes on one store: the per-connector limits count the whole cluster's leases, at every claim and
  // at every row queued leased by the hand-off (handoff.ts).
  const cluster = deps.store.cluster;
  // Per connector, the rows whose attempts here have ended and whose outcomes are not yet committed: the cluster's
  // count of attempts in flight leaves them out (InFlightCap.ended).
  const ended = new Map<string, Set<number>>();
  const clusterLimits = cluster === null ? null : {
    perConnector, perFailing: slots.options.perFailingConnector, suspectAfterMicros: slots.options.suspectAfterMs * 1000,
    ended: (connectorId: string) => ended.get(connectorId),
  };
  const announce = createAnnouncer(cluster, log);
  let unlisten: (() => void) | null = null;

  const intake = createIntake({
    store: deps.store, clock: deps.clock, logger: log, slots, backlog, lines, leaseMicros, cluster: clusterLimits,
    taking: () => started && !stopping,
    run: (item) => void run(item),
    wake: () => wake(),
  });
  const drain = intake.drain;

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
      now: nowMicros(deps), leaseMicros, capacityOf: slots.capacityOf, total: slots.room(),
      suspect: slots.suspect, suspectLeft: slots.options.suspectTotal - Math.max(slots.inFlightSuspect, slots.suspectHeld()), rotation: rotation++,
      cluster: clusterLimits,
    });
    if (result.due !== null) backlog.settle(seen, result.due, result.drained);
    return result.items;
  }

  /** One attempt: the push and how it ended. */
  async function send(item: ClaimedDelivery, startMs: number): Promise<Finished> {
    const c = item.connector;
    let outcome: AttemptOutcome;
    try {
      outcome = await dispatcher.send({ url: c.url, headers: c.headers, signatureSecret: openSecret(c.signatureSecretSealed), probe: slots.suspect(c.id) }, item.delivery.body);
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
    if (leaseLapsing(item.delivery.leaseUntil, start)) {
      // Not attempted: the row comes due when its lease ends, for any claim (this process's too).
      slots.give(id);
      if (lines.has(id)) void drain(id);
      wakeForBacklog();
      return Promise.resolve({ attempted: 0, acked: 0, failed: 0, dropped: 0 });
    }
    slots.started(id, start);
    projectOf.set(id, item.connector.projectId);
    const p = send(item, start).then((done) => {
      // Recorded first: its transaction is asked for before the next claim's, so it goes first in the commit
      // they share. Every moment a success is not yet recorded, a crash would send its event again.
      const recorded = outcomes.record(done);
      slots.ended(id, start, done.outcome.ok);
      slots.give(id);
      if (lines.has(id)) void drain(id);
      wakeForBacklog();
      if (cluster !== null) {
        const rowId = item.delivery.id;
        let rows = ended.get(id);
        if (!rows) ended.set(id, (rows = new Set()));
        rows.add(rowId);
        void recorded.finally(() => {
          rows.delete(rowId);
          if (rows.size === 0 && ended.get(id) === rows) ended.delete(id);
        });
      }
      return recorded;
    });
    running++;
    p.then(settled, settled);
    return p;
  }

  // A row whose lease is half over when its attempt would start (the process was paused between its claim or its
  // event's commit and now: a stopped process, a frozen machine, a database that answered after a long outage) may
  // be claimed by another process before the push ends, or already was: pushing it would put a request at the
  // endpoint that no process counts (leaseHalfOver, as for a line's rows). Counted, and said once a turn.
  let lapsed = 0;
  function leaseLapsing(leaseUntil: number | null, nowMs: number): boolean {
    if (leaseUntil === null || !leaseHalfOver(leaseUntil, nowMs * 1000, leaseMicros)) return false;
    if (lapsed++ === 0) {
      setImmediate(() => {
        log.warn({ rows: lapsed }, 'delivery engine: rows not attempted, their leases half over before their attempts could start (was this process paused?); they come due again when the leases end');
        lapsed = 0;
      });
    }
    return true;
  }

  function launch(items: ClaimedDelivery[]): Array<Promise<RunReport>> {
    return items.map((item) => {
      slots.take(item.connector.id);
      return run(item);
    });
  }

  async function housekeeping(): Promise<number> {
    lastHousekeeping = deps.clock.now();
    return deps.store.transaction((tx) => dropExpiredAndPrune(tx, nowMicros(deps)));
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
        if (deps.clock.now() - lastHousekeeping >= housekeepingIntervalMs) {
          if (await leadsJob(deps.store, 'delivery-housekeeping')) await housekeeping();
          else lastHousekeeping = deps.clock.now();
        }
        const items = await claim();
        claimFailures.succeeded();
        if (items.length > 0) launch(items);
      } catch (err) {
        claimFailures.failed(err);
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
      connectorLog.hanging(slots.hanging().map((id) => ({ id, projectId: projectOf.get(id) ?? '' })));
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
      deps.handoff.attach(intake.handoff);
      if (cluster === null) {
        unsubscribe = deps.events.subscribe(wakeForBacklog);
      } else {
        // Rows queued due (behind a backlog, or refused a lease by the cluster's limit): this engine claims them at
        // once, and the others hear of them.
        unsubscribe = deps.events.subscribe(() => {
          if (backlog.size === 0) return;
          wake();
          announce();
        });
        void cluster.subscribe(QUEUED_CHANNEL, () => wake()).then((stop) => {
          if (started) unlisten = stop;
          else stop();
        }, (err: unknown) => log.warn({ err }, 'delivery engine: cannot listen for rows queued by other processes; polling only'));
      }
      schedulePoll();
      wake();
      log.info({ perConnectorConcurrency: perConnector, totalConcurrency: total }, 'delivery engine started');
    },

    async stop() {
      if (!started) return;
      stopping = true;
      deps.handoff.attach(null);
      unlisten?.();
      unlisten = null;
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
