// The hand-off of fresh queue rows from the event pipeline to the running delivery engine, and the one notice the
// services give delivery. Owned here, so neither the services nor the dependency bundle know how the engine works:
// the composition root makes one port and gives it to the enqueue consumer, the engine and the services.
import type { DataConnectorRecord, NewDelivery } from '../store/contract/connector-repos.ts';
import type { DeliveryTrigger } from '../store/contract/delivery-log.ts';
import type { ClaimedDelivery } from './claim.ts';
import type { AttemptOutcome } from './types.ts';

/**
 * The running engine's side of the hand-off. A fresh row whose connector has a free attempt slot (and nothing
 * older waiting in the queue) is queued already leased, and attempted the moment its transaction commits, instead
 * of being found and leased again by the engine's claim (a query and a write transaction; at 1,000 events/s the
 * main thread's CPU per event fell by ~13 %). When every slot of a connector that answers is taken, the row waits
 * in the engine's line for the next one, leased too (at saturation, two thirds of the rows were claimed again:
 * ~7 % of the main thread). The row is durable before the attempt starts, exactly as a claimed one; after a crash
 * its lease is released at the next start (pump.ts) and it is attempted again.
 *
 * On a store several processes share, the lease is taken under the cluster's per-connector limit (`leaseIf`): the
 * store may queue the row due instead, and the reservation is then given back. There are no lines there: a row
 * waiting in one would count against the cluster's limit as if it were in flight. A crashed process's rows come
 * due when their leases end, for any process to claim.
 */
export interface DeliveryHandoff {
  /**
   * For a row queued now (`competitors`: how many connectors the event goes to): an attempt slot of the connector,
   * or a place in its line of rows waiting in memory for the next free slot (`slot` false). Either way the row is
   * queued leased until `leaseUntil` (micros). Null: queue it as due.
   */
  reserve(
    connector: Pick<DataConnectorRecord, 'id' | 'failingSince' | 'deliveryConfig'>,
    now: number,
    competitors: number,
  ): Reservation | null;
  /** The row's transaction committed: attempt it now in its slot, or line it up. */
  launch(item: ClaimedDelivery, slot: boolean): void;
  /**
   * The reservation is not used after all: the transaction rolled back, or (`queuedDue`) the store queued the row
   * due instead of leased, so the engine's claim takes it (a shared store's `leaseIf`).
   */
  release(connectorId: string, slot: boolean, queuedDue?: boolean): void;
  /** The connector's queue was dropped (disabled or deleted; committed): rows waiting in its line are gone. */
  queueDropped(connectorId: string): void;
  /** DeliveryNotices.pushOnce, done by the running engine. */
  pushOnce(connector: DataConnectorRecord, body: Buffer, trigger: DeliveryTrigger): Promise<AttemptOutcome>;
}

export interface Reservation {
  leaseUntil: number;
  slot: boolean;
  /** On a store several processes share: the condition of the lease (NewDelivery.leaseIf). */
  leaseIf?: NewDelivery['leaseIf'];
}

/** What the services tell delivery: nothing else of the engine is theirs to know. */
export interface DeliveryNotices {
  /** The connector's queue was dropped (disabled or deleted), and that change has committed. */
  queueDropped(connectorId: string): void;
  /**
   * One push attempt of `body` to the connector now (`:test`, extensions §X2), through the engine's own attempt path:
   * the same SSRF guard, trust store, timeout, signing, custom headers and X-Sensorcloud-Delivery-Trigger header as a
   * queued push; not queued, not retried, not counted in the connector's metrics, not logged (the caller logs it:
   * DeliveryLogRepo.recordTest, the attempt made by delivery-log.ts loggedAttempt). Resolves with the attempt's
   * outcome, a failed push included. Rejects, having made no attempt, with DeliveryEngineNotRunning when no engine
   * runs in this process, or with an ApiError 429 while the connector (2) or the engine (16) has as many test pushes
   * in flight as it allows.
   */
  pushOnce(connector: DataConnectorRecord, body: Buffer, trigger: DeliveryTrigger): Promise<AttemptOutcome>;
}

/** pushOnce without a running engine (a process started without delivery). */
export class DeliveryEngineNotRunning extends Error {
  constructor() {
    super('the delivery engine is not running in this process');
  }
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
    pushOnce(connector, body, trigger) {
      if (current === null) return Promise.reject(new DeliveryEngineNotRunning());
      return current.pushOnce(connector, body, trigger);
    },
  };
}
