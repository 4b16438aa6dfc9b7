// The delivery engine (contract §6): takes fresh queue rows handed off at commit while it runs (queue.ts) and
// claims due ones (retries, backlogs, `:sync`), pushes them through the Dispatcher with bounded
// concurrency per connector and overall (a dead endpoint never slows the others), and records every outcome
// in the store: ack → row deleted; failure → retry schedule, 12-hour drop, 5-day auto-disable. Outcomes that
// arrive together are recorded in one transaction (group commit); each outcome's effects are all-or-nothing.
// Tests drive it with a fake clock through runOnce(); the service runs it with start()/stop().
import type { Deps } from '../deps.ts';
import { nowMicros } from '../deps.ts';
import { afterFailure, afterSuccess } from '../domain/connector-status.ts';
import { dataConnectorName } from '../domain/names.ts';
import type { Repos } from '../store/store.ts';
import { attemptCounterDeltas, bump, pruneMetrics, recordAttemptMetrics, series, type AttemptSample } from './metrics.ts';
import { claimDue, dropExpired, dropQueue, type ClaimedDelivery, type DeliveryHandoff } from './queue.ts';
import { nextAttemptTime } from './retry.ts';
import type { AttemptOutcome, Dispatcher, PushTarget } from './types.ts';

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

export interface RunReport {
  attempted: number;
  acked: number;
  failed: number;
  /** Rows removed without acknowledgement: 12-hour expiry, or the queue dropped by an auto-disable. */
  dropped: number;
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

interface Finished {
  item: ClaimedDelivery;
  outcome: AttemptOutcome;
  /** Attempt end, ms. */
  endMs: number;
}

/** The smallest of the start times (a loop: spreading up to 64 of them into Math.min allocated for every event). */
function earliest(times: number[]): number {
  let min = Infinity;
  for (const t of times) if (t < min) min = t;
  return min;
}

// A module-level helper, not a closure in the per-attempt code: tsx keeps function names, which costs a
// defineProperty call for every arrow function created (~1 % of the main thread under load).
function attemptedReports(n: number): RunReport[] {
  const reports: RunReport[] = [];
  for (let i = 0; i < n; i++) reports.push({ attempted: 1, acked: 0, failed: 0, dropped: 0 });
  return reports;
}

export function createDeliveryEngine(deps: Deps, dispatcher: Dispatcher, options: EngineOptions = {}): DeliveryEngine {
  const perConnector = options.perConnectorConcurrency ?? 64;
  const perFailingConnector = Math.min(perConnector, options.failingConnectorConcurrency ?? 2);
  const total = options.totalConcurrency ?? 1024;
  const suspectAfterMs = options.suspectAfterMs ?? 1000;
  const pollIntervalMs = options.pollIntervalMs ?? 250;
  const leaseMicros = (options.leaseMs ?? 60_000) * 1000;
  const housekeepingIntervalMs = options.housekeepingIntervalMs ?? 5_000;
  const log = deps.logger;

  const inFlight = new Map<string, number>();
  let inFlightTotal = 0;
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

  // Group commit of outcomes.
  let pending: Array<{ done: Finished; resolve: (r: RunReport) => void }> = [];
  let flushing: Promise<void> | null = null;

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

  // Connectors whose most recent attempt failed. A dead endpoint holds each attempt for up to the 10 s
  // timeout; probing it with a couple of attempts instead of a full share keeps the slots (and sockets) for
  // the healthy connectors (isolation), while its queued rows wait durably for their turn.
  // A new dead endpoint is only known to fail once its first attempts time out (10 s), so an attempt that has
  // been in flight for over a second makes the connector suspect too; a healthy endpoint answers long before.
  const failing = new Set<string>();
  const startedAt = new Map<string, number[]>();
  const suspect = (connectorId: string): boolean => {
    if (failing.has(connectorId)) return true;
    const starts = startedAt.get(connectorId);
    return starts !== undefined && starts.length > 0 && deps.clock.now() - earliest(starts) > suspectAfterMs;
  };
  // While health is unknown (the first second), a fair share of the overall cap keeps any number of new dead
  // endpoints from taking every slot before they are found out.
  const capacityOf = (connectorId: string, competitors = 1) => {
    const share = Math.max(perFailingConnector, Math.floor(total / Math.max(1, competitors)));
    return Math.min(suspect(connectorId) ? perFailingConnector : perConnector, share) - (inFlight.get(connectorId) ?? 0);
  };

  // Connectors that may have due rows waiting in the queue: a fresh row of theirs was queued as due (no free
  // slot), or a claim left some behind (a backlog after a restart, retries coming due, `:sync`). Later fresh rows
  // queue behind them instead of being handed off, and every finished attempt wakes the loop to claim more,
  // until a claim finds the connector's due rows all taken. The value is when it was last marked, so that a
  // claim that read the queue before that does not clear it.
  const backlog = new Map<string, number>();
  let generation = 0;

  async function claim(): Promise<ClaimedDelivery[]> {
    const seen = generation;
    const result = await claimDue(deps.store, {
      now: nowMicros(deps), leaseMicros, capacityOf, total: total - inFlightTotal, rotation: rotation++,
    });
    if (result.due !== null) {
      for (const id of result.due) if (!result.drained.has(id)) backlog.set(id, ++generation);
      for (const [id, at] of backlog) {
        if (at <= seen && (!result.due.has(id) || result.drained.has(id))) backlog.delete(id);
      }
    }
    return result.items;
  }

  // Fresh rows of a connector whose slots are all taken, waiting leased, in queue order, for its next free slot
  // (the hand-off's line, queue.ts). `places` counts the rows in line and those reserved by transactions not yet
  // committed. Only a connector that answers gets a line (a suspect one's rows queue as due, as behind a backlog),
  // and a line is bounded, so its rows wait milliseconds, far less than their lease. All lines together hold at
  // most as many rows as may be in flight: with thousands of connectors, rows wait in the queue, not in memory.
  const lines = new Map<string, ClaimedDelivery[]>();
  const places = new Map<string, number>();
  let placesTotal = 0;
  const lineLimit = perConnector * 4;
  const linesLimit = total;
  const draining = new Set<string>();

  function unplace(id: string, n = 1): void {
    const left = (places.get(id) ?? n) - n;
    if (left <= 0) places.delete(id);
    else places.set(id, left);
    placesTotal -= n;
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
      const line = lines.get(id);
      if (!line || stopping) return;
      if (!current || current.status !== 'ACTIVE' || suspect(id) || (line[0]!.delivery.leaseUntil ?? 0) - nowMicros(deps) < leaseMicros / 2) {
        await releaseLine(id);
        return;
      }
      while (line.length > 0 && inFlightTotal < total && capacityOf(id) > 0) {
        unplace(id);
        take(id);
        void run({ delivery: line.shift()!.delivery, connector: current });
      }
      if (line.length === 0) lines.delete(id);
    } catch (err) {
      log.error({ err }, 'delivery engine: attempting rows in line failed');
    } finally {
      draining.delete(id);
    }
  }

