// Claiming due queue rows under a lease (the engine's read of the queue when rows were not handed off: retries,
// backlogs, `:sync`), and the queue's maintenance: the 12-hour drop and dropping a connector's whole queue, each
// logging the rows it removes in the delivery log when asked (EXPIRED, DISCARDED: extensions §X1).
import {
  deliveryConfigOf,
  type ClaimAsk,
  type DataConnectorRecord,
  type DeliveryRecord,
  type InFlightCap,
} from '../store/contract/connector-repos.ts';
import { inPieces } from '../store/jobs/in-pieces.ts';
import type { Repos, Store } from '../store/contract/store.ts';
import { series } from './metrics.ts';
import { claimPaced, type PaceMemo } from './pacing.ts';
import { RETENTION_MICROS } from './retry.ts';

/** A leased row with the connector settings read for this attempt. */
export interface ClaimedDelivery {
  delivery: DeliveryRecord;
  connector: DataConnectorRecord;
  /** Micros: not before then (a connector paced by its maxRate, pacing.ts); absent: at once. */
  startAt?: number;
}

export interface ClaimOptions {
  now: number;
  /** How long (micros) a claimed row stays leased; longer than an attempt can take. */
  leaseMicros: number;
  /**
   * How many more attempts this connector may start now: its free slots, given how many connectors have rows due and,
   * once its settings are read, its own maxConcurrency (extensions §X4).
   */
  capacityOf(connectorId: string, competitors: number, maxConcurrency?: number): number;
  /** Failing or suspect: its attempts count in `suspectLeft` (slots.ts). */
  suspect?(connectorId: string): boolean;
  /** Attempts that failing and suspect connectors together may still start now (default: no such bound). */
  suspectLeft?: number;
  /** Overall number of attempts that may start now. */
  total: number;
  /** Rotates the connector order between calls so no connector is always served last. */
  rotation: number;
  /**
   * A store shared by several processes (PostgreSQL): the per-connector limits hold for the whole cluster, counted
   * from the rows leased in the store (the attempts of every process), not from this process's slots alone.
   */
  cluster?: InFlightLimits | null;
  /** The delivery log is on: rows of a disabled connector that a claim drops are logged DISCARDED at `now`. */
  logDrops?: boolean;
  /** The next starts of paced connectors this process has learnt (pacing.ts): one out of reach is not read. */
  pace?: PaceMemo;
}

export interface InFlightLimits {
  /** Attempts in flight at once per healthy connector. */
  perConnector: number;
  /** Per connector that is failing, or has an attempt in flight for longer than suspectAfterMicros. */
  perFailing: number;
  suspectAfterMicros: number;
  /** The connector's rows whose attempts here have ended, outcome not yet recorded (InFlightCap.ended). */
  ended?(connectorId: string): ReadonlySet<number> | undefined;
}

/**
 * Whether less than half of a row's lease is left at `now` (micros; `leaseMicros` is the whole lease): another
 * process may claim the row before an attempt begun now ends. Such a row's attempt is not begun (attempts.ts, a line's
 * rows in intake.ts), and its acknowledgement is recorded as late (outcomes.ts).
 */
export const leaseHalfOver = (leaseUntil: number, now: number, leaseMicros: number): boolean =>
  leaseUntil - now < leaseMicros / 2;

/**
 * The cap on the connector's rows in flight in the cluster, for a lease taken now that ends at `leaseUntil`: the
 * engine's limits, and the connector's own maxConcurrency (extensions §X4) below them.
 */
export function inFlightCap(
  limits: InFlightLimits,
  connector: Pick<DataConnectorRecord, 'id' | 'failingSince' | 'deliveryConfig'>,
  leaseUntil: number,
): InFlightCap {
  const own = deliveryConfigOf(connector).maxConcurrency;
  return {
    ended: limits.ended?.(connector.id),
    max: Math.min(own, connector.failingSince !== null ? limits.perFailing : limits.perConnector),
    whileHanging: Math.min(own, limits.perFailing),
    // A lease taken before this (its attempt started suspectAfter ago) and not yet ended: the endpoint hangs.
    hangingIfLeasedBefore: leaseUntil - limits.suspectAfterMicros,
  };
}

