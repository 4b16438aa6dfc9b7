// Event streams across a cluster: an event committed by one process reaches the streams open at every other. Each
// process sends the events its own transactions committed on one channel (NOTIFY), at most one batch every 10 ms,
// and hands the events it hears from the others to its pipeline's subscribers. A message holds what a stream
// filters and serves (the event JSON and the device's id, project, type, product number and labels); an event too
// large for one message (PostgreSQL's limit is 8,000 bytes) is sent as a reference and read back from the store.
// At most once, like a stream itself: events sent while a process's connection was down do not reach it.
import type { Logger } from '../runtime/logger.ts';
import type { DeviceRecord } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import type { EventPipeline } from './pipeline.ts';
import type { DeviceEvent, EmittedEvent } from './types.ts';

const CHANNEL = 'events';
/** Bytes of one message's payload; PostgreSQL refuses 8,000 and more. */
const MAX_PAYLOAD = 7_900;
/**
 * At most one send per this many ms (real time): each NOTIFY is a transaction of its own, with a commit flushed to
 * disk, and sent every turn of the event loop it was one for every event batch (about 500 a second at 1,000
 * events/s, as many as the event batches themselves). A stream sees an event at most this much later.
 */
const SEND_EVERY_MS = 10;

type Shown = Pick<DeviceRecord, 'id' | 'projectId' | 'type' | 'productNumber' | 'labels'>;
/** One event of a message: in full, or a reference [deviceId, eventId, timestamp] read back from the store. */
type Item = { j: string; d: Shown; t: number } | { r: [string, string, number] };
interface Message { from: string; items: Item[] }

export interface ClusterRelay {
  stop(): void;
}

export async function startClusterRelay(
  deps: { store: Store; events: EventPipeline; logger: Logger },
  processId: string,
): Promise<ClusterRelay> {
  const cluster = deps.store.cluster;
  if (cluster === null) return { stop: () => undefined };
  const relayed = new WeakSet<EmittedEvent>();
  let outgoing: Item[] = [];
  let scheduled = false;
  let lastFlush = -Infinity;

  const send = (items: Item[]) => {
    const payload = JSON.stringify({ from: processId, items } satisfies Message);
    cluster.publish(CHANNEL, payload).catch((err: unknown) => deps.logger.warn({ err }, 'event streams: sending events to the other processes failed'));
  };
  const flush = () => {
    scheduled = false;
    lastFlush = performance.now();
    const items = outgoing;
    outgoing = [];
    let batch: Item[] = [];
    let size = 0;
    for (const item of items) {
      const n = JSON.stringify(item).length + 1;
      if (batch.length > 0 && size + n > MAX_PAYLOAD - 64) {
        send(batch);
        batch = [];
        size = 0;
      }
      batch.push(item);
      size += n;
    }
    if (batch.length > 0) send(batch);
  };

  const unsubscribe = deps.events.subscribe((e) => {
    if (relayed.has(e)) return;
    const { id, projectId, type, productNumber, labels } = e.device;
    const item: Item = { j: e.json, d: { id, projectId, type, productNumber, labels }, t: e.timestamp };
    // Counted in UTF-16 units: a message of non-ASCII text may be up to 3 times larger in bytes.
    outgoing.push(JSON.stringify(item).length * 3 > MAX_PAYLOAD - 64 ? { r: [id, e.event.eventId, e.timestamp] } : item);
    if (!scheduled) {
      scheduled = true;
      const wait = lastFlush + SEND_EVERY_MS - performance.now();
      if (wait > 0) setTimeout(flush, wait);
      else setImmediate(flush);
    }
  });

  const relay = (e: EmittedEvent) => {
    relayed.add(e);
    deps.events.relay(e);
  };
  const stopListening = await cluster.subscribe(CHANNEL, (payload) => {
    let message: Message;
    try {
      message = JSON.parse(payload) as Message;
    } catch {
      return;
    }
    if (message.from === processId) return;
    for (const item of message.items) {
      if ('j' in item) relay({ event: JSON.parse(item.j) as DeviceEvent, json: item.j, device: item.d as DeviceRecord, timestamp: item.t });
      else void readBack(deps.store, item.r).then((e) => e && relay(e), (err: unknown) => deps.logger.warn({ err }, 'event streams: reading a relayed event failed'));
    }
  });
  return {
    stop() {
      unsubscribe();
      stopListening();
    },
  };
}

async function readBack(store: Store, [deviceId, eventId, timestamp]: [string, string, number]): Promise<EmittedEvent | null> {
  const [device, events] = await Promise.all([
    store.devices.get(deviceId),
    store.events.listByDevice({ deviceId, eventTypes: [], startTime: timestamp, endTime: timestamp, limit: 1000 }),
  ]);
  const stored = events.find((e) => e.id === eventId);
  if (!device || !stored) return null;
  return { event: JSON.parse(stored.body) as DeviceEvent, json: stored.body, device, timestamp };
}
