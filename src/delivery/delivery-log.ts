// The engine's side of the delivery log (extensions §X1; the log itself is the store's: store/contract/delivery-log.ts):
// what an attempt's outcome logs (written by the outcomes' group commit, outcomes.ts, in the transaction that records
// the outcome), the time a dropped queue is logged at, the periodic pruning (retention and the per-connector cap,
// run by the housekeeping pass) and a deleted connector's log going with it.
import type { Config } from '../config.ts';
import { dataConnectorName } from '../domain/names.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { DeliveryRecord } from '../store/contract/connector-repos.ts';
import type { DeliveryState, LoggedAttempt, LogOutcome } from '../store/contract/delivery-log.ts';
import type { Store } from '../store/contract/store.ts';
import { inPieces } from '../store/jobs/in-pieces.ts';
import { outcomeClassOf } from './classify.ts';
import { decodeResponseBody } from './response-snippet.ts';
import type { AttemptOutcome } from './types.ts';

/** config.deliveryLog: deliveries kept this long, and at most `max` per connector; `max` 0 turns the log off. */
export type DeliveryLogOptions = Config['deliveryLog'];

/** The service's defaults (config.ts), for an engine made without options (tests, tools). */
export const DEFAULT_DELIVERY_LOG: DeliveryLogOptions = Object.freeze({ retentionSeconds: 72 * 3600, max: 100_000 });

/** Whether attempts and drops are logged. Off (max 0), the log is still pruned: rows left from when it was on. */
export const deliveryLogOn = (options: DeliveryLogOptions): boolean => options.max > 0;

/**
 * The time (micros) a drop of a connector's queue logs its rows at (DeliveryRepo.deleteByConnector's logAt), or
 * undefined when the log is off. For the services' drops (a connector disabled, or enabled with rows left).
 */
export function dropLogTime(deps: { config: Pick<Config, 'deliveryLog'>; clock: Clock }): number | undefined {
  return deliveryLogOn(deps.config.deliveryLog) ? nowMicros(deps) : undefined;
}

/** Longest error line an attempt keeps: the dispatcher's messages are a prefix and at most 300 characters of cause. */
const MAX_ERROR_LENGTH = 320;

/** One short line of an outcome's message (which never holds the answer's body or the secret: types.ts). */
function errorLine(message: string): string {
  const line = message.replace(/\s+/g, ' ').trim();
  return line.length <= MAX_ERROR_LENGTH ? line : `${line.slice(0, MAX_ERROR_LENGTH - 1)}…`;
}

/**
 * An attempt as the log keeps it, started at `startMs`. The start of the answer is kept only for an address that
 * passed the SSRF guard (a BLOCKED_ADDRESS attempt made no request, §X1); it goes to the log's table, never to the
 * service's own log. Also what a `:test` push logs (DeliveryLogRepo.recordTest) from pushOnce's outcome.
 */
export function loggedAttempt(outcome: AttemptOutcome, startMs: number): LoggedAttempt {
  const cls = outcomeClassOf(outcome);
  const blocked = cls === 'BLOCKED_ADDRESS';
  return {
    time: Math.floor(startMs * 1000),
    durationMicros: Math.round(outcome.responseTimeMs * 1000),
    outcome: cls,
    httpStatus: outcome.status ?? 0,
    responseBody: blocked ? '' : decodeResponseBody(outcome.responseBody),
    responseBodyTruncated: !blocked && outcome.responseBodyTruncated === true,
    error: outcome.ok ? '' : errorLine(outcome.message),
  };
}

const EVENT_START = '{"event":{';
const EVENT_TYPE_KEY = '"eventType":"';
const DEVICE_ID_KEY = '"metadata":{"deviceId":"';
/** Event types and device ids are short names; anything longer is not one. */
const MAX_FIELD_BYTES = 256;
/** Printable ASCII but the quote and the backslash: a value that needs no decoding (ids and event types are so). */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/**
 * How much of each end of a body is read: the event's type is among its first fields, the body's own metadata is its
 * last object. Read as latin1 strings and searched in JavaScript: Buffer.indexOf and lastIndexOf with a needle took
 * ~1 µs a call, eventFieldsOf ~2 µs per attempt (5 % of the log's cost at saturation, 2026-11-29).
 */
const EDGE_BYTES = 512;

/** The JSON string value starting at `from` when it is short, plain ASCII and has no escape in it; null otherwise. */
function plainStringAt(text: string, from: number): string | null {
  const end = text.indexOf('"', from);
  if (end < 0 || end - from > MAX_FIELD_BYTES) return null;
  const value = text.slice(from, end);
  return PLAIN.test(value) ? value : null;
}

/**
 * The event type and device id of a push body (push-body.ts: `{"event":{…,"eventType":…},"labels":…,"metadata":
 * {"deviceId":…,…}}`), read without parsing it: this runs for every attempt, inside the outcomes' transaction. A key
 * with its quotes can appear only as a key (a quote inside a JSON string is escaped): the first `"eventType":"` is the
 * event's own (it comes before the event's data), and the last `"metadata":{"deviceId":"` is the body's own (metadata
 * comes last, after the labels). A body of another shape, or whose fields are not within EDGE_BYTES of its ends, is
 * parsed instead; one that is not JSON gives '' for both, so a malformed body never stops an outcome from being
 * recorded.
 */
