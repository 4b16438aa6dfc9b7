// The delivery log's rows as both SQL backends keep them (delivery-log.ts of each store): triggers, states and attempt
// outcomes as small integer codes, and each attempt as a compact JSON object, so a logged attempt costs tens of bytes
// beyond its response snippet. The codes are stored: a new one is added at the end, never renumbered.
import { DEFERRED_DUE } from '../contract/connector-repos.ts';
import type {
  AttemptOutcomeClass,
  DeliveryLogFilter,
  DeliveryLogRecord,
  DeliveryState,
  DeliveryTrigger,
  LoggedAttempt,
  LogOutcome,
} from '../contract/delivery-log.ts';

const TRIGGERS: readonly DeliveryTrigger[] = ['EVENT', 'SYNC', 'RESEND', 'REPLAY', 'TEST'];
const STATES: readonly DeliveryState[] = ['PENDING', 'RETRYING', 'DELIVERED', 'EXPIRED', 'DISCARDED', 'FAILED'];
const OUTCOMES: readonly AttemptOutcomeClass[] = [
  'SUCCESS',
  'HTTP_ERROR',
  'TIMEOUT',
  'CONNECTION_REFUSED',
  'CONNECTION_RESET',
  'TLS_ERROR',
  'DNS_ERROR',
  'BLOCKED_ADDRESS',
  'OTHER',
];

/** The stored code of a trigger; EVENT is 0, the queue's column default (the live path never writes it). */
export const triggerCode = (t: DeliveryTrigger | undefined): number => (t === undefined ? 0 : TRIGGERS.indexOf(t));
/** The trigger of a stored code (an unknown one, of a newer release, reads as EVENT). */
export const triggerOf = (code: number): DeliveryTrigger => TRIGGERS[code] ?? 'EVENT';

export const stateCode = (s: DeliveryState): number => STATES.indexOf(s);
export const stateOf = (code: number): DeliveryState => STATES[code] ?? 'PENDING';
/** The codes the statements compare with. PENDING is never stored: it is what a queued row, or a retry in flight, reads as. */
export const PENDING = 0;
export const RETRYING = 1;
export const DELIVERED = 2;
export const EXPIRED = 3;
export const DISCARDED = 4;
export const FAILED = 5;
/** The states a delivery ends in: read as they are stored. */
const ENDED = [DELIVERED, EXPIRED, DISCARDED, FAILED];
/** Every state a log row can hold. */
export const LOGGED_STATES: readonly number[] = [RETRYING, ...ENDED];

/**
 * What a list reads for a filter's states (as read: a RETRYING delivery whose next attempt is in flight reads
 * PENDING, and so does a queued row without a log row).
 */
export interface StatePlan {
  /** The ended states asked for, read from the log as they are. */
  ended: number[];
  /**
   * The RETRYING deliveries asked for: every one (each read PENDING while in flight), only those not in flight, only
   * those in flight (PENDING asked for, RETRYING not), or none.
   */
  retrying: 'all' | 'waiting' | 'in-flight' | null;
  /** Whether queued rows without a log row can pass (PENDING; a TEST is never queued). */
  queued: boolean;
}

export function statePlan(f: Pick<DeliveryLogFilter, 'states' | 'trigger'>): StatePlan {
  const asked = (s: DeliveryState) => f.states === undefined || f.states.includes(s);
  const [pending, retrying] = [asked('PENDING'), asked('RETRYING')];
  return {
    ended: ENDED.filter((code) => asked(stateOf(code))),
    retrying: pending && retrying ? 'all' : retrying ? 'waiting' : pending ? 'in-flight' : null,
    queued: pending && f.trigger !== 'TEST',
  };
}

/** Whether a delivery in this state (as read) passes the plan (a filter's states). */
export const passes = (state: number, plan: StatePlan): boolean =>
  state === PENDING
    ? plan.retrying === 'all' || plan.retrying === 'in-flight'
    : state === RETRYING
      ? plan.retrying === 'all' || plan.retrying === 'waiting'
      : plan.ended.includes(state);

/** The newest `limit` rows of several lists (ids are unique: a delivery is in one of them). */
export const newest = <T extends { id: number }>(rows: T[], limit: number): T[] =>
  rows.sort((a, b) => b.id - a.id).slice(0, limit);

