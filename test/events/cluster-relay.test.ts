// Event streams across a cluster (events/cluster-relay.ts) against a fake cluster: every event committed here goes
// to the other processes, in order, in few sends (a send is a statement and a transaction of the database's) of
// messages within PostgreSQL's size limit, and what another process sends reaches this process's subscribers, not
// what this one sent itself.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startClusterRelay, type RelayTiming } from '../../src/events/cluster-relay.ts';
import type { ClusterHold, EventPipeline, EventSubscriber } from '../../src/events/pipeline.ts';
import type { EmittedEvent } from '../../src/events/types.ts';
import { createLogger } from '../../src/runtime/logger.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import type { Cluster, Store } from '../../src/store/contract/store.ts';
import { sleep } from '../helpers/until.ts';

const device: DeviceRecord = {
  id: 'd1',
  projectId: 'p1',
  type: 'temperature',
  productNumber: '102150',
  labels: { room: 'a' },
  reported: {},
  latestEvents: {},
  emulated: false,
  createTime: 0,
  updateTime: 0,
};
const emitted = (n: number): EmittedEvent => {
  const event = {
    eventId: `e${n}`,
    targetName: 'projects/p1/devices/d1',
    eventType: 'touch',
    data: { touch: {} },
    timestamp: '2026-01-01T00:00:00Z',
  };
  return { event, json: JSON.stringify(event), device, timestamp: n };
};

function fakes() {
  /** Every message of events, and the sends (calls of publish) they came in; the other messages (hellos, answers). */
  const sent: string[] = [];
  const sends: string[][] = [];
  const said: string[] = [];
  /** Listeners by channel. */
  const listeners = new Map<string, Set<(payload: string) => void>>();
  const cluster = {
    publish: async (channel: string, payloads: string[]) => {
      if (channel !== 'events') {
        said.push(...payloads);
        return;
      }
      sends.push(payloads);
      sent.push(...payloads);
    },
    subscribe: async (channel: string, fn: (payload: string) => void) => {
      if (!listeners.has(channel)) listeners.set(channel, new Set());
      listeners.get(channel)!.add(fn);
      return () => listeners.get(channel)!.delete(fn);
    },
  } as unknown as Cluster;
  const subscribers = new Set<EventSubscriber>();
  const relayed: EmittedEvent[] = [];
  let hold: (() => ClusterHold) | null = null;
  const events = {
    subscribe(fn: EventSubscriber) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
    relay: (e: EmittedEvent) => relayed.push(e),
    setClusterHold: (fn: () => ClusterHold) => (hold = fn),
  } as unknown as EventPipeline;
  const commit = (e: EmittedEvent) => {
    for (const s of subscribers) s(e);
  };
  /** A message another process sent: events on their channel, the rest on the hellos' (or raw text on `channel`). */
  const hear = (
    message: object | string,
    channel = typeof message === 'object' && 'items' in message ? 'events' : 'streams',
  ) => {
    for (const fn of listeners.get(channel) ?? []) fn(typeof message === 'string' ? message : JSON.stringify(message));
  };
  const store = { cluster } as unknown as Store;
  /** The relay of process 'me' on these fakes. */
  const start = (timing?: RelayTiming) =>
    startClusterRelay({ store, events, logger: createLogger({ level: 'silent' }) }, 'me', timing);
  /** The ids of the events sent, in order. */
  const sentIds = () =>
    sent.flatMap((p) =>
      (JSON.parse(p) as { items: Array<{ j: string }> }).items.map(
        (i) => (JSON.parse(i.j) as { eventId: string }).eventId,
      ),
    );
  return { sent, sends, said, listeners, hear, start, sentIds, commit, relayed, hold: () => hold!() };
}

/** Runs fn against the relay of process 'me' on fresh fakes, and stops the relay afterwards. */
async function withRelay(
  timing: RelayTiming | undefined,
  fn: (f: ReturnType<typeof fakes>) => Promise<void>,
): Promise<void> {
  const f = fakes();
  const relay = await f.start(timing);
  try {
    await fn(f);
  } finally {
    relay.stop();
  }
}

/** Hellos and asks a tenth of the real ones' time apart (RelayTiming). */
const FAST = { helloMs: 100, goneMs: 300, askMs: 200 };