export function eventFieldsOf(body: Buffer): { eventType: string; deviceId: string } {
  const head = body.toString('latin1', 0, Math.min(body.length, EDGE_BYTES));
  if (head.startsWith(EVENT_START)) {
    const tail = body.length <= EDGE_BYTES ? head : body.toString('latin1', body.length - EDGE_BYTES);
    const type = head.indexOf(EVENT_TYPE_KEY, EVENT_START.length);
    const device = tail.lastIndexOf(DEVICE_ID_KEY);
    const eventType = type < 0 ? null : plainStringAt(head, type + EVENT_TYPE_KEY.length);
    const deviceId = device < 0 ? null : plainStringAt(tail, device + DEVICE_ID_KEY.length);
    if (eventType !== null && deviceId !== null) return { eventType, deviceId };
  }
  try {
    const parsed = JSON.parse(body.toString('utf8')) as {
      event?: { eventType?: unknown };
      metadata?: { deviceId?: unknown };
    } | null;
    const eventType = parsed?.event?.eventType;
    const deviceId = parsed?.metadata?.deviceId;
    return {
      eventType: typeof eventType === 'string' ? eventType : '',
      deviceId: typeof deviceId === 'string' ? deviceId : '',
    };
  } catch {
    return { eventType: '', deviceId: '' };
  }
}

/** What an attempt on a queue row logs: the delivery's state after it, and when its next attempt is due (RETRYING). */
export function logOutcomeOf(
  row: Pick<DeliveryRecord, 'id' | 'connectorId' | 'eventId' | 'body' | 'enqueueTime' | 'trigger'>,
  outcome: AttemptOutcome,
  startMs: number,
  end: { time: number; state: LogOutcome['state']; nextAttemptTime: number | null },
): LogOutcome {
  const { eventType, deviceId } = eventFieldsOf(row.body);
  return {
    id: row.id,
    connectorId: row.connectorId,
    eventId: row.eventId,
    eventType,
    deviceId,
    trigger: row.trigger ?? 'EVENT',
    createTime: row.enqueueTime,
    state: end.state,
    attempt: loggedAttempt(outcome, startMs),
    nextAttemptTime: end.nextAttemptTime,
    updateTime: end.time,
  };
}

/** Deliveries removed per transaction by pruning and by a connector's deletion (each removes its attempts too). */
export const LOG_PIECE = 5_000;
/**
 * Pieces one pruning pass removes at most: the pass runs before the pump's claim, so a log left to grow (a process
 * down for days) is pruned over several passes (5 s apart) instead of holding the claims up. Far more than a
 * pass's growth: 200,000 deliveries per 5 s.
 */
const MAX_PIECES_PER_PASS = 40;

/**
 * Prunes the log at `now` (micros): deliveries created before the retention, then each connector's oldest beyond
 * `max`, a piece at a time so none holds the writer for long. With the log off only the retention applies: the
 * deliveries left from when it was on go as they age. Returns how many deliveries it removed. Run by the housekeeping
 * pass, so on a shared store by one process at a time (its leader).
 *
 * A piece is one statement, its own transaction, outside `store.transaction`: on SQLite that one joined the group
 * commit in a SAVEPOINT (a sub-journal holding every page the piece changed) among the outcomes and publishes batched
 * with it. Outside it, the main thread's CPU per delivered event with the log was a median 110.5 % of the service
 * without it over six end-to-end runs, against 116.5 % inside it (2026-11-29, docs/benchmarks-log.md).
 */
export async function pruneDeliveryLog(store: Store, now: number, options: DeliveryLogOptions): Promise<number> {
  let pieces = 0;
  let removed = 0;
  /** Runs pieces until one comes short or the pass's budget is spent; false when it is spent. */
  const run = async (piece: () => Promise<number>): Promise<boolean> => {
    while (pieces < MAX_PIECES_PER_PASS) {
      pieces++;
      const n = await piece();
      removed += n;
      if (n < LOG_PIECE) return true;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return false;
  };
  const cutoff = now - options.retentionSeconds * 1_000_000;
  if (!(await run(() => store.deliveryLog.deleteBefore(cutoff, LOG_PIECE)))) return removed;
  if (!deliveryLogOn(options)) return removed;
  for (const connectorId of await store.deliveryLog.connectorsOver(options.max)) {
    const edge = await store.deliveryLog.trimEdge(connectorId, options.max);
    if (edge === null) continue;
    if (!(await run(() => store.deliveryLog.trim(connectorId, edge, LOG_PIECE)))) break;
  }
  return removed;
}

/**
 * A deleted connector's log, a piece per transaction (after its queue: a drop does not log the rows of a deleted
 * connector). Never fails: what a failure leaves goes with the retention, and no read can reach it (its connector is
 * gone).
 */
export async function deleteConnectorLog(
  deps: { store: Store; logger: Logger },
  projectId: string,
  connectorId: string,
): Promise<void> {
  try {
    await inPieces(deps.store, (tx) => tx.deliveryLog.deleteByConnector(connectorId, LOG_PIECE));
  } catch (err) {
    deps.logger.warn(
      { err, connector: dataConnectorName(projectId, connectorId) },
      "data connector: deleting its delivery log failed; the rest goes with the log's retention",
    );
  }
}

/** The log's state for an outcome's effect (outcomes.ts): the kind of effect it had on the row. */
export function loggedState(
  kind: 'ack' | 'discard' | 'retry' | 'expire' | 'disable',
): Exclude<DeliveryState, 'PENDING'> {
  switch (kind) {
    case 'ack':
      return 'DELIVERED';
    case 'retry':
      return 'RETRYING';
    case 'expire':
      return 'EXPIRED';
    default:
      // discard: disabled while in flight; disable: this failure disabled the connector (the rest of its queue is
      // logged DISCARDED by the drop that follows).
      return 'DISCARDED';
  }
}