/**
 * An attempt as stored: t time, d duration (micros), o outcome code; s HTTP status, b response snippet, x truncated
 * (1), e error line, each left out when 0, empty or false (a success with `{"ok":true}` is ~60 bytes).
 */
interface StoredAttempt {
  t: number;
  d: number;
  o: number;
  s?: number;
  b?: string;
  x?: 1;
  e?: string;
}

/** A number as JSON: one that is not finite is written 0, never as text that is not JSON. */
const finite = (n: number): number => (Number.isFinite(n) ? n : 0);

/**
 * An attempt as the JSON of its StoredAttempt, written directly: JSON.stringify of an object made for it was ~1 µs
 * per attempt at saturation (2026-11-29). The numbers are integers (micros, codes, a status);
 * the strings go through JSON.stringify.
 */
function attemptJson(a: LoggedAttempt): string {
  let json = `{"t":${finite(a.time)},"d":${finite(a.durationMicros)},"o":${Math.max(0, OUTCOMES.indexOf(a.outcome))}`;
  if (a.httpStatus !== 0) json += `,"s":${finite(a.httpStatus)}`;
  if (a.responseBody !== '') json += `,"b":${JSON.stringify(a.responseBody)}`;
  if (a.responseBodyTruncated) json += ',"x":1';
  if (a.error !== '') json += `,"e":${JSON.stringify(a.error)}`;
  return `${json}}`;
}

/** An outcome's attempts as the JSON array the log's `attempts` column holds (or appends). */
export const attemptsJson = (attempts: readonly LoggedAttempt[]): string => `[${attempts.map(attemptJson).join(',')}]`;

const loggedAttempt = (s: StoredAttempt): LoggedAttempt => ({
  time: s.t,
  durationMicros: s.d,
  outcome: OUTCOMES[s.o] ?? 'OTHER',
  httpStatus: s.s ?? 0,
  responseBody: s.b ?? '',
  responseBodyTruncated: s.x === 1,
  error: s.e ?? '',
});

/**
 * A delivery as the list and get statements of both stores answer it: a log row, or a queued row that has none
 * (state PENDING), its state already as read (a retry in flight reads PENDING, its next attempt time null). The
 * attempts are there only in get's answer: text on SQLite, parsed jsonb on PostgreSQL.
 */
export interface DeliveryLogRow {
  id: number;
  connector_id: string;
  event_id: string;
  event_type: string | null;
  device_id: string | null;
  trigger: number;
  state: number;
  attempt_count: number;
  create_time: number;
  update_time: number;
  next_attempt_time: number | null;
  attempts?: string | StoredAttempt[];
}

export function toLogRecord(r: DeliveryLogRow): DeliveryLogRecord {
  const record: DeliveryLogRecord = {
    id: r.id,
    connectorId: r.connector_id,
    eventId: r.event_id,
    eventType: r.event_type ?? '',
    deviceId: r.device_id ?? '',
    trigger: triggerOf(r.trigger),
    state: stateOf(r.state),
    attemptCount: r.attempt_count,
    createTime: r.create_time,
    updateTime: r.update_time,
    // A deferred row (a replay's, waiting for its piece to be made due) has no time of its own yet.
    nextAttemptTime: r.next_attempt_time !== null && r.next_attempt_time >= DEFERRED_DUE ? null : r.next_attempt_time,
  };
  if (r.attempts !== undefined) {
    const stored = typeof r.attempts === 'string' ? (JSON.parse(r.attempts) as StoredAttempt[]) : r.attempts;
    record.attempts = stored.map(loggedAttempt);
  }
  return record;
}

/**
 * Outcomes merged per delivery, in order (one statement cannot update a row twice): each delivery's attempts in the
 * order recorded, its other fields from its last outcome. Sorted by id, the order every writer of the log locks its
 * rows in.
 */
export interface MergedOutcome {
  last: LogOutcome;
  attempts: LoggedAttempt[];
}

export function mergeOutcomes(into: Map<number, MergedOutcome>, outcomes: readonly LogOutcome[]): void {
  for (const o of outcomes) {
    const m = into.get(o.id);
    if (m === undefined) into.set(o.id, { last: o, attempts: [o.attempt] });
    else {
      m.last = o;
      m.attempts.push(o.attempt);
    }
  }
}

export const sortedById = (merged: Map<number, MergedOutcome>): MergedOutcome[] =>
  [...merged.values()].sort((a, b) => a.last.id - b.last.id);
