// Event streams across a cluster: an event committed by one process reaches the streams open at every other. Each
// process sends the events its own transactions committed on one channel (NOTIFY), at most one batch every 10 ms,
// and hands the events it hears from the others to its pipeline's subscribers. A message holds what a stream
// filters and serves (the event JSON and the device's id, project, type, product number and labels); an event too
// large for one message (PostgreSQL's limit is 8,000 bytes) is sent as a reference and read back from the store.
// At most once, like a stream itself: events sent while a process's connection was down do not reach it.
//
// Events are sent only while another process has a stream open. Sent to no one, they were a NOTIFY transaction
// every 10 ms, each flushed to disk, and every event's message read back by its own process: at saturation, one
// process, ~6 µs of the service's and ~6 µs of PostgreSQL's CPU per event (docs/benchmarks-log.md). So every process
// says hello once a second, saying whether it has streams open, and a process that heard of none in the last 3 s
// sends nothing (RelayTiming). A stream that opens where no stream was open asks the others first: it answers (its
// headers go out) once each process heard in the last 3 s has acknowledged (or after 1 s: one that died), and each
// acknowledges after it counts the asker as having streams, so an event committed anywhere after that reaches it.
// A process that starts sends every event for its first 3 s, until it has heard the hellos of the others.
import { createFailureLog } from '../runtime/failure-log.ts';
import type { Logger } from '../runtime/logger.ts';
import { messageRoom, packMessages, type MessageItem } from '../store/jobs/cluster.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import type { Store } from '../store/contract/store.ts';
import type { ClusterHold, EventPipeline } from './pipeline.ts';
import type { DeviceEvent, EmittedEvent } from './types.ts';

const CHANNEL = 'events';
/**
 * The hellos and acknowledgements, on a channel of their own: a process of the release before this one, during a
 * rolling upgrade, hears only events on CHANNEL (it would fail on anything else), and sends its events whatever.
 */
const PRESENCE = 'streams';
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
interface Message {
  from: string;
  items: Item[];
}
/** A hello (`streams`: whether it has streams open; `ask`: answer me), or the answer to an ask. */
type Presence = { from: string; streams: 0 | 1; ask?: number } | { from: string; ack: number; to: string };

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
  // The hellos fail every second while the database is unreachable: logged when that starts and when it ends.
  const sendFailures = createFailureLog(
    deps.logger,
    'warn',
    {
      failing: 'event streams: sending to the other processes failed',
      recovered: 'event streams: sending to the other processes works again',
    },
    () => performance.now(),
  );
  const send = (payloads: string[], channel = CHANNEL) => {
    if (stopped || payloads.length === 0) return;
    cluster.publish(channel, payloads).then(
      () => sendFailures.succeeded(),
      (err: unknown) => sendFailures.failed(err),
    );
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

  /**
   * The other processes heard within goneMs: when last, whether they have streams open, and whether they ever said
   * hello (one that sends events and never did is of an older release: it may have streams open).
   */
  const peers = new Map<string, { heardAt: number; streams: boolean; hello: boolean }>();
  let listeningSince = Infinity;
  const wanted = (now: number): boolean => {
    if (now - listeningSince < timing.goneMs) return true;
    for (const p of peers.values()) if ((p.streams || !p.hello) && now - p.heardAt < timing.goneMs) return true;
    return false;
  };
  const peer = (id: string) => {
    let p = peers.get(id);
    if (!p) peers.set(id, (p = { heardAt: 0, streams: false, hello: false }));
    const now = performance.now();
    p.heardAt = now;
    // Processes that went away without a word.
    for (const [other, q] of peers) if (now - q.heardAt >= timing.goneMs) peers.delete(other);
    return p;
  };
  const parse = <T extends { from?: unknown }>(payload: string): T | null => {
    if (payload.startsWith(from)) return null;
    try {
      const message = JSON.parse(payload) as T;
      return typeof message.from === 'string' && message.from !== processId ? message : null;
    } catch {
      return null;
    }
  };

  const unsubscribe = deps.events.subscribe((e) => {
    if (relayed.has(e) || !wanted(performance.now())) return;
    const { id, projectId, type, productNumber, labels } = e.device;
    const text = JSON.stringify({
      j: e.json,
      d: { id, projectId, type, productNumber, labels },
      t: e.timestamp,
    } satisfies Item);
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
  const hello = (ask?: number) =>
    send([`${from}"streams":${holds > 0 ? 1 : 0}${ask === undefined ? '' : `,"ask":${ask}`}}`], PRESENCE);
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  async function askOthers(): Promise<void> {
    // Every process says hello once in helloMs: wait until each one's hello could have been heard.
    const listened = Math.max(0, performance.now() - listeningSince); // 0: not listening yet
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
  const heardEvents = (payload: string) => {
    const message = parse<Message>(payload);
    if (!message || !Array.isArray(message.items)) return;
    peer(message.from);
    for (const item of message.items) {
      if ('j' in item)
        relay({
          event: JSON.parse(item.j) as DeviceEvent,
          json: item.j,
          device: item.d as DeviceRecord,
          timestamp: item.t,
        });
      else
        void readBack(deps.store, item.r).then(
          (e) => e && relay(e),
          (err: unknown) => deps.logger.warn({ err }, 'event streams: reading a relayed event failed'),
        );
    }
  };
  const heardPresence = (payload: string) => {
    const message = parse<Presence>(payload);
    if (!message) return;
    const p = peer(message.from);
    if ('streams' in message) {
      p.hello = true;
      p.streams = message.streams === 1;
      // Answered after it counts as having streams: what commits here from now on is sent.
      if (message.ask !== undefined)
        send([`${from}"ack":${message.ask},"to":${JSON.stringify(message.from)}}`], PRESENCE);
    } else if (message.to === processId && waiting?.ask === message.ack) {
      waiting.from.delete(message.from);
      if (waiting.from.size === 0) waiting.done();
    }
  };
  const stopEvents = await cluster.subscribe(CHANNEL, heardEvents);
  const stopPresence = await cluster.subscribe(PRESENCE, heardPresence);
  listeningSince = performance.now();
  hello();
  const hellos = setInterval(hello, timing.helloMs);
  hellos.unref();
  return {
    stop() {
      stopped = true;
      clearInterval(hellos);
      unsubscribe();
      stopEvents();
      stopPresence();
    },
  };
}

async function readBack(
  store: Store,
  [deviceId, eventId, timestamp]: [string, string, number],
): Promise<EmittedEvent | null> {
  const [device, events] = await Promise.all([
    store.devices.get(deviceId),
    store.events.listByDevice({ deviceId, eventTypes: [], startTime: timestamp, endTime: timestamp, limit: 1000 }),
  ]);
  const stored = events.find((e) => e.id === eventId);
  if (!device || !stored) return null;
  return { event: JSON.parse(stored.body) as DeviceEvent, json: stored.body, device, timestamp };
}