export interface ClaimResult {
  items: ClaimedDelivery[];
  /** Connectors that had rows due when the claim began; null when the queue was not read (no capacity at all). */
  due: Set<string> | null;
  /** Of those, the ones whose due rows were all claimed (fewer than their capacity). */
  drained: Set<string>;
}

/**
 * Claims due rows in one transaction, at most `capacityOf(c)` per connector and `total` overall, and reads each
 * connector's current settings. Rows of a connector that is gone or no longer ACTIVE are deleted, not returned.
 */
export async function claimDue(store: Store, o: ClaimOptions): Promise<ClaimResult> {
  if (o.total <= 0) return { items: [], due: null, drained: new Set() };
  const enqueuedAfter = o.now - RETENTION_MICROS;
  // A read first, so an idle poll never takes the write lock; the claim below re-checks what is due.
  const due = await store.deliveries.connectorsWithDue(o.now, enqueuedAfter);
  const drained = new Set<string>();
  const free = due.filter((id) => o.capacityOf(id, due.length) > 0 && (o.pace?.reachable(id, o.now) ?? true));
  if (free.length === 0) return { items: [], due: new Set(due), drained };
  // In the rotation's order, only the connectors the total can reach: the others would be read (and, on a shared
  // store, locked) for nothing. With 10,000 connectors, reading every one with rows due at each claim (thousands)
  // raised the memory benchmark's peak to 303-329 MB, against 269-299 MB this way (docs/delivery-engine.md).
  // Failing and suspect connectors share what is left of their bound: each one's capacity alone would let a
  // thousand of them fill the claim (slots.ts).
  const start = o.rotation % free.length;
  const ids: string[] = [];
  const limits = new Map<string, number>();
  let suspectLeft = o.suspectLeft ?? Infinity;
  for (let i = 0, reach = 0; i < free.length && reach < o.total; i++) {
    const id = free[(start + i) % free.length]!;
    let limit = o.capacityOf(id, due.length);
    if (o.suspect?.(id)) {
      limit = Math.min(limit, suspectLeft);
      if (limit <= 0) continue;
      suspectLeft -= limit;
    }
    ids.push(id);
    limits.set(id, limit);
    reach += limit;
  }
  const leaseUntil = o.now + o.leaseMicros;
  const logAt = o.logDrops === true ? o.now : undefined;
  const claimAll = async (repos: Repos): Promise<ClaimedDelivery[]> => {
    // Current settings of every connector claimed from, in one read.
    const connectors = await repos.dataConnectors.getMany(ids);
    const asks: Array<ClaimAsk & { connector: DataConnectorRecord }> = [];
    const paced: Array<ClaimAsk & { connector: DataConnectorRecord; maxRate: number }> = [];
    for (const id of ids) {
      const connector = connectors.get(id);
      if (connector?.status !== 'ACTIVE') {
        // Left behind by a drop that did not finish (its process died): a piece at each claim until none is left.
        if (o.cluster) await store.transaction((tx) => dropPieceUnlessActive(tx, id, logAt));
        else await dropPieceUnlessActive(repos, id, logAt);
        continue;
      }
      const controls = deliveryConfigOf(connector);
      // Paused (§X4): its rows stay due, and the connector in the backlog, so that its later events queue behind them.
      if (controls.paused) continue;
      const limit = Math.min(limits.get(id)!, o.capacityOf(id, due.length, controls.maxConcurrency));
      if (limit <= 0) continue;
      const cap = o.cluster ? inFlightCap(o.cluster, connector, leaseUntil) : undefined;
      if (controls.maxRate > 0) paced.push({ connectorId: id, limit, cap, connector, maxRate: controls.maxRate });
      else {
        o.pace?.forget(id);
        asks.push({ connectorId: id, limit, cap, connector });
      }
    }
    // One statement for all on a shared store (each connector's claim was a round trip of its own), in the
    // rotation's order, each taking what the ones before it left of the total.
    const claimed = await repos.deliveries.claimMany(asks, o.total, o.now, enqueuedAfter, leaseUntil);
    const out: ClaimedDelivery[] = [];
    let left = o.total;
    asks.forEach((ask, i) => {
      const rows = claimed[i]!;
      for (const delivery of rows) out.push({ delivery, connector: ask.connector });
      // Fewer than asked means none are left due, unless the cluster's cap held it back: then rows are still due,
      // and the connector stays in the backlog (its mark goes once a read finds nothing of it due).
      if (rows.length < Math.min(ask.limit, left) && ask.cap === undefined) drained.add(ask.connectorId);
      left -= rows.length;
    });
    // Paced connectors (pacing.ts) one at a time, each in a transaction that holds its next start (on a shared store
    // a transaction of its own, as a claim there is made outside any).
    for (const ask of paced) {
      if (left <= 0) break;
      const one = { ...ask, limit: Math.min(ask.limit, left) };
      const claim = (tx: Repos) => claimPaced(tx, one, o.now, enqueuedAfter, leaseUntil);
      const got = o.cluster ? await store.transaction(claim) : await claim(repos);
      o.pace?.learnt(ask.connectorId, got.next);
      for (const r of got.rows) out.push({ delivery: r.delivery, connector: ask.connector, startAt: r.startAt });
      if (got.rows.length < got.wanted && ask.cap === undefined) drained.add(ask.connectorId);
      left -= got.rows.length;
    }
    return out;
  };
  // One transaction for the whole claim on a store one process owns. On a shared store the claims are one statement
  // outside any transaction, which takes its connectors' locks in the order every process takes them (held by
  // inserts of leased rows until they commit): a transaction holding one connector's lock while waiting for the
  // next, in any order, could deadlock with them.
  const items = o.cluster ? await claimAll(store) : await store.transaction(claimAll);
  return { items, due: new Set(due), drained };
}

