// The engine's intake of fresh rows (handoff.ts): while the engine runs, a row queued by the event pipeline gets
// an attempt slot at once, or a place in its connector's line (lines.ts) when every slot is taken, or is queued as
// due behind the connector's backlog. Lines move as slots free up, and go back to the queue when they cannot.
import type { Clock } from '../runtime/clock.ts';
import { nowMicros } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { deliveryConfigOf, type DataConnectorRecord } from '../store/contract/connector-repos.ts';
import type { Store } from '../store/contract/store.ts';
import type { Backlog } from './backlog.ts';
import { inFlightCap, leaseHalfOver, type ClaimedDelivery, type InFlightLimits } from './claim.ts';
import type { DeliveryHandoff } from './handoff.ts';
import type { Lines } from './lines.ts';
import { RETENTION_MICROS } from './retry.ts';
import type { Slots } from './slots.ts';

export interface IntakeDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  slots: Slots;
  backlog: Backlog;
  lines: Lines;
  /** How long a handed-off row is leased, micros. */
  leaseMicros: number;
  /** On a store several processes share: the cluster's limits a lease is taken under (no lines there). */
  cluster: InFlightLimits | null;
  /** Whether the engine takes rows now (started and not stopping). */
  taking(): boolean;
  /** Attempts a row in a slot already taken. */
  run(item: ClaimedDelivery): void;
  /** Asks the engine to claim from the queue. */
  wake(): void;
}

export interface Intake {
  /** Attached to the hand-off port while the engine runs (with pushOnce, which is the attempts' part: engine.ts). */
  handoff: Omit<DeliveryHandoff, 'pushOnce'>;
  /** Attempts rows of the connector's line while it has free slots; gives the line back to the queue when it must. */
  drain(connectorId: string): Promise<void>;
}

/**
 * Whether the connector's fresh rows may be handed off (§X4): not while it is paused (none is pushed), nor while it
 * is paced by a maxRate (every attempt takes a start time from a paced claim, pacing.ts).
 */
const handsOff = (c: Pick<DataConnectorRecord, 'deliveryConfig'>): boolean => {
  const controls = deliveryConfigOf(c);
  return !controls.paused && controls.maxRate === 0;
};

export function createIntake(deps: IntakeDeps): Intake {
  const { store, slots, backlog, lines, leaseMicros } = deps;
  const log = deps.logger;
  const draining = new Set<string>();

  async function drain(id: string): Promise<void> {
    if (draining.has(id) || !lines.has(id)) return;
    draining.add(id);
    try {
      // A row in line is attempted with the connector's settings as they are now, as a claimed one would be. A line
      // whose connector is gone, disabled, paused or paced (§X4) or no longer answering, or whose oldest row has
      // waited half its lease, goes back to the queue as due (a dropped queue's line is gone already: queueDropped).
      const current = await store.dataConnectors.get(id);
      const first = lines.first(id);
      if (!first || !deps.taking()) return;
      if (
        current?.status !== 'ACTIVE' ||
        !handsOff(current) ||
        slots.suspect(id) ||
        leaseHalfOver(first.delivery.leaseUntil ?? 0, nowMicros(deps), leaseMicros)
      ) {
        await releaseLine(id);
        return;
      }
      const maxConcurrency = deliveryConfigOf(current).maxConcurrency;
      while (lines.has(id) && slots.room() > 0 && slots.capacityOf(id, 1, maxConcurrency) > 0) {
        slots.take(id);
        deps.run({ delivery: lines.shift(id)!.delivery, connector: current });
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
      await store.transaction((tx) =>
        tx.deliveries.releaseLeases(
          nowMicros(deps),
          line.map((item) => item.delivery.id),
        ),
      );
    } catch (err) {
      // The rows stay leased; they come due when their leases end.
      log.error({ err }, 'delivery engine: giving rows in line back to the queue failed');
    }
    deps.wake();
  }

  const handoff: Intake['handoff'] = {
    reserve(connector, now, competitors) {
      const connectorId = connector.id;
      if (!deps.taking()) return null;
      if (!handsOff(connector)) {
        backlog.mark(connectorId);
        return null;
      }
      // Rows queued due go first. On a shared store the store checks that for the whole cluster (leaseIf) when it
      // writes the row, and this process's backlog mark would hold the hand-off back until a claim found nothing
      // due, which under a steady load of rows queued due because of it never happens.
      if ((deps.cluster !== null || !backlog.has(connectorId)) && slots.room() > 0) {
        // The same fair share of the overall cap as a claim gives, here among the connectors the event goes to,
        // so that many new endpoints that turn out dead cannot take every slot before they are found out.
        const maxConcurrency = deliveryConfigOf(connector).maxConcurrency;
        if (lines.waiting(connectorId) === 0 && slots.capacityOf(connectorId, competitors, maxConcurrency) > 0) {
          slots.take(connectorId);
          const leaseUntil = now + leaseMicros;
          if (deps.cluster === null) return { leaseUntil, slot: true };
          return {
            leaseUntil,
            slot: true,
            leaseIf: { cap: inFlightCap(deps.cluster, connector, leaseUntil), enqueuedAfter: now - RETENTION_MICROS },
          };
        }
        // Only a connector that answers gets a line (a suspect one's rows queue as due, as behind a backlog).
        if (deps.cluster === null && !slots.suspect(connectorId) && lines.hasRoom(connectorId)) {
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
      if (!deps.taking()) {
        if (slot) slots.give(id);
        else lines.unplace(id);
      } else if (slot) {
        deps.run(item);
      } else {
        lines.push(item);
        void drain(id);
      }
    },
    release(connectorId, slot, queuedDue) {
      if (queuedDue) backlog.mark(connectorId);
      if (slot) {
        slots.give(connectorId);
        if (lines.has(connectorId)) void drain(connectorId);
        deps.wake();
      } else {
        lines.unplace(connectorId);
      }
    },
    queueDropped(connectorId) {
      lines.drop(connectorId);
    },
  };

  return { handoff, drain };
}
