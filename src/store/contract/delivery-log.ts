// The delivery log (extensions §X1): every delivery of an event to a connector, with each attempt. A delivery's id
// is its queue row's id (ids are never reused, on either store), so a delivery is one thing from its enqueue to its
// end: while it waits for its first attempt it is only its queue row (PENDING, read from the queue itself: nothing
// more is written per queued event); its first outcome writes its log row, in the transaction that records the
// outcome, and each later outcome updates it (its attempt appended). A queue row removed without an attempt's
// outcome (the 12-hour drop, a disabled connector's queue) is logged by the statement that removes it. A TEST
// delivery has no queue row: it is logged once, final, with an id drawn from the queue's sequence.

/**
 * The class of an attempt in the delivery log (extensions §X1, Attempt.outcome). It refines `reason`: `ack` is
 * SUCCESS, `http_status` HTTP_ERROR, `timeout` TIMEOUT, `tls` TLS_ERROR, `refused_address` BLOCKED_ADDRESS, and
 * `connection` is CONNECTION_REFUSED, CONNECTION_RESET, DNS_ERROR or OTHER.
 */
export type AttemptOutcomeClass =
  | 'SUCCESS'
  | 'HTTP_ERROR'
  | 'TIMEOUT'
  | 'CONNECTION_REFUSED'
  | 'CONNECTION_RESET'
  | 'TLS_ERROR'
  | 'DNS_ERROR'
  | 'BLOCKED_ADDRESS'
  | 'OTHER';

/** What made a delivery: a published event, `:sync`, `:resend`, `:replay` or `:test`. */
export type DeliveryTrigger = 'EVENT' | 'SYNC' | 'RESEND' | 'REPLAY' | 'TEST';
export const DELIVERY_TRIGGERS: readonly DeliveryTrigger[] = ['EVENT', 'SYNC', 'RESEND', 'REPLAY', 'TEST'];

/**
 * PENDING: queued or in flight; RETRYING: its last attempt failed, the next one is scheduled; DELIVERED; EXPIRED: not
 * acknowledged within 12 h; DISCARDED: the connector was disabled or deleted; FAILED: a TEST whose one attempt failed.
 */
export type DeliveryState = 'PENDING' | 'RETRYING' | 'DELIVERED' | 'EXPIRED' | 'DISCARDED' | 'FAILED';
export const DELIVERY_STATES: readonly DeliveryState[] = [
  'PENDING',
  'RETRYING',
  'DELIVERED',
  'EXPIRED',
  'DISCARDED',
  'FAILED',
];

/** One push attempt as the log keeps it. Times in micros. */
export interface LoggedAttempt {
  /** When the attempt started. */
  time: number;
  /** From its start until the answer's headers arrived or it failed. */
  durationMicros: number;
  outcome: AttemptOutcomeClass;
  /** 0 when there was no HTTP answer. */
  httpStatus: number;
  /** The first 1,024 bytes of the answer, decoded (decodeResponseBody); '' when none. */
  responseBody: string;
  responseBodyTruncated: boolean;
  /** One short line; '' on success. */
  error: string;
}

/** A delivery as the log answers it. Times in micros. */
export interface DeliveryLogRecord {
  id: number;
  connectorId: string;
  eventId: string;
  eventType: string;
  /** The device's id (the event's targetName's last part). */
  deviceId: string;
  trigger: DeliveryTrigger;
  /**
   * As read: a RETRYING delivery whose queue row is leased now (its next attempt in flight) reads PENDING, with
   * nextAttemptTime null; so do the filters.
   */
  state: DeliveryState;
  attemptCount: number;
  /** Enqueued (the queue row's enqueue time). */
  createTime: number;
  /** Last change of state. */
  updateTime: number;
  /** When the next attempt is due (PENDING, RETRYING); null while one is in flight and in final states. */
  nextAttemptTime: number | null;
  /** Oldest first; only in DeliveryLogRepo.get's answer. */
  attempts?: LoggedAttempt[];
}