/**
 * Drops rows unacknowledged 12 h after enqueue (not those in flight; their outcome decides), logged EXPIRED at `now`
 * when `log`. Returns how many.
 */
export function dropExpired(tx: Repos, now: number, limit = 10_000, log = false): Promise<number> {
  return tx.deliveries.deleteExpired(now - RETENTION_MICROS, now, limit, log);
}

/** Rows of a queue dropped per transaction (store/jobs/in-pieces.ts): ~11 ms of SQLite's writer, ~6 ms on PostgreSQL. */
export const DROP_PIECE = 10_000;

/**
 * Drops the queue of a connector that is disabled or deleted, a piece per transaction, and counts its rows as
 * dropped. It stops early if the connector is ACTIVE again (enabled meanwhile: the enabling drops the rest in its
 * own transaction, dropRest). With `logAt` (micros; the log is on: delivery-log.ts dropLogTime) the rows of a
 * disabled connector are logged DISCARDED at that time; a deleted connector's are not (its log goes with it).
 * Returns how many rows it removed.
 */
export function dropQueue(store: Store, connectorId: string, logAt?: number): Promise<number> {
  return inPieces(store, (tx) => dropPieceUnlessActive(tx, connectorId, logAt));
}

/**
 * Drops whatever is left of the connector's queue inside the transaction that enables it again: rows a drop left
 * behind or queued by a publish that raced with the disabling, normally none (dropQueue ran before it). Logged
 * DISCARDED at `logAt` when given, as dropQueue's.
 */
export async function dropRest(tx: Repos, connectorId: string, logAt?: number): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await dropPiece(tx, connectorId, logAt);
    if (n === 0) return total;
    total += n;
  }
}

/** A piece, read under the connector's lock: none while the connector is ACTIVE (its queue is live again). */
async function dropPieceUnlessActive(tx: Repos, connectorId: string, logAt: number | undefined): Promise<number> {
  const c = await tx.dataConnectors.getForUpdate(connectorId);
  if (c !== null && c.status === 'ACTIVE') return 0;
  // Deleted: nothing is logged of its rows (its log is deleted after its queue: delivery-log.ts deleteConnectorLog).
  return dropPiece(tx, connectorId, c === null ? undefined : logAt);
}

async function dropPiece(tx: Repos, connectorId: string, logAt: number | undefined): Promise<number> {
  const n = await tx.deliveries.deleteByConnector(connectorId, DROP_PIECE, logAt);
  if (n > 0) await tx.connectorMetrics.addCounters({ [series.deliveries('dropped')]: n });
  return n;
}
