// Records and repositories of data connectors and their delivery machinery: the connector itself, the durable
// per-connector queue (one row per event and connector, body built once at enqueue) and the time-bucketed
// metrics with the service-wide delivery counters. Part of Repos, so all of it shares the store's transactions.
import type { ConnectorStatus } from '../../domain/connector-status.ts';
import type { DeliveryTrigger } from './delivery-log.ts';
import type { Range } from './range.ts';

/**
 * The due time of a deferred row (micros, in the year 2112: after any real due time, a retry's included): never due
 * by itself, made due a piece at a time by releaseDeferred. `:replay` queues its rows so (delivery/deferred.ts), so
 * that a replay never puts the connector's live events behind all of it.
 */
export const DEFERRED_DUE = 2 ** 52;

export interface DataConnectorRecord {
  id: string;
  projectId: string;
  displayName: string;
  status: ConnectorStatus;
  /** Event types forwarded; [] = every type. */
  events: string[];
  /** Device label keys copied into each push, in this order. */
  labels: string[];
  url: string;
  headers: Record<string, string>;
  /** The signature secret sealed with the secret box; '' = requests are not signed. */
  signatureSecretSealed: string;
  /**
   * During a rotation's overlap (`:rotateSecret`, extensions §X3): the previous signature secret, sealed; pushes are
   * signed with it too (X-Service-Signature-Previous) until `previousSignatureSecretExpireTime` (micros). '' / null
   * when there is none. A store always answers both; absent on a write means none.
   */
  previousSignatureSecretSealed?: string;
  previousSignatureSecretExpireTime?: number | null;
  /** Delivery controls (extensions §X4). A store always answers them; absent on a write means the defaults. */
  deliveryConfig?: DeliveryConfig;
  /** First failed attempt (micros) since the last success or activation; null when not failing. */
  failingSince: number | null;
  createTime: number;
  updateTime: number;
}

/** A connector's delivery controls (extensions §X4), as stored and as on the wire. */
export interface DeliveryConfig {
  /** Pushes of this connector open at once, across every process: 1 to 64. */
  maxConcurrency: number;
  /** Push attempts started per second; 0 = no limit (at most 10,000). */
  maxRate: number;
  /** Only events of devices carrying every listed label (a value '' = the key is present), decided at publish. */
  labelFilters: Record<string, string>;
  /** Events keep queueing (within the 12-hour expiry) and none is pushed. */
  paused: boolean;
}

export const DEFAULT_DELIVERY_CONFIG: Readonly<DeliveryConfig> = Object.freeze({
  maxConcurrency: 64,
  maxRate: 0,
  labelFilters: Object.freeze({}) as Record<string, string>,
  paused: false,
});

/** The connector's delivery controls, the defaults where it has none. */
export const deliveryConfigOf = (c: Pick<DataConnectorRecord, 'deliveryConfig'>): DeliveryConfig =>
  c.deliveryConfig ?? DEFAULT_DELIVERY_CONFIG;

export interface NewDelivery {
  connectorId: string;
  eventId: string;
  /** The push body bytes, sent unchanged on every attempt. */
  body: Buffer;
  /** Micros; the 12-hour window counts from here. */
  enqueueTime: number;
  /** Micros; the first attempt is due at once. */
  dueTime: number;
  /** Micros; set when the row is queued already leased to an attempt starting at commit (the engine's hand-off). */
  leaseUntil?: number | null;
  /**
   * A row queued leased on a store several processes share: the lease stands only while the connector has no row
   * due now (enqueued after `enqueuedAfter`), which must go first, and its rows in flight in the whole cluster,
   * this one included, stay within `cap`; otherwise the row is queued due at its enqueue time. A store one process
   * owns ignores it: the engine counts its own attempts.
   */
  leaseIf?: { cap: InFlightCap; enqueuedAfter: number };
  /** Set by the store once the row is written (DeliveryRepo.add): its id, and whether it was queued leased. */
  queued?: { id: number; leased: boolean };
  /** What queued it (delivery log, §X1); absent: EVENT, a published event (the live path writes no more than before). */
  trigger?: DeliveryTrigger;
}

/**
 * What the last `:sync` of a connector queued (delivery/sync.ts): while any of its rows is still queued, another
 * `:sync` of the same scope queues nothing more.
 */
export interface SyncRecord {
  connectorId: string;
  /** The least and greatest ids of its rows (rows of other transactions may lie between: ids are never reused). */
  firstId: number;
  lastId: number;
  /** Its rows' enqueue time (micros): tells its rows from others queued meanwhile in the same id range. */
  enqueueTime: number;
  /** What it covered, as delivery/sync.ts writes it (the connector's event filter and labels then). */
  scope: string;
}

