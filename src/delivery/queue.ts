// The Store-backed delivery queue (contract §6.1): events are queued inside the transaction that stores them
// (one row per matching ACTIVE connector, push body built once), claimed in batches under a lease, and
// acknowledged, rescheduled or dropped by the engine.
import type { Deps } from '../deps.ts';
import { nowMicros } from '../deps.ts';
import type { EventConsumer, EventPipeline } from '../events/pipeline.ts';
import type { EmittedEvent } from '../events/types.ts';
import type { DataConnectorRecord, DeliveryRecord, NewDelivery } from '../store/connector-repos.ts';
import type { DeviceRecord } from '../store/records.ts';
import type { Repos, Store } from '../store/store.ts';
import { RETENTION_MS } from './retry.ts';

export const RETENTION_MICROS = RETENTION_MS * 1000;
const PING = 'ping';

/** Whether the connector forwards this event type: an empty filter forwards every type; pings never. */
export function forwards(connector: Pick<DataConnectorRecord, 'events'>, eventType: string): boolean {
  if (eventType === PING) return false;
  return connector.events.length === 0 || connector.events.includes(eventType);
}

/** What a push body reads of the device (also built by `sensorcloud listen` from the API's Device). */
export type PushDevice = Pick<DeviceRecord, 'id' | 'projectId' | 'type' | 'productNumber' | 'labels'>;

/**
 * The push body (contract §6.2): compact JSON `{event, labels, metadata}`, UTF-8 without \u escapes, around the
 * event's own JSON (`JSON.stringify(event)`, as the pipeline stores it). `labels` holds the device labels named by
 * the connector, in the connector's order, absent keys left out.
 */
export function buildPushBody(eventJson: string, device: PushDevice, labelKeys: readonly string[]): Buffer {
  const labels: Record<string, string> = {};
  for (const key of labelKeys) {
    if (Object.prototype.hasOwnProperty.call(device.labels, key)) labels[key] = device.labels[key]!;
  }
  const metadata = { deviceId: device.id, projectId: device.projectId, deviceType: device.type, productNumber: device.productNumber };
  return Buffer.from(`{"event":${eventJson},"labels":${JSON.stringify(labels)},"metadata":${JSON.stringify(metadata)}}`, 'utf8');
}

/**
 * Queue rows for one event and the given connectors, each with its connector (`targets[i]` for `rows[i]`). Bodies are
 * shared between connectors asking for the same labels; with one connector, the usual case, no map is made.
 */
function rowsFor(connectors: DataConnectorRecord[], { event, json }: EmittedEvent, device: DeviceRecord, now: number): { rows: NewDelivery[]; targets: DataConnectorRecord[] } {
  const bodies = connectors.length > 1 ? new Map<string, Buffer>() : null;
  const rows: NewDelivery[] = [];
  const targets: DataConnectorRecord[] = [];
  for (const c of connectors) {
    if (!forwards(c, event.eventType)) continue;
    let body: Buffer | undefined;
    if (bodies === null) body = buildPushBody(json, device, c.labels);
    else {
      const key = JSON.stringify(c.labels);
      body = bodies.get(key);
      if (!body) bodies.set(key, (body = buildPushBody(json, device, c.labels)));
    }
    rows.push({ connectorId: c.id, eventId: event.eventId, body, enqueueTime: now, dueTime: now });
    targets.push(c);
  }
  return { rows, targets };
}

/**
 * The running engine's side of the hand-off. A fresh row whose connector has a free attempt slot (and nothing
 * older waiting in the queue) is queued already leased, and attempted the moment its transaction commits, instead
 * of being found and leased again by the engine's claim (a query and a write transaction; at 1,000 events/s the
 * main thread's CPU per event fell by ~13 %). When every slot of a connector that answers is taken, the row waits
 * in the engine's line for the next one, leased too (at saturation, two thirds of the rows were claimed again:
 * ~7 % of the main thread). The row is durable before the attempt starts, exactly as a claimed one; after a crash
 * its lease is released at the next start (engine.ts) and it is attempted again.
 */
export interface DeliveryHandoff {
  /**
   * For a row queued now (`competitors`: how many connectors the event goes to): an attempt slot of the connector,
   * or a place in its line of rows waiting in memory for the next free slot (`slot` false). Either way the row is
   * queued leased until `leaseUntil` (micros). Null: queue it as due.
   */
  reserve(connectorId: string, now: number, competitors: number): Reservation | null;
  /** The row's transaction committed: attempt it now in its slot, or line it up. */
  launch(item: ClaimedDelivery, slot: boolean): void;
  /** The reservation is not used after all (the transaction rolled back): give it back. */
  release(connectorId: string, slot: boolean): void;
  /** The connector's queue was dropped (disabled or deleted; committed): rows waiting in its line are gone. */
  queueDropped(connectorId: string): void;
}

export interface Reservation {
  leaseUntil: number;
  slot: boolean;
}

/** Where the running engine plugs in (composition root); with nothing attached every row is queued as due. */
export interface HandoffPort {
  attach(handoff: DeliveryHandoff | null): void;
  readonly current: DeliveryHandoff | null;
}

export function createHandoffPort(): HandoffPort {
  let current: DeliveryHandoff | null = null;
  return {
    attach(handoff) {
      current = handoff;
    },
    get current() {
      return current;
    },
  };
}