/** An attempt's outcome as the engine records it, in the transaction that records the outcome. */
export interface LogOutcome {
  /** The queue row's id. */
  id: number;
  connectorId: string;
  eventId: string;
  eventType: string;
  deviceId: string;
  trigger: DeliveryTrigger;
  /** The queue row's enqueue time. */
  createTime: number;
  /** The delivery's state after this attempt (never PENDING). */
  state: Exclude<DeliveryState, 'PENDING'>;
  attempt: LoggedAttempt;
  /** RETRYING: when the next attempt is due; null otherwise. */
  nextAttemptTime: number | null;
  /** When the outcome was recorded (the attempt's end). */
  updateTime: number;
}

/** The log's list filters (§X1); every one optional but the connectors. */
export interface DeliveryLogFilter {
  /** The connector, or every connector of the project (`-`). An empty list matches nothing. */
  connectorIds: readonly string[];
  /** Any of these states (as read: see DeliveryLogRecord.state). */
  states?: readonly DeliveryState[];
  trigger?: DeliveryTrigger;
  eventId?: string;
  deviceId?: string;
  /** On createTime, half-open: startTime <= createTime < endTime. */
  startTime?: number;
  endTime?: number;
  /** Paging: only deliveries with an id below this one. */
  beforeId?: number;
}

export interface DeliveryLogRepo {
  /**
   * Records attempts' outcomes, in order: the first outcome of a delivery creates its log row, a later one updates it
   * (state, next attempt time, update time; attempt count + 1, the attempt appended). Answers nothing, so inside a
   * transaction a store may hold it and write it with the transaction's other writes at its end (PostgreSQL's
   * outcome batches do: no extra round trip per attempt).
   */
  record(outcomes: readonly LogOutcome[]): Promise<void>;
  /** Logs a TEST delivery (final, one attempt) under a new id drawn from the queue's sequence; returns the id. */
  recordTest(outcome: Omit<LogOutcome, 'id'>): Promise<number>;
  /**
   * Newest first (by id), at most `limit`: the logged deliveries and the queued rows that have no log row yet
   * (PENDING), filters applied. `now` (micros) tells a retry in flight (its row leased past now).
   */
  list(filter: DeliveryLogFilter, limit: number, now: number): Promise<DeliveryLogRecord[]>;
  /** One delivery of the connector with its attempts (a queued one has none yet); null when neither logged nor queued. */
  get(connectorId: string, id: number, now: number): Promise<DeliveryLogRecord | null>;
  /** Of these event ids, the ones that have a DELIVERED delivery to the connector in the log (`:replay`'s onlyUndelivered). */
  deliveredEventIds(connectorId: string, eventIds: readonly string[]): Promise<Set<string>>;
  /**
   * Removes up to `limit` deliveries created before `createdBefore` (retention); returns how many. A delivery whose queue
   * row is still there (a retry) is kept until that row ends: its next outcome would otherwise start a new log row
   * without the attempts before.
   */
  deleteBefore(createdBefore: number, limit: number): Promise<number>;
  /** Connectors that have more than `keep` deliveries logged. */
  connectorsOver(keep: number): Promise<string[]>;
  /**
   * The greatest id among the connector's deliveries beyond its newest `keep` (its count - keep oldest), or null when
   * it has at most `keep`. Read once per pruning pass, not per piece (each read walks the connector's deliveries):
   * deliveries logged after it are newer, so it stays an edge of the excess while the pieces run.
   */
  trimEdge(connectorId: string, keep: number): Promise<number | null>;
  /**
   * Removes up to `limit` of the connector's deliveries with an id up to `upTo` (trimEdge), oldest first; returns how
   * many. As deleteBefore, one still queued is kept (so a connector can stay over `keep` while those are queued).
   */
  trim(connectorId: string, upTo: number, limit: number): Promise<number>;
  /** Removes up to `limit` of the connector's deliveries (the connector was deleted); returns how many. */
  deleteByConnector(connectorId: string, limit: number): Promise<number>;
  /** Deliveries logged, service-wide. */
  count(): Promise<number>;
}