  /** Forgets the connector's line (its rows were deleted with its queue, or are given back): the rows it held. */
  function dropLine(id: string): ClaimedDelivery[] | undefined {
    const line = lines.get(id);
    if (!line) return undefined;
    lines.delete(id);
    unplace(id, line.length);
    return line;
  }

  /** Makes the connector's line due in the queue again, for claims to take. */
  async function releaseLine(id: string): Promise<void> {
    const line = dropLine(id);
    if (!line) return;
    backlog.set(id, ++generation);
    try {
      await deps.store.transaction((tx) => tx.deliveries.releaseLeases(nowMicros(deps), line.map((item) => item.delivery.id)));
    } catch (err) {
      // The rows stay leased; they come due when their leases end.
      log.error({ err }, 'delivery engine: giving rows in line back to the queue failed');
    }
    wake();
  }

  /** The hand-off of fresh rows (queue.ts): attached to the pipeline's queue consumer while the loop runs. */
  const handoff: DeliveryHandoff = {
    reserve(connectorId, now, competitors) {
      if (!started || stopping) return null;
      if (!backlog.has(connectorId) && inFlightTotal < total) {
        const waiting = places.get(connectorId) ?? 0;
        // The same fair share of the overall cap as a claim gives, here among the connectors the event goes to,
        // so that many new endpoints that turn out dead cannot take every slot before they are found out.
        if (waiting === 0 && capacityOf(connectorId, competitors) > 0) {
          take(connectorId);
          return { leaseUntil: now + leaseMicros, slot: true };
        }
        if (!suspect(connectorId) && waiting < lineLimit && placesTotal < linesLimit) {
          places.set(connectorId, waiting + 1);
          placesTotal++;
          return { leaseUntil: now + leaseMicros, slot: false };
        }
      }
      backlog.set(connectorId, ++generation);
      return null;
    },
    launch(item, slot) {
      const id = item.connector.id;
      // Stopping: the row stays leased and is released, then attempted, at the next start.
      if (!started || stopping) {
        if (slot) give(id);
        else unplace(id);
      } else if (slot) {
        void run(item);
      } else {
        let line = lines.get(id);
        if (!line) lines.set(id, (line = []));
        line.push(item);
        void drain(id);
      }
    },
    release(connectorId, slot) {
      if (slot) {
        give(connectorId);
        if (lines.has(connectorId)) void drain(connectorId);
        wake();
      } else {
        unplace(connectorId);
      }
    },
    queueDropped: dropLine,
  };

