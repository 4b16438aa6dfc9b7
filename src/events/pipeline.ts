// The one event pipeline (issue: "every event goes through one function"). In a single store transaction an
// emitted event is stored in history, applied to the device's `reported` state, and handed to every consumer
// (e.g. the data connector queue) — so an event is either stored and queued, or neither. After the commit it
// is offered to subscribers (event streams); a multi-process backend can feed subscribers the same way.
import { LABELS_CHANGED } from '../domain/device-types.ts';
import { deviceName } from '../domain/names.ts';
import { formatTimestamp } from '../domain/time.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { IdGenerator } from '../runtime/ids.ts';
import type { Logger } from '../runtime/logger.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import type { Repos, Store } from '../store/contract/store.ts';
import type { DeviceEvent, EmittedEvent } from './types.ts';

/** Callbacks a consumer leaves for when the emitting transaction is over; they run synchronously and must not throw. */
export interface TransactionOutcome {
  /** Runs once the transaction has committed, before the subscribers see its events. */
  onCommit(fn: () => void): void;
  /** Runs when the transaction rolled back: nothing it wrote was kept. */
  onRollback(fn: () => void): void;
}

/** Runs inside the emitting transaction; throwing rolls the whole change back. */
export interface EventConsumer {
  consume(tx: Repos, emitted: EmittedEvent, outcome: TransactionOutcome): Promise<void>;
}

/** Runs after commit, synchronously; must not throw or block (streams buffer and return at once). */
export type EventSubscriber = (emitted: EmittedEvent) => void;

/** Emits one event for the device at the given time (micros). Returns the event as stored. */
export type Emit = (device: DeviceRecord, eventType: string, data: unknown, timestamp: number) => Promise<EmittedEvent>;

export interface EventPipeline {
  /**
   * A store transaction in which events can be emitted; subscribers see them once it has committed. fn may be
   * called again after a call whose writes were undone (the store's `rerunnable`), so it must change nothing
   * outside the store; consumers undo their own effects through TransactionOutcome.onRollback. options.devices
   * names the devices fn reads, when known (the store's TransactionOptions.devices).
   */
  transaction<T>(fn: (tx: Repos, emit: Emit) => Promise<T>, options?: { devices?: readonly string[] }): Promise<T>;
  addConsumer(consumer: EventConsumer): void;
  /** Returns an unsubscribe function. */
  subscribe(subscriber: EventSubscriber): () => void;
  /** Hands an event another process of the cluster committed to the subscribers (cluster-relay.ts). */
  relay(emitted: EmittedEvent): void;
  /**
   * Asks for the events the other processes of a cluster commit, until released (an open stream holds this):
   * `ready` once every event they commit from then on reaches this process's subscribers. At once on one process.
   */
  holdCluster(): ClusterHold;
  /** Where the cluster relay (cluster-relay.ts) provides holdCluster. */
  setClusterHold(hold: () => ClusterHold): void;
}

export interface ClusterHold {
  ready: Promise<void>;
  release(): void;
}

/** A transaction's after-callbacks. */
class Callbacks implements TransactionOutcome {
  readonly committed: Array<() => void> = [];
  readonly rolledBack: Array<() => void> = [];
  onCommit(fn: () => void): void {
    this.committed.push(fn);
  }
  onRollback(fn: () => void): void {
    this.rolledBack.push(fn);
  }
}

export function createEventPipeline(deps: {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
}): EventPipeline {
  const consumers: EventConsumer[] = [];
  const subscribers = new Set<EventSubscriber>();
  let holdCluster = (): ClusterHold => ({ ready: Promise.resolve(), release: () => undefined });

  const emitIn =
    (tx: Repos, emitted: EmittedEvent[], outcome: TransactionOutcome): Emit =>
    async (device, eventType, data, timestamp) => {
      const event: DeviceEvent = {
        eventId: deps.ids.next(),
        targetName: deviceName(device.projectId, device.id),
        eventType,
        data,
        timestamp: formatTimestamp(timestamp),
      };
      const now = nowMicros(deps);
      const json = JSON.stringify(event);
      await tx.events.insert({
        id: event.eventId,
        projectId: device.projectId,
        deviceId: device.id,
        eventType,
        timestamp,
        createTime: now,
        body: json,
      });
      let current = device;
      const latest = device.latestEvents[eventType];
      // The latest event of a type only moves forward in event time (contract §5.3), so an older event is history
      // only; ids grow, so of two with the same time the later one is latest. `reported` follows it, except for
      // labelsChanged, which never appears there. One write keeps both: :sync finds its events through them.
      if (latest === undefined || timestamp >= latest[0]) {
        const reported =
          eventType === LABELS_CHANGED
            ? device.reported
            : { ...device.reported, [eventType]: (data as Record<string, unknown> | null)?.[eventType] ?? null };
        const latestEvents: DeviceRecord['latestEvents'] = {
          ...device.latestEvents,
          [eventType]: [timestamp, event.eventId],
        };
        current = { ...device, reported, latestEvents, updateTime: now };
        await tx.devices.updateReported(current.id, reported, latestEvents, now);
      }
      const result: EmittedEvent = { event, device: current, timestamp, json };
      for (const consumer of consumers) await consumer.consume(tx, result, outcome);
      emitted.push(result);
      return result;
    };

  const runAll = (fns: Array<() => void>) => {
    for (const f of fns) {
      try {
        f();
      } catch (err) {
        deps.logger.error({ err }, 'event consumer: after-transaction callback failed');
      }
    }
  };

  function tell(e: EmittedEvent): void {
    for (const s of subscribers) {
      try {
        s(e);
      } catch (err) {
        deps.logger.error({ err }, 'event subscriber failed');
      }
    }
  }

  return {
    async transaction(fn, options) {
      const emitted: EmittedEvent[] = [];
      const outcome = new Callbacks();
      let result;
      try {
        // Re-runnable: the store may undo a call and make it again (store/sqlite/index.ts). What a call left
        // behind is settled first, as a rollback: its events never happened.
        result = await deps.store.transaction(
          (tx) => {
            runAll(outcome.rolledBack.splice(0));
            emitted.length = 0;
            outcome.committed.length = 0;
            return fn(tx, emitIn(tx, emitted, outcome));
          },
          { rerunnable: true, devices: options?.devices },
        );
      } catch (err) {
        runAll(outcome.rolledBack);
        throw err;
      }
      runAll(outcome.committed);
      for (const e of emitted) tell(e);
      return result;
    },
    relay: tell,
    holdCluster: () => holdCluster(),
    setClusterHold(hold) {
      holdCluster = hold;
    },
    addConsumer(consumer) {
      consumers.push(consumer);
    },
    subscribe(subscriber) {
      subscribers.add(subscriber);
      return () => subscribers.delete(subscriber);
    },
  };
}
