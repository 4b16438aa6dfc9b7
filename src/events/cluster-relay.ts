// Event streams across a cluster: an event committed by one process reaches the streams open at every other. Each
// process sends the events its own transactions committed on one channel (NOTIFY), at most one batch every 10 ms,
// and hands the events it hears from the others to its pipeline's subscribers. A message holds what a stream
// filters and serves (the event JSON and the device's id, project, type, product number and labels); an event too
// large for one message (PostgreSQL's limit is 8,000 bytes) is sent as a reference and read back from the store.
// At most once, like a stream itself: events sent while a process's connection was down do not reach it.
import type { Logger } from '../runtime/logger.ts';
import { messageRoom, packMessages, type MessageItem } from '../store/cluster.ts';
import type { DeviceRecord } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import type { EventPipeline } from './pipeline.ts';
import type { DeviceEvent, EmittedEvent } from './types.ts';

const CHANNEL = 'events';
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
  /** Items encoded (JSON), each once, with their size in bytes, waiting for the next send. */
  let outgoing: MessageItem[] = [];
  let scheduled = false;
  let lastFlush = -Infinity;

  // A message is built from its encoded items as text. Its first key is `from`, so a process passes over its own
  // messages without parsing them.
  const ownPrefix = `{"from":${JSON.stringify(processId)},"items":[`;
  /** Bytes of a message's items: the limit less the prefix and the closing `]}`. */
  const room = messageRoom(ownPrefix, ']}');
  // The messages of one send go in one statement: sent one by one, at ~5,500 events/s with one connector they were
  // ~360 statements a second, a tenth of the service's (pg_stat_statements), each a transaction of its own.
  const flush = () => {
    scheduled = false;
    lastFlush = performance.now();
    const payloads = packMessages(ownPrefix, ']}', outgoing);
    outgoing = [];
    cluster.publish(CHANNEL, payloads).catch((err: unknown) => deps.logger.warn({ err }, 'event streams: sending events to the other processes failed'));
  };

  const unsubscribe = deps.events.subscribe((e) => {
    if (relayed.has(e)) return;
    const { id, projectId, type, productNumber, labels } = e.device;
    const text = JSON.stringify({ j: e.json, d: { id, projectId, type, productNumber, labels }, t: e.timestamp } satisfies Item);
    const bytes = Buffer.byteLength(text);
    if (bytes <= room) outgoing.push({ text, bytes });
    else {
      const reference = JSON.stringify({ r: [id, e.event.eventId, e.timestamp] } satisfies Item);
      outgoing.push({ text: reference, bytes: Buffer.byteLength(reference) });
    }
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
    if (payload.startsWith(ownPrefix)) return;
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