  // Opened signature secrets by sealed value: an AES-GCM open per attempt showed in the profile. A changed
  // secret has a new sealed value, so entries never go stale; the map is bounded.
  const openedSecrets = new Map<string, string>();
  function openSecret(sealed: string): string {
    if (sealed === '') return '';
    let plain = openedSecrets.get(sealed);
    if (plain === undefined) {
      plain = deps.secretBox.open(sealed);
      if (openedSecrets.size >= 10_000) openedSecrets.clear();
      openedSecrets.set(sealed, plain);
    }
    return plain;
  }

  function targetOf(item: ClaimedDelivery): PushTarget {
    const c = item.connector;
    return { url: c.url, headers: c.headers, signatureSecret: openSecret(c.signatureSecretSealed) };
  }

  /** One attempt: the push and how it ended. */
  async function send(item: ClaimedDelivery): Promise<Finished> {
    const startMs = deps.clock.now();
    let outcome: AttemptOutcome;
    try {
      outcome = await dispatcher.send(targetOf(item), item.delivery.body);
    } catch (err) {
      // The Dispatcher never throws by contract, and the secret opens unless the master key changed; either
      // way the row must not be lost, so it is a failed attempt like any other.
      outcome = { ok: false, reason: 'connection', responseTimeMs: Math.max(0, deps.clock.now() - startMs), message: `dispatcher error: ${(err as Error).message}` };
    }
    const endMs = Math.max(deps.clock.now(), startMs + outcome.responseTimeMs);
    if (outcome.ok) failing.delete(item.connector.id);
    else failing.add(item.connector.id);
    return { item, outcome, endMs };
  }

  /** Counts an attempt slot of the connector as taken. */
  function take(id: string): void {
    inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
    inFlightTotal += 1;
  }

  function give(id: string): void {
    const n = (inFlight.get(id) ?? 1) - 1;
    if (n <= 0) inFlight.delete(id);
    else inFlight.set(id, n);
    inFlightTotal -= 1;
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
    let starts = startedAt.get(id);
    if (!starts) startedAt.set(id, (starts = []));
    starts.push(start);
    const p = send(item).then((done) => {
      // Recorded first: its transaction is asked for before the next claim's, so it goes first in the commit
      // they share. Every moment a success is not yet recorded, a crash would send its event again.
      const recorded = record(done);
      const list = startedAt.get(id);
      if (list) {
        // Attempts mostly end in the order they started: shift, unlike splice, leaves no array behind.
        const at = list.indexOf(start);
        if (at === 0) list.shift();
        else list.splice(at, 1);
        if (list.length === 0) startedAt.delete(id);
      }
      give(id);
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
      take(item.connector.id);
      return run(item);
    });
  }

  function record(done: Finished): Promise<RunReport> {
    return new Promise((resolve) => {
      pending.push({ done, resolve });
      if (!flushing) flushing = flush();
    });
  }

  async function flush(): Promise<void> {
    while (pending.length > 0) {
      // Taken when the transaction runs, not when it is asked for: the store starts a transaction one loop turn
      // after it is requested, so the outcomes that arrive in this turn join it, and it shares the commit of
      // whatever else this turn asked for (no extra turn of its own before it, which widened the window in
      // which a crash sends an acknowledged event again).
      let batch: typeof pending | null = null;
      const takeBatch = () => {
        const b = pending;
        pending = [];
        return b;
      };
      // Set by the transaction below, or by its failure.
      let reports: RunReport[] = [];
      let disabled: Array<{ connectorId: string; projectId: string; failingSince: number | null; dropped: number }> = [];
      try {
        // Re-runnable, so a shared SQLite commit runs it without a savepoint: each call starts its reports over.
        await deps.store.transaction(async (tx) => {
          batch ??= takeBatch();
          reports = attemptedReports(batch.length);
          disabled = [];
          const samples: AttemptSample[] = [];
          const counters: Record<string, number> = {};
          for (let i = 0; i < batch.length; i++) {
            await apply(tx, batch[i]!.done, reports[i]!, samples, counters, disabled);
          }
          await recordAttemptMetrics(tx, samples);
          attemptCounterDeltas(samples, counters);
          await tx.connectorMetrics.addCounters(counters);
        }, { rerunnable: true });
      } catch (err) {
        // Nothing was recorded; the rows stay leased and come back when the lease ends.
        batch ??= takeBatch();
        reports = attemptedReports(batch.length);
        disabled = [];
        log.error({ err }, 'delivery engine: recording attempt outcomes failed');
      }
      for (const d of disabled) {
        dropLine(d.connectorId);
        log.warn(
          { connector: dataConnectorName(d.projectId, d.connectorId), from: 'ACTIVE', to: 'SYSTEM_DISABLED', failingSince: d.failingSince, droppedDeliveries: d.dropped },
          'data connector disabled by the service: every push attempt failed for 5 days',
        );
      }
      // (The transaction took the batch unless it failed before running at all.)
      (batch ?? takeBatch()).forEach((b, i) => b.resolve(reports[i]!));
    }
    flushing = null;
  }

