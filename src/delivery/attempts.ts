// One attempt of a row whose slot is taken (claimed, handed off, or out of a line): the push through the Dispatcher,
// the slot given back as soon as the push ends, the outcome handed to the recorder (outcomes.ts) and, on a shared
// store, the row counted out of the cluster's attempts in flight until it commits (ended-rows.ts). Also the one
// attempt of a `:test` push (pushOnce, extensions §X2), through the very same push: only the row's part is left out.
import { tooManyRequests } from '../domain/errors.ts';
import { overlapRuns } from '../domain/secret-rotation.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { DataConnectorRecord } from '../store/contract/connector-repos.ts';
import type { DeliveryTrigger } from '../store/contract/delivery-log.ts';
import { leaseHalfOver, type ClaimedDelivery } from './claim.ts';
import type { EndedRows } from './ended-rows.ts';
import type { Finished, OutcomeRecorder, RunReport } from './outcomes.ts';
import { spacingOf } from './pacing.ts';
import type { Slots } from './slots.ts';
import type { AttemptOutcome, Dispatcher, PushTarget } from './types.ts';

/**
 * pushOnce's attempts in flight at once, per connector and overall. They take no attempt slot (slots.ts), so a
 * saturated connector never holds a test push up beyond the transport's own deadline, and a few of them never
 * starve the live deliveries of the connections they share (64 per receiver origin in the dispatcher).
 */
export const PUSH_ONCE_PER_CONNECTOR = 2;
export const PUSH_ONCE_TOTAL = 16;

export interface AttemptDeps {
  clock: Clock;
  logger: Logger;
  dispatcher: Dispatcher;
  slots: Slots;
  outcomes: Pick<OutcomeRecorder, 'record'>;
  /** Opens a connector's sealed signature secret (opened-secrets.ts). */
  openSecret(sealed: string): string;
  /** How long a row is leased, micros. */
  leaseMicros: number;
  /** On a store several processes share: where ended attempts wait for their outcomes to commit. Null otherwise. */
  ended: EndedRows | null;
  /** A slot of the connector was given back (the push ended, or was not begun): its line may move, a backlog too. */
  freed(connectorId: string): void;
  /**
   * Resolves after `ms` (a paced row's wait for its start time, pacing.ts). Default: a timer; a test on a fake clock
   * moves the clock instead.
   */
  wait?(ms: number): Promise<void>;
}

export interface Attempts {
  /** Attempts a row in a slot already taken; resolves once its outcome is recorded. */
  run(item: ClaimedDelivery): Promise<RunReport>;
  /** Takes a slot for each claimed row and attempts it. */
  launch(items: ClaimedDelivery[]): Array<Promise<RunReport>>;
  /**
   * One attempt of `body` to the connector now, as a queued row's (pushOnce, handoff.ts): not queued, not retried,
   * not recorded (no metrics, no counters, no health). Resolves with the outcome of the attempt, failures included;
   * rejects without an attempt (ApiError 429) while the connector, or the engine, has too many of them in flight.
   */
  pushOnce(connector: DataConnectorRecord, body: Buffer, trigger: DeliveryTrigger): Promise<AttemptOutcome>;
  /** Resolves when every attempt begun so far is recorded. */
  idle(): Promise<void>;
  /** The connectors with an attempt in flight for too long now (slots.ts), with their projects, to name them. */
  hanging(): Array<{ id: string; projectId: string }>;
}