/** The pipeline consumer: runs inside the transaction that stores the event, so it is stored and queued, or neither. */
export function createEnqueueConsumer(deps: Pick<Deps, 'clock'>, port: HandoffPort | null = null): EventConsumer {
  return {
    async consume(tx, emitted, outcome) {
      if (emitted.event.eventType === PING) return;
      const connectors = await tx.dataConnectors.listActiveByProject(emitted.device.projectId);
      if (connectors.length === 0) return;
      const now = nowMicros(deps);
      const { rows, targets } = rowsFor(connectors, emitted, emitted.device, now);
      if (rows.length === 0) return;
      const handoff = port?.current ?? null;
      const handed: Array<{ index: number; connector: DataConnectorRecord; slot: boolean; id: number | null }> = [];
      if (handoff) {
        for (let index = 0; index < rows.length; index++) {
          const row = rows[index]!;
          const reservation = handoff.reserve(row.connectorId, now, rows.length);
          if (reservation === null) continue;
          row.leaseUntil = reservation.leaseUntil;
          row.dueTime = reservation.leaseUntil;
          handed.push({ index, connector: targets[index]!, slot: reservation.slot, id: null });
        }
        if (handed.length > 0) {
          // A reservation is used only by a row that was inserted and committed; every other ending gives it back.
          outcome.onRollback(() => handed.forEach((h) => handoff.release(h.connector.id, h.slot)));
          outcome.onCommit(() => {
            for (const h of handed) {
              if (h.id === null) handoff.release(h.connector.id, h.slot);
              else handoff.launch({ delivery: { ...rows[h.index]!, id: h.id, attempts: 0, leaseUntil: rows[h.index]!.leaseUntil! }, connector: h.connector }, h.slot);
            }
          });
        }
      }
      const ids = await tx.deliveries.insert(rows);
      for (const h of handed) h.id = ids[h.index]!;
    },
  };
}

/**
 * `:sync` (contract §6.7), inside the caller's transaction: queues for this connector only the latest stored
 * event of each type of each device now in the project, filter applied, labels as they are now, each row with
 * its own 12-hour window from `now`. Returns the number of rows queued.
 */
export async function enqueueSync(tx: Repos, connector: DataConnectorRecord, eventTypes: readonly string[], now: number): Promise<number> {
  const types = connector.events.length === 0 ? eventTypes : eventTypes.filter((t) => connector.events.includes(t));
  let queued = 0;
  // A page of devices at a time (the same page of devices for both reads, in one transaction), so a large project
  // never holds all its devices and latest events in memory at once.
  for (let after = ''; ;) {
    const range = { after, limit: SYNC_DEVICES_PER_PAGE };
    const devices = new Map((await tx.devices.listByProject(connector.projectId, range)).map((d) => [d.id, d]));
    const rows: NewDelivery[] = [];
    for (const e of await tx.events.latestPerType(connector.projectId, types, range)) {
      const device = devices.get(e.deviceId);
      if (!device) continue;
      // The stored body is the event's JSON, exactly as it was pushed when it happened.
      rows.push({ connectorId: connector.id, eventId: e.id, body: buildPushBody(e.body, device, connector.labels), enqueueTime: now, dueTime: now });
    }
    if (rows.length > 0) await tx.deliveries.insert(rows);
    queued += rows.length;
    if (devices.size < SYNC_DEVICES_PER_PAGE) return queued;
    after = [...devices.keys()].pop()!;
  }
}

/** Devices whose latest events one page of `:sync` reads. */
const SYNC_DEVICES_PER_PAGE = 200;

/** A leased row with the connector settings read for this attempt. */
export interface ClaimedDelivery {
  delivery: DeliveryRecord;
  connector: DataConnectorRecord;
}

export interface ClaimOptions {
  now: number;
  /** How long (micros) a claimed row stays leased; longer than an attempt can take. */
  leaseMicros: number;
  /** How many more attempts this connector may start now (per-connector concurrency). */
  /** Free slots of the connector, given how many connectors have rows due in this claim. */
  capacityOf(connectorId: string, competitors: number): number;
  /** Overall number of attempts that may start now. */
  total: number;
  /** Rotates the connector order between calls so no connector is always served last. */
  rotation: number;
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
  const ids = due.filter((id) => o.capacityOf(id, due.length) > 0);
  if (ids.length === 0) return { items: [], due: new Set(due), drained };
  const items = await store.transaction(async (tx) => {
    const out: ClaimedDelivery[] = [];
    const start = o.rotation % ids.length;
    let left = o.total;
    for (let i = 0; i < ids.length && left > 0; i++) {
      const id = ids[(start + i) % ids.length]!;
      const capacity = Math.min(o.capacityOf(id, due.length), left);
      if (capacity <= 0) continue;
      const connector = await tx.dataConnectors.get(id);
      if (!connector || connector.status !== 'ACTIVE') {
        await tx.deliveries.deleteByConnector(id);
        continue;
      }
      const rows = await tx.deliveries.claim(id, o.now, enqueuedAfter, o.now + o.leaseMicros, capacity);
      for (const delivery of rows) out.push({ delivery, connector });
      if (rows.length < capacity) drained.add(id);
      left -= rows.length;
    }
    return out;
  });
  return { items, due: new Set(due), drained };
}

/** Drops rows unacknowledged 12 h after enqueue (not those in flight; their outcome decides). Returns how many. */
export function dropExpired(tx: Repos, now: number, limit = 10_000): Promise<number> {
  return tx.deliveries.deleteExpired(now - RETENTION_MICROS, now, limit);
}

/** Deletes the connector's whole queue (disable, delete). */
export function dropQueue(tx: Repos, connectorId: string): Promise<number> {
  return tx.deliveries.deleteByConnector(connectorId);
}

/** Registers the enqueue consumer on the pipeline (composition root) and returns the pipeline. */
export function withDeliveryQueue(events: EventPipeline, clock: Deps['clock'], port: HandoffPort | null = null): EventPipeline {
  events.addConsumer(createEnqueueConsumer({ clock }, port));
  return events;
}