  /** The effects of one outcome (contract §6.4-6.6), inside the group transaction. */
  async function apply(
    tx: Repos, done: Finished, report: RunReport, samples: AttemptSample[], counters: Record<string, number>,
    disabled: Array<{ connectorId: string; projectId: string; failingSince: number | null; dropped: number }>,
  ): Promise<void> {
    const { item, outcome, endMs } = done;
    const row = item.delivery;
    const connector = await tx.dataConnectors.get(item.connector.id);
    // Deleted meanwhile: its queue and metrics are gone with it.
    if (!connector) return;
    const end = Math.floor(endMs * 1000);
    samples.push({ connectorId: connector.id, time: end, reason: outcome.reason, ok: outcome.ok, responseTimeMs: outcome.responseTimeMs });

    if (outcome.ok) {
      report.acked = 1;
      if (await tx.deliveries.delete(row.id)) bump(counters, series.deliveries('acked'));
      const next = afterSuccess(connector);
      if (next.failingSince !== connector.failingSince) await tx.dataConnectors.updateState(connector.id, next.status, next.failingSince, end);
      return;
    }

    report.failed = 1;
    log.debug({ connector: dataConnectorName(connector.projectId, connector.id), eventId: row.eventId, attempt: row.attempts + 1, reason: outcome.reason, status: outcome.status, message: outcome.message }, 'push attempt failed');
    // Disabled (or re-enabled after a drop) while the attempt was in flight: it counts, but is not retried.
    if (connector.status !== 'ACTIVE') {
      await tx.deliveries.delete(row.id);
      return;
    }
    const next = afterFailure(connector, end);
    if (next.status !== connector.status || next.failingSince !== connector.failingSince) {
      await tx.dataConnectors.updateState(connector.id, next.status, next.failingSince, end);
    }
    if (next.dropQueue) {
      const n = await dropQueue(tx, connector.id);
      bump(counters, series.deliveries('dropped'), n);
      report.dropped += n;
      disabled.push({ connectorId: connector.id, projectId: connector.projectId, failingSince: next.failingSince, dropped: n });
      return;
    }
    const attemptNumber = row.attempts + 1;
    const dueMs = nextAttemptTime(attemptNumber, endMs, row.enqueueTime / 1000, outcome.responseTimeMs, outcome.retryAfterSeconds);
    if (dueMs === null) {
      // The next attempt would fall at or after 12 h from enqueue: dropped now, without it.
      if (await tx.deliveries.delete(row.id)) {
        bump(counters, series.deliveries('dropped'));
        report.dropped += 1;
      }
    } else {
      await tx.deliveries.reschedule(row.id, attemptNumber, Math.ceil(dueMs * 1000));
    }
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
          // SQLite has one writer process: a lease left over from before a restart belongs to no live attempt.
          if (deps.store.kind === 'sqlite') await deps.store.deliveries.releaseLeases(nowMicros(deps));
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
      for (const id of lines.keys()) void drain(id);
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
      deps.deliveryHandoff.attach(handoff);
      schedulePoll();
      wake();
      log.info({ perConnectorConcurrency: perConnector, totalConcurrency: total }, 'delivery engine started');
    },

    async stop() {
      if (!started) return;
      stopping = true;
      deps.deliveryHandoff.attach(null);
      if (timer) clearTimeout(timer);
      timer = null;
      unsubscribe?.();
      unsubscribe = null;
      if (pumping) await pumping;
      while (running > 0) await new Promise<void>((resolve) => idle.push(resolve));
      if (flushing) await flushing;
      // Rows in line stay leased: the next start releases every lease (no attempt is in flight by then).
      lines.clear();
      places.clear();
      placesTotal = 0;
      leasesReleased = false;
      started = false;
      stopping = false;
      log.info('delivery engine stopped');
    },

    async runOnce() {
      const report: RunReport = { attempted: 0, acked: 0, failed: 0, dropped: 0 };
      report.dropped += await housekeeping();
      const running = new Set<Promise<void>>();
      const claimMore = async () => {
        for (const p of launch(await claim())) {
          const tracked: Promise<void> = p.then((r) => {
            report.attempted += r.attempted;
            report.acked += r.acked;
            report.failed += r.failed;
            report.dropped += r.dropped;
            running.delete(tracked);
          });
          running.add(tracked);
        }
      };
      // Claims again whenever an attempt finishes (capacity freed), like the background loop. Every claimed row
      // is deleted or rescheduled at least 8 s ahead, so this ends once nothing due is left.
      await claimMore();
      while (running.size > 0) {
        await Promise.race(running);
        await claimMore();
      }
      return report;
    },

    wake,
  };
}