describe('event streams across a cluster', () => {
  it('sends every committed event, in order, at most one send per 10 ms', () =>
    withRelay(undefined, async (f) => {
      const started = performance.now();
      let n = 0;
      // 60 ms, and at least 30 events however busy the machine is (a starved loop committed only 2 in 60 ms).
      while (performance.now() - started < 60 || n < 30) {
        f.commit(emitted(n++));
        await sleep(1);
      }
      await sleep(30);
      const elapsed = performance.now() - started;
      assert.deepEqual(
        f.sentIds(),
        Array.from({ length: n }, (_, i) => `e${i}`),
      );
      assert.ok(
        f.sends.length <= Math.ceil(elapsed / 10) + 1,
        `${f.sends.length} sends for ${n} events in ${Math.round(elapsed)} ms`,
      );
      assert.ok(f.sends.length < n / 2, `${f.sends.length} sends for ${n} events`);
    }));

  it('hands what another process sent to the subscribers here, and ignores its own messages', () =>
    withRelay(undefined, async (f) => {
      const message = (from: string, n: number) => ({ from, items: [{ j: emitted(n).json, d: device, t: n }] });
      f.hear(message('other', 1));
      f.hear(message('me', 2));
      for (const channel of ['events', 'streams']) {
        f.hear('not json', channel);
        f.hear({ from: 'other' }, channel);
        f.hear({ from: 'other', items: 'none' }, channel);
      }
      assert.deepEqual(
        f.relayed.map((e) => e.event.eventId),
        ['e1'],
      );
      assert.equal(f.relayed[0]!.device.labels.room, 'a');
    }));

  it('splits what one send holds into messages of at most 7,900 bytes, counted in UTF-8, in one send', () =>
    withRelay(undefined, async (f) => {
      // 2,000 characters of three bytes each: one event fits a message (6,000 bytes), two do not.
      const wide = (n: number): EmittedEvent => ({
        ...emitted(n),
        device: { ...device, labels: { note: '温'.repeat(2_000) } },
      });
      // Too large for any message: sent as a reference, read back from the store by the others.
      const huge: EmittedEvent = { ...emitted(9), device: { ...device, labels: { note: '温'.repeat(3_000) } } };
      for (const e of [wide(0), wide(1), emitted(2), huge, wide(3)]) f.commit(e);
      await sleep(30);
      assert.equal(f.sends.length, 1);
      for (const m of f.sent) assert.ok(Buffer.byteLength(m) <= 7_900, `${Buffer.byteLength(m)} bytes`);
      const items = f.sent.map(
        (m) => JSON.parse(m) as { from: string; items: Array<{ j?: string; r?: [string, string, number] }> },
      );
      assert.ok(items.every((m) => m.from === 'me'));
      assert.deepEqual(
        items.map((m) =>
          m.items.map((i) => (i.j ? (JSON.parse(i.j) as { eventId: string }).eventId : `ref:${i.r![1]}`)),
        ),
        [['e0'], ['e1', 'e2', 'ref:e9'], ['e3']],
      );
    }));

  it('sends no events when no other process has a stream open, once it has listened long enough to know', () =>
    withRelay(FAST, async (f) => {
      f.commit(emitted(0)); // while it cannot know yet: sent
      await sleep(FAST.goneMs + 50);
      f.commit(emitted(1));
      f.hear({ from: 'other', streams: 0 });
      f.commit(emitted(2));
      await sleep(30);
      assert.deepEqual(f.sentIds(), ['e0']);
      // It says hello at once and then every helloMs, with no streams open.
      assert.ok(f.said.length >= 3, `${f.said.length} hellos`);
      assert.ok(
        f.said.every((m) => m === '{"from":"me","streams":0}'),
        f.said.join(' '),
      );
    }));

  it('sends while another process has streams open, until it says it has none or is not heard for goneMs', () =>
    withRelay(FAST, async (f) => {
      await sleep(FAST.goneMs + 50);
      f.hear({ from: 'other', streams: 1 });
      f.commit(emitted(1));
      await sleep(30);
      f.hear({ from: 'other', streams: 0 });
      f.commit(emitted(2));
      await sleep(30);
      assert.deepEqual(f.sentIds(), ['e1']);
      f.hear({ from: 'other', streams: 1 });
      await sleep(FAST.goneMs + 20); // not heard since
      f.commit(emitted(3));
      await sleep(30);
      assert.deepEqual(f.sentIds(), ['e1']);
    }));

  it('answers an ask once the asker counts as having streams open: what commits here afterwards is sent', () =>
    withRelay(FAST, async (f) => {
      await sleep(FAST.goneMs + 50);
      f.hear({ from: 'other', streams: 1, ask: 7 });
      assert.ok(f.said.includes('{"from":"me","ack":7,"to":"other"}'), f.said.join(' '));
      f.commit(emitted(1));
      await sleep(30);
      assert.equal(f.sent.length, 1);
    }));

  it('a stream here is ready once every process heard has answered its ask, or after askMs without an answer', () =>
    withRelay(FAST, async (f) => {
      f.hear({ from: 'a', streams: 0 });
      f.hear({ from: 'b', streams: 0 });
      let ready = false;
      const started = performance.now();
      const first = f.hold();
      void first.ready.then(() => (ready = true));
      // It first listens for 1.5 hellos, to have heard every process.
      await sleep(FAST.helloMs * 1.5 + 20);
      const ask = f.said
        .map((m) => JSON.parse(m) as { ask?: number; streams?: number })
        .find((m) => m.ask !== undefined);
      assert.equal(ask?.streams, 1, f.said.join(' '));
      f.hear({ from: 'a', ack: ask!.ask, to: 'me' });
      f.hear({ from: 'b', ack: ask!.ask, to: 'someone else' });
      await sleep(10);
      assert.equal(ready, false, 'ready before b answered');
      f.hear({ from: 'b', ack: ask!.ask, to: 'me' });
      await sleep(10);
      assert.equal(ready, true);
      // Answered: a second stream is ready at once, and hellos now say streams are open.
      await f.hold().ready;
      await sleep(FAST.helloMs + 10);
      assert.ok(f.said.at(-1)!.includes('"streams":1'), f.said.at(-1));
      first.release();
      assert.ok(f.said.at(-1)!.includes('"streams":1'), 'one stream is still open');

      // A process that does not answer (it died and has not aged out): ready after askMs.
      await withRelay(FAST, async (g) => {
        g.hear({ from: 'mute', streams: 0 });
        const t0 = performance.now();
        await g.hold().ready;
        const waited = performance.now() - t0;
        assert.ok(waited >= FAST.helloMs * 1.5 + FAST.askMs - 20, `ready after ${Math.round(waited)} ms`);
      });
      assert.ok(performance.now() - started < 5_000);
    }));

  it('sends to a process that sends events but never said hello (a process of the release before, mid-upgrade)', () =>
    withRelay(FAST, async (f) => {
      await sleep(FAST.goneMs + 50);
      f.hear({ from: 'older', items: [] });
      f.commit(emitted(1));
      await sleep(30);
      assert.equal(f.sent.length, 1);
    }));
});