/** One connector's part of a claimMany: as claim()'s connectorId, limit and cap. */
export interface ClaimAsk {
  connectorId: string;
  limit: number;
  cap?: InFlightCap;
}

export interface DeliveryRecord extends Omit<NewDelivery, 'leaseUntil' | 'leaseIf' | 'queued'> {
  id: number;
  /** Attempts made so far. */
  attempts: number;
  /** Set while an attempt is in flight (micros); the row is not due again before then. */
  leaseUntil: number | null;
}

export interface MetricBucket {
  /** Micros; start of the bucket. */
  bucketStart: number;
  successCount: number;
  errorCount: number;
  /** Sparse log-bucketed histogram of successful response times: bucket index → count. */
  latencyHist: Record<string, number>;
}

export interface DataConnectorRepo {
  create(c: DataConnectorRecord): Promise<void>;
  get(id: string): Promise<DataConnectorRecord | null>;
  /**
   * get() of several connectors in one read, keyed by id; an id of no connector is left out. The engine reads every
   * connector of a claim, and of an outcome batch, this way: on PostgreSQL one round trip instead of one each.
   */
  getMany(ids: readonly string[]): Promise<Map<string, DataConnectorRecord>>;
  /**
   * get(), to write the connector back in the same transaction (read-modify-write): a store several processes share
   * locks the row until the commit, so a concurrent writer waits and reads what this one wrote.
   */
  getForUpdate(id: string): Promise<DataConnectorRecord | null>;
  /** Connectors of the project in creation (id) order. */
  listByProject(projectId: string, range: Range): Promise<DataConnectorRecord[]>;
  countByProject(projectId: string): Promise<number>;
  /** ACTIVE connectors of the project (the enqueue fan-out). */
  listActiveByProject(projectId: string): Promise<DataConnectorRecord[]>;
  update(c: DataConnectorRecord): Promise<void>;
  /** The engine's write: status and failingSince only, so a concurrent settings PATCH is never undone. */
  updateState(id: string, status: ConnectorStatus, failingSince: number | null, updateTime: number): Promise<void>;
  delete(id: string): Promise<void>;
  /** Number of connectors per status, service-wide. */
  countByStatus(): Promise<Record<string, number>>;
}

export interface InFlightCap {
  max: number;
  whileHanging: number;
  /** Micros: a lease ending at or before this started long enough ago to count as hanging. */
  hangingIfLeasedBefore: number;
  /**
   * Rows of the connector whose attempts in this process have ended but whose outcomes are not yet recorded: still
   * leased in the store, no longer in flight at the endpoint, so not counted. A live set, read when the store
   * writes or claims.
   */
  ended?: ReadonlySet<number>;
}

