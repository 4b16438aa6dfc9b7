// Event streams across a cluster: an event committed by one process reaches the streams open at every other. Each
// process sends the events its own transactions committed on one channel (NOTIFY), at most one batch every 10 ms,
// and hands the events it hears from the others to its pipeline's subscribers. A message holds what a stream
// filters and serves (the event JSON and the device's id, project, type, product number and labels); an event too
// large for one message (PostgreSQL's limit is 8,000 bytes) is sent as a reference and read back from the store.
// At most once, like a stream itself: events sent while a process's connection was down do not reach it.
//
// Events are sent only while another process has a stream open. Sent to no one, they were a NOTIFY transaction
// every 10 ms, each flushed to disk, and every event's message read back by its own process: at saturation, one
// process, ~6 µs of the service's and ~6 µs of PostgreSQL's CPU per event (docs/benchmarks.md). So every process
// says hello once a second (HELLO_MS), saying whether it has streams open; a process with none heard within
// GONE_MS sends nothing. A stream that opens where no stream was open asks the others first: it answers (its
// headers go out) once each process heard within GONE_MS has acknowledged (or after ASK_MS): an event committed
// anywhere after that reaches it. A process that starts sends every event for its first GONE_MS, until it has heard
// the hellos of those that have streams open.
import type { Logger } from '../runtime/logger.ts';
import { messageRoom, packMessages, type MessageItem } from '../store/cluster.ts';
import type { DeviceRecord } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import type { ClusterHold, EventPipeline } from './pipeline.ts';
import type { DeviceEvent, EmittedEvent } from './types.ts';

const CHANNEL = 'events';
/**
 * At most one send per this many ms (real time): each NOTIFY is a transaction of its own, with a commit flushed to
 * disk, and sent every turn of the event loop it was one for every event batch (about 500 a second at 1,000
 * events/s, as many as the event batches themselves). A stream sees an event at most this much later.
 */
const SEND_EVERY_MS = 10;

/** The timing of the hellos and asks (real time, ms); tests shorten it. */
export interface RelayTiming {
  /** Every process says hello this often. */
  helloMs: number;
  /** A process not heard for this long is gone, with its streams; a process that starts sends every event this long. */
  goneMs: number;
  /** A stream waits at most this long for the answers to its ask (a process that died has not aged out yet). */
  askMs: number;
}
const TIMING: RelayTiming = { helloMs: 1_000, goneMs: 3_000, askMs: 1_000 };

type Shown = Pick<DeviceRecord, 'id' | 'projectId' | 'type' | 'productNumber' | 'labels'>;
/** One event of a message: in full, or a reference [deviceId, eventId, timestamp] read back from the store. */
type Item = { j: string; d: Shown; t: number } | { r: [string, string, number] };
/** Events; a hello (`streams`: whether it has streams open; `ask`: answer me); or the answer to an ask. */
type Message =
  | { from: string; items: Item[] }
  | { from: string; streams: 0 | 1; ask?: number }
  | { from: string; ack: number; to: string };

export interface ClusterRelay {
  stop(): void;
}

