// Event streams across a cluster (events/cluster-relay.ts) against a fake cluster: every event committed here goes
// to the other processes, in order, in few sends (a send is a statement and a transaction of the database's) of
// messages within PostgreSQL's size limit, and what another process sends reaches this process's subscribers, not
// what this one sent itself.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startClusterRelay } from '../../src/events/cluster-relay.ts';
import type { EventPipeline, EventSubscriber } from '../../src/events/pipeline.ts';
import type { EmittedEvent } from '../../src/events/types.ts';
import { createLogger } from '../../src/runtime/logger.ts';
import type { DeviceRecord } from '../../src/store/records.ts';
import type { Cluster, Store } from '../../src/store/store.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const device: DeviceRecord = {
  id: 'd1', projectId: 'p1', type: 'temperature', productNumber: '102150', labels: { room: 'a' }, reported: {},
  latestEvents: {}, emulated: false, createTime: 0, updateTime: 0,
};
const emitted = (n: number): EmittedEvent => {
  const event = { eventId: `e${n}`, targetName: 'projects/p1/devices/d1', eventType: 'touch', data: { touch: {} }, timestamp: '2026-01-01T00:00:00Z' };
  return { event, json: JSON.stringify(event), device, timestamp: n };
};

function fakes() {
  /** Every message, and the sends (calls of publish) they came in. */
  const sent: string[] = [];
  const sends: string[][] = [];
  const listeners = new Set<(payload: string) => void>();
  const cluster = {
    publish: async (_channel: string, payloads: string[]) => {
      sends.push(payloads);
      sent.push(...payloads);
    },
    subscribe: async (_channel: string, fn: (payload: string) => void) => {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
  } as unknown as Cluster;
  const subscribers = new Set<EventSubscriber>();
  const relayed: EmittedEvent[] = [];
  const events = {
    subscribe(fn: EventSubscriber) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
    relay: (e: EmittedEvent) => relayed.push(e),
  } as unknown as EventPipeline;
  const commit = (e: EmittedEvent) => {
    for (const s of subscribers) s(e);
  };
  return { sent, sends, listeners, store: { cluster } as unknown as Store, events, commit, relayed };
}

describe('event streams across a cluster', () => {
  it('sends every committed event, in order, at most one send per 10 ms', async () => {
    const f = fakes();
    const relay = await startClusterRelay({ store: f.store, events: f.events, logger: createLogger({ level: 'silent' }) }, 'me');
    try {
      const started = performance.now();
      let n = 0;
      while (performance.now() - started < 60) {
        f.commit(emitted(n++));
        await sleep(1);
      }
      await sleep(30);
      const elapsed = performance.now() - started;
      const items = f.sent.flatMap((p) => (JSON.parse(p) as { items: Array<{ j: string }> }).items.map((i) => (JSON.parse(i.j) as { eventId: string }).eventId));
      assert.deepEqual(items, Array.from({ length: n }, (_, i) => `e${i}`));
      assert.ok(f.sends.length <= Math.ceil(elapsed / 10) + 1, `${f.sends.length} sends for ${n} events in ${Math.round(elapsed)} ms`);
      assert.ok(f.sends.length < n / 2, `${f.sends.length} sends for ${n} events`);
    } finally {
      relay.stop();
    }
  });

  it('hands what another process sent to the subscribers here, and ignores its own messages', async () => {
    const f = fakes();
    const relay = await startClusterRelay({ store: f.store, events: f.events, logger: createLogger({ level: 'silent' }) }, 'me');
    try {
      const message = (from: string, n: number) => JSON.stringify({ from, items: [{ j: emitted(n).json, d: device, t: n }] });
      for (const fn of f.listeners) {
        fn(message('other', 1));
        fn(message('me', 2));
        fn('not json');
      }
      assert.deepEqual(f.relayed.map((e) => e.event.eventId), ['e1']);
      assert.equal(f.relayed[0]!.device.labels.room, 'a');
    } finally {
      relay.stop();
    }
  });

  it('splits what one send holds into messages of at most 7,900 bytes, counted in UTF-8, in one send', async () => {
    const f = fakes();
    const relay = await startClusterRelay({ store: f.store, events: f.events, logger: createLogger({ level: 'silent' }) }, 'me');
    try {
      // 2,000 characters of three bytes each: one event fits a message (6,000 bytes), two do not.
      const wide = (n: number): EmittedEvent => ({ ...emitted(n), device: { ...device, labels: { note: '温'.repeat(2_000) } } });
      // Too large for any message: sent as a reference, read back from the store by the others.
      const huge: EmittedEvent = { ...emitted(9), device: { ...device, labels: { note: '温'.repeat(3_000) } } };
      for (const e of [wide(0), wide(1), emitted(2), huge, wide(3)]) f.commit(e);
      await sleep(30);
      assert.equal(f.sends.length, 1);
      for (const m of f.sent) assert.ok(Buffer.byteLength(m) <= 7_900, `${Buffer.byteLength(m)} bytes`);
      const items = f.sent.map((m) => (JSON.parse(m) as { from: string; items: Array<{ j?: string; r?: [string, string, number] }> }));
      assert.ok(items.every((m) => m.from === 'me'));
      assert.deepEqual(items.map((m) => m.items.map((i) => (i.j ? (JSON.parse(i.j) as { eventId: string }).eventId : `ref:${i.r![1]}`))), [
        ['e0'], ['e1', 'e2', 'ref:e9'], ['e3'],
      ]);
    } finally {
      relay.stop();
    }
  });
});