export interface DeliveryRepo {
  /** Returns the new rows' ids, in order (and sets each row's `queued`, as add does). */
  insert(rows: NewDelivery[]): Promise<number[]>;
  /**
   * Queues rows as insert does, without answering their ids: inside a transaction a store may hold them and write
   * them with the transaction's other writes at its end (PostgreSQL's group commit does). Each row's `queued` is
   * set once it is written: before the transaction commits, at the latest.
   */
  add(rows: NewDelivery[]): Promise<void>;
  /** Connectors that have deferred rows (due at DEFERRED_DUE). */
  connectorsWithDeferred(): Promise<string[]>;
  /**
   * Makes due at `now` the connector's first deferred rows (in id order), as many as bring its rows due at `now`
   * (waiting, not leased) up to `keepDue`; returns how many it made due.
   */
  releaseDeferred(connectorId: string, now: number, keepDue: number): Promise<number>;
  /** Connectors that have at least one row due at `now` (not leased, not expired). */
  connectorsWithDue(now: number, enqueuedAfter: number): Promise<string[]>;
  /**
   * Leases up to `limit` due rows of one connector (earliest due first) until `leaseUntil`, and returns them.
   * With `cap` (a store several processes share), also no more than leaves the connector's rows in flight (leased,
   * lease not over) at `cap.max`, or at `cap.whileHanging` while one of those leases ends at or before
   * `cap.hangingIfLeasedBefore`; claims of one connector are serialised, with each other and with the writes of
   * rows queued leased under `leaseIf`, so together they never exceed it.
   * A store one process owns may ignore `cap`: the engine counts its own attempts.
   */
  claim(
    connectorId: string,
    now: number,
    enqueuedAfter: number,
    leaseUntil: number,
    limit: number,
    cap?: InFlightCap,
  ): Promise<DeliveryRecord[]>;
  /**
   * claim() of each ask in turn (distinct connectors), each at most what the asks before it left of `total`; answers
   * each ask's rows, in the asks' order. The engine's claims of one turn: a store several processes share makes them
   * one statement, which takes the claim locks of all its connectors first, in the order every process takes them.
   */
  claimMany(
    asks: readonly ClaimAsk[],
    total: number,
    now: number,
    enqueuedAfter: number,
    leaseUntil: number,
  ): Promise<DeliveryRecord[][]>;
  get(id: number): Promise<DeliveryRecord | null>;
  /**
   * Returns false when the row was already gone. With `leaseUntil` (a failed attempt's 12-hour drop), only while the
   * row still holds that lease, as `reschedule`: a row another process claimed meanwhile is left to its attempt.
   */
  delete(id: number, leaseUntil?: number | null): Promise<boolean>;
  /** Deletes the rows that are still there; returns how many it deleted (one statement on PostgreSQL). */
  deleteMany(ids: readonly number[]): Promise<number>;
  /**
   * Deletes the rows that are still there and adds how many it deleted to the delivery counter `series`
   * (ConnectorMetricRepo.addCounters). Answers nothing, so inside a transaction a store may hold it and write it with
   * the transaction's other writes at its end (PostgreSQL's group commit does).
   */
  deleteCounted(ids: readonly number[], series: string): Promise<void>;
  /**
   * Records a failed attempt: new attempt count, next due time, lease released; only while the row still holds the
   * lease the attempt was made under (`leaseUntil`). A process that was paused past its lease (a stopped process, a
   * frozen machine) finds its row claimed by another process, whose attempt is in flight: releasing that lease
   * would let a third claim push the row at the same time. False when the row was gone or held another lease.
   */
  reschedule(id: number, attempts: number, dueTime: number, leaseUntil: number | null): Promise<boolean>;
  /**
   * Removes up to `limit` of a connector's rows, leased ones included; returns how many. A queue is dropped a
   * bounded piece at a time (delivery/claim.ts dropQueue), so no transaction holds the writer for its whole length.
   * With `logAt` (micros), the same statement logs each removed row DISCARDED at that time in the delivery log
   * (delivery-log.ts: a row with a log row has it updated, one without gets one, with no attempts). A log row that
   * holds an end already (DELIVERED: acknowledged late, while another process had the row) keeps it.
   */
  deleteByConnector(connectorId: string, limit: number, logAt?: number): Promise<number>;
  /**
   * Removes up to `limit` rows queued at or before `enqueuedAtOrBefore` that are not in flight. Rows are inserted
   * in enqueue-time order (enqueueTime is the time of the insert), and a backend may rely on that. With `log`, the
   * same statement logs each removed row EXPIRED at `now` (as deleteByConnector's logAt).
   */
  deleteExpired(enqueuedAtOrBefore: number, now: number, limit: number, log?: boolean): Promise<number>;
  /**
   * Makes leased rows due at `now`: the given ones (rows the engine leased but will not attempt after all), or
   * every leased row (single-process restart: no attempt can still be in flight). Returns how many.
   */
  releaseLeases(now: number, ids?: readonly number[]): Promise<number>;
  count(): Promise<number>;
  /**
   * Rate pacing (extensions §X4 maxRate; delivery/pacing.ts): the time (micros) from which the connector's next
   * attempt may start, as setPacing last wrote it; null when never written. A store several processes share locks it
   * until the transaction ends, so that the claims pacing one connector, in every process, take turns.
   */
  pacingForUpdate(connectorId: string): Promise<number | null>;
  /** Writes the connector's next start (micros); deleting the connector forgets it. */
  setPacing(connectorId: string, nextStart: number): Promise<void>;
  /** The connector's last `:sync`; null when it has had none (deleting the connector forgets it). */
  lastSync(connectorId: string): Promise<SyncRecord | null>;
  /** Records the connector's last `:sync`, replacing the one before. */
  recordSync(sync: SyncRecord): Promise<void>;
  /** Whether a row of that `:sync` is still queued, leased or not (a bounded read of its id range). */
  syncQueued(sync: SyncRecord): Promise<boolean>;
}

export interface ConnectorMetricRepo {
  /** Adds counts and histogram entries to one bucket, creating it when needed. */
  add(
    connectorId: string,
    bucketStart: number,
    successDelta: number,
    errorDelta: number,
    latencyHist: ReadonlyMap<string, number>,
  ): Promise<void>;
  /** Buckets of the connector with bucketStart >= fromBucketStart, oldest first. */
  listSince(connectorId: string, fromBucketStart: number): Promise<MetricBucket[]>;
  deleteByConnector(connectorId: string): Promise<void>;
  /** Removes up to `limit` buckets (of every connector) that start before `bucketStart`. */
  deleteBefore(bucketStart: number, limit: number): Promise<number>;
  /** Adds to service-wide monotonic counters, keyed by Prometheus series text (e.g. `x_total{outcome="ack"}`). */
  addCounters(deltas: Record<string, number>): Promise<void>;
  counters(): Promise<Record<string, number>>;
}
