// The hand-off of fresh queue rows from the event pipeline to the running delivery engine, and the one notice the
// services give delivery. Owned here, so neither the services nor the dependency bundle know how the engine works:
// the composition root makes one port and gives it to the enqueue consumer, the engine and the services.
import type { ClaimedDelivery } from './claim.ts';

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

/** What the services tell delivery: nothing else of the engine is theirs to know. */
export interface DeliveryNotices {
  /** The connector's queue was dropped (disabled or deleted), and that change has committed. */
  queueDropped(connectorId: string): void;
}

/** Where the running engine plugs in (composition root); with nothing attached every row is queued as due. */
export interface HandoffPort extends DeliveryNotices {
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
    queueDropped(connectorId) {
      current?.queueDropped(connectorId);
    },
  };
}