export function createAttempts(deps: AttemptDeps): Attempts {
  const { clock, slots, dispatcher, outcomes, ended } = deps;
  // The project of each connector an attempt was made for, to name it in the log.
  const projectOf = new Map<string, string>();
  // Attempts not yet recorded, and who waits for them to reach 0 (stop). A counter, not a set of promises: every
  // attempt passes here, and tracking each one in a set cost three promises and two closures more.
  let running = 0;
  let waiting: Array<() => void> = [];
  const settled = (): void => {
    if (--running > 0) return;
    const resolved = waiting;
    waiting = [];
    for (const resolve of resolved) resolve();
  };

  /**
   * Where and how the connector is pushed to by an attempt starting at `startMs` (contract §6.1): its URL, custom
   * headers and opened secret, the previous secret while a rotation's overlap runs at the start (§X3: one attempt,
   * signed twice), a probe while it is failing or suspect, and the trigger header of a delivery that no published
   * event made (§X2).
   */
  function targetOf(c: DataConnectorRecord, trigger: DeliveryTrigger | undefined, startMs: number): PushTarget {
    const target: PushTarget = {
      url: c.url,
      headers: c.headers,
      signatureSecret: deps.openSecret(c.signatureSecretSealed),
      probe: slots.suspect(c.id),
    };
    if (overlapRuns(c, startMs * 1000))
      target.previousSignatureSecret = deps.openSecret(c.previousSignatureSecretSealed!);
    if (trigger !== undefined && trigger !== 'EVENT') target.trigger = trigger;
    return target;
  }

  /** One push of `body` to the connector, started at `startMs`, and how it went. */
  async function push(
    c: DataConnectorRecord,
    body: Buffer,
    trigger: DeliveryTrigger | undefined,
    startMs: number,
  ): Promise<AttemptOutcome> {
    try {
      return await dispatcher.send(targetOf(c, trigger, startMs), body);
    } catch (err) {
      // The Dispatcher never throws by contract, and the secret opens unless the master key changed; either
      // way it is a failed attempt like any other, so that a row is never lost.
      return {
        ok: false,
        reason: 'connection',
        responseTimeMs: Math.max(0, clock.now() - startMs),
        message: `dispatcher error: ${(err as Error).message}`,
      };
    }
  }

  /** The push and how it ended. */
  async function send(item: ClaimedDelivery, startMs: number): Promise<Finished> {
    const outcome = await push(item.connector, item.delivery.body, item.delivery.trigger, startMs);
    return { item, outcome, startMs, endMs: Math.max(clock.now(), startMs + outcome.responseTimeMs) };
  }

  // pushOnce's attempts in flight, per connector and in all.
  const onceOf = new Map<string, number>();
  let onceTotal = 0;

  /**
   * The slot is given back as soon as the push has ended: it bounds requests at the endpoint, and the row stays
   * leased until the outcome is recorded, so no claim can take it again meanwhile. (Holding the slot through the
   * recording transaction, which waits its turn behind the publishes of a busy event loop, capped one connector at
   * ~2,600 pushes/s with 64 slots.)
   */
  function run(item: ClaimedDelivery): Promise<RunReport> {
    const id = item.connector.id;
    const start = clock.now();
    if (leaseLapsing(item.delivery.leaseUntil, start)) {
      // Not attempted: the row comes due when its lease ends, for any claim (this process's too).
      slots.give(id);
      deps.freed(id);
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
      deps.freed(id);
      if (ended !== null) ended.add(id, item.delivery.id, recorded);
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
    if (leaseUntil === null || !leaseHalfOver(leaseUntil, nowMs * 1000, deps.leaseMicros)) return false;
    if (lapsed++ === 0) {
      setImmediate(() => {
        deps.logger.warn(
          { rows: lapsed },
          'delivery engine: rows not attempted, their leases half over before their attempts could start (was this process paused?); they come due again when the leases end',
        );
        lapsed = 0;
      });
    }
    return true;
  }

  const wait = deps.wait ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));

  /**
   * A paced connector's rows (pacing.ts) wait in their slots for their start times, one after another, and a start
   * never comes sooner than the connector's rate allows after the ones before it actually started: a generic cell
   * rate check (GCRA) with a tolerance of half the spacing. A timer that fires late (a busy event loop) would otherwise
   * start the late rows together with the next ones on time (102 starts in a second at maxRate 100 after a 20 ms
   * stall); spacing each start from the one before instead made every late timer push all later ones back (93 a
   * second at maxRate 100). With the check, any one second holds at most ⌈maxRate⌉ + 1 starts and a start a little
   * late delays none after it. Counted as running, so that stop() waits for them too.
   */
  const paced = new Map<string, { tail: Promise<void>; due: number }>();
  function runAt(item: ClaimedDelivery, startAt: number): Promise<RunReport> {
    const id = item.connector.id;
    const spacingMs = spacingOf(item.connector.deliveryConfig?.maxRate || Infinity) / 1000;
    let line = paced.get(id);
    if (!line) paced.set(id, (line = { tail: Promise.resolve(), due: -Infinity }));
    const own = line;
    const started = own.tail.then(async () => {
      const ms = Math.max(startAt / 1000, own.due - spacingMs / 2) - clock.now();
      if (ms > 0) await wait(ms);
      // The theoretical time of the next start: a start on time or early moves it by one spacing, a late one from
      // when it actually started.
      own.due = Math.max(own.due, clock.now()) + spacingMs;
    });
    own.tail = started;
    running++;
    const p = started.then(() => run(item));
    p.then(settled, settled);
    return p;
  }

  return {
    run,
    launch(items) {
      return items.map((item) => {
        slots.take(item.connector.id);
        return item.startAt === undefined ? run(item) : runAt(item, item.startAt);
      });
    },
    pushOnce(connector, body, trigger) {
      const id = connector.id;
      const held = onceOf.get(id) ?? 0;
      if (held >= PUSH_ONCE_PER_CONNECTOR || onceTotal >= PUSH_ONCE_TOTAL) {
        // An attempt ends within about twice the 10 s deadline (a wait for a connection, then the request).
        return Promise.reject(
          tooManyRequests(
            10,
            held >= PUSH_ONCE_PER_CONNECTOR
              ? `${PUSH_ONCE_PER_CONNECTOR} test pushes of this data connector are in flight already; try again once they have answered`
              : 'too many test pushes are in flight; try again in a few seconds',
          ),
        );
      }
      onceOf.set(id, held + 1);
      onceTotal++;
      return push(connector, body, trigger, clock.now()).finally(() => {
        const n = (onceOf.get(id) ?? 1) - 1;
        if (n <= 0) onceOf.delete(id);
        else onceOf.set(id, n);
        onceTotal--;
      });
    },
    async idle() {
      while (running > 0) await new Promise<void>((resolve) => waiting.push(resolve));
    },
    hanging() {
      return slots.hanging().map((id) => ({ id, projectId: projectOf.get(id) ?? '' }));
    },
  };
}