export async function startClusterRelay(
  deps: { store: Store; events: EventPipeline; logger: Logger },
  processId: string,
  timing: RelayTiming = TIMING,
): Promise<ClusterRelay> {
  const cluster = deps.store.cluster;
  if (cluster === null) return { stop: () => undefined };
  const relayed = new WeakSet<EmittedEvent>();
  /** Items encoded (JSON), each once, with their size in bytes, waiting for the next send. */
  let outgoing: MessageItem[] = [];
  let scheduled = false;
  let lastFlush = -Infinity;
  let stopped = false;

  // A message is built from its encoded items as text. Its first key is `from`, so a process passes over its own
  // messages without parsing them.
  const from = `{"from":${JSON.stringify(processId)},`;
  const ownPrefix = `${from}"items":[`;
  /** Bytes of a message's items: the limit less the prefix and the closing `]}`. */
  const room = messageRoom(ownPrefix, ']}');
  const send = (payloads: string[]) => {
    if (stopped || payloads.length === 0) return;
    cluster.publish(CHANNEL, payloads).catch((err: unknown) => deps.logger.warn({ err }, 'event streams: sending to the other processes failed'));
  };
  // The messages of one send go in one statement: sent one by one, at ~5,500 events/s with one connector they were
  // ~360 statements a second, a tenth of the service's (pg_stat_statements), each a transaction of its own.
  const flush = () => {
    scheduled = false;
    lastFlush = performance.now();
    const payloads = packMessages(ownPrefix, ']}', outgoing);
    outgoing = [];
    send(payloads);
  };

  /** The other processes heard within goneMs: when last, and whether they have streams open. */
  const peers = new Map<string, { heardAt: number; streams: boolean }>();
  let listeningSince = Infinity;
  const wanted = (now: number): boolean => {
    if (now - listeningSince < timing.goneMs) return true;
    for (const p of peers.values()) if (p.streams && now - p.heardAt < timing.goneMs) return true;
    return false;
  };

  const unsubscribe = deps.events.subscribe((e) => {
    if (relayed.has(e) || !wanted(performance.now())) return;
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

  /** Streams open here (holds not released). */
  let holds = 0;
  /** The others have answered an ask made while streams were open here without a break. */
  let answered = false;
  let asking: Promise<void> | null = null;
  let asks = 0;
  /** The ask waiting for answers: who has not answered yet. */
  let waiting: { ask: number; from: Set<string>; done: () => void } | null = null;
  const hello = (ask?: number) => send([`${from}"streams":${holds > 0 ? 1 : 0}${ask === undefined ? '' : `,"ask":${ask}`}}`]);
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  async function askOthers(): Promise<void> {
    // Every process says hello once in helloMs: wait until each one's hello could have been heard.
    const listened = performance.now() - listeningSince;
    if (listened < timing.helloMs * 1.5) await sleep(timing.helloMs * 1.5 - listened);
    const now = performance.now();
    const ask = ++asks;
    const others = new Set([...peers].filter(([, p]) => now - p.heardAt < timing.goneMs).map(([id]) => id));
    const all = new Promise<void>((resolve) => {
      waiting = { ask, from: others, done: resolve };
      if (others.size === 0) resolve();
    });
    hello(ask);
    await Promise.race([all, sleep(timing.askMs)]);
    waiting = null;
    answered = holds > 0;
    asking = null;
  }

  deps.events.setClusterHold((): ClusterHold => {
    holds++;
    let released = false;
    const ready = answered ? Promise.resolve() : (asking ??= askOthers());
    return {
      ready,
      release() {
        if (released) return;
        released = true;
        if (--holds === 0) {
          answered = false;
          hello();
        }
      },
    };
  });

  const relay = (e: EmittedEvent) => {
    relayed.add(e);
    deps.events.relay(e);
  };
  const heard = (payload: string) => {
    if (payload.startsWith(from)) return;
    let message: Message;
    try {
      message = JSON.parse(payload) as Message;
    } catch {
      return;
    }
    if (typeof message.from !== 'string' || message.from === processId) return;
    const peer = peers.get(message.from) ?? { heardAt: 0, streams: false };
    peers.set(message.from, peer);
    peer.heardAt = performance.now();
    if ('items' in message) {
      for (const item of message.items) {
        if ('j' in item) relay({ event: JSON.parse(item.j) as DeviceEvent, json: item.j, device: item.d as DeviceRecord, timestamp: item.t });
        else void readBack(deps.store, item.r).then((e) => e && relay(e), (err: unknown) => deps.logger.warn({ err }, 'event streams: reading a relayed event failed'));
      }
    } else if ('streams' in message) {
      peer.streams = message.streams === 1;
      // Answered after it counts as having streams: what commits here from now on is sent.
      if (message.ask !== undefined) send([`${from}"ack":${message.ask},"to":${JSON.stringify(message.from)}}`]);
    } else if ('ack' in message && message.to === processId && waiting?.ask === message.ack) {
      waiting.from.delete(message.from);
      if (waiting.from.size === 0) waiting.done();
    }
    // Processes that went away without a word.
    for (const [id, p] of peers) if (peer.heardAt - p.heardAt >= timing.goneMs) peers.delete(id);
  };
  const stopListening = await cluster.subscribe(CHANNEL, heard);
  listeningSince = performance.now();
  hello();
  const hellos = setInterval(hello, timing.helloMs);
  hellos.unref();
  return {
    stop() {
      stopped = true;
      clearInterval(hellos);
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
