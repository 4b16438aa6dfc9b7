// The device versions processes tell each other (store/postgres/batching/device-hints.ts), on an in-memory channel that
// delivers every message to every subscriber, the sender too, as NOTIFY does. Real timers: a send waits at most
// 10 ms, so each check waits a little longer than that.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeviceHints } from '../../src/store/postgres/batching/device-hints.ts';
import { DeviceVersions, type DeviceVersion } from '../../src/store/postgres/batching/device-versions.ts';
import type { Cluster } from '../../src/store/contract/store.ts';
import { device } from './contract/fixtures.ts';
import { sleep } from '../helpers/until.ts';

/** One channel's NOTIFY in memory: each message reaches every subscriber, in order, on a later turn. */
function channel() {
  const subscribers = new Set<(payload: string) => void>();
  const sent: string[] = [];
  const cluster = {
    async publish(_channel: string, payloads: readonly string[]) {
      sent.push(...payloads);
      setImmediate(() => {
        for (const p of payloads) for (const fn of subscribers) fn(p);
      });
    },
    async subscribe(_channel: string, fn: (payload: string) => void) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
  } as unknown as Cluster;
  return { cluster, sent };
}

/** A process of the cluster: its versions and its hints. */
function member(cluster: Cluster) {
  const versions = new DeviceVersions();
  const hints = createDeviceHints(cluster, versions);
  /** A batch committed these devices at these row versions (kept here first, as the store does). */
  const commit = (...kept: DeviceVersion[]) => {
    for (const v of kept) versions.set(v.device.id, v);
    hints.committed(new Map(kept.map((v) => [v.device.id, v])));
  };
  return { versions, hints, commit };
}

const at = (updateTime: number, xmin: string, d = device('p1')): DeviceVersion => ({
  device: { ...d, updateTime, reported: { n: updateTime } },
  xmin,
});

describe('device versions told to the other processes', () => {
  it('a process alone sends none; once it hears another, each hears the versions the other commits', async () => {
    const { cluster, sent } = channel();
    const a = member(cluster);
    const d = device('p1');
    a.commit(at(1, '10', d));
    await sleep(30);
    assert.ok(
      sent.every((m) => !m.includes('"v"')),
      'hellos only',
    );

    const b = member(cluster);
    b.commit(at(2, '20', device('p1')));
    await sleep(30);
    a.commit(at(3, '30', d));
    await sleep(30);
    assert.deepEqual(b.versions.get(d.id), at(3, '30', d));
    a.hints.stop();
    b.hints.stop();
  });

  it('a version heard never replaces a later one written here; the sender ignores its own', async () => {
    const { cluster } = channel();
    const a = member(cluster);
    const b = member(cluster);
    const d = device('p1');
    a.commit(at(1, '10', d));
    b.commit(at(1, '11', device('p1')));
    await sleep(30);
    b.commit(at(5, '50', d));
    a.commit(at(4, '40', d));
    await sleep(30);
    assert.deepEqual(b.versions.get(d.id), at(5, '50', d), 'kept its own, later one');
    assert.deepEqual(a.versions.get(d.id), at(5, '50', d), 'took the later one it heard');
    a.hints.stop();
    b.hints.stop();
  });

  it("many devices go in messages under PostgreSQL's 8,000 bytes; a device too large for one is left out", async () => {
    const { cluster, sent } = channel();
    const a = member(cluster);
    const b = member(cluster);
    a.commit(at(1, '1'));
    b.commit(at(1, '2'));
    await sleep(30);
    sent.length = 0;
    const many = Array.from({ length: 100 }, (_, i) => at(10 + i, String(100 + i)));
    const huge = at(7, '7');
    huge.device.reported = { blob: 'x'.repeat(9_000) };
    a.commit(...many, huge);
    await sleep(30);
    const messages = sent.filter((m) => m.includes('"v"'));
    assert.ok(
      messages.length > 1 && messages.every((m) => Buffer.byteLength(m) < 8_000),
      messages.map((m) => m.length).join(),
    );
    for (const v of many) assert.deepEqual(b.versions.get(v.device.id), v);
    assert.equal(b.versions.get(huge.device.id), undefined);
    a.hints.stop();
    b.hints.stop();
  });

  it('a message it cannot read is passed over, and the next one still heard', async () => {
    const { cluster } = channel();
    const a = member(cluster);
    a.commit(at(1, '1'));
    const d = at(2, '2');
    for (const bad of [
      'not json',
      'null',
      '{"p":"x","v":5}',
      '{"p":"x","v":[5,["1",null],["1",{"id":3}],[7,{"id":"d"}]]}',
    ]) {
      await cluster.publish('devices', [bad]);
    }
    await cluster.publish('devices', [JSON.stringify({ p: 'x', v: [[d.xmin, d.device]] })]);
    await sleep(30);
    assert.deepEqual(a.versions.get(d.device.id), d);
    a.hints.stop();
  });

  it('stopped, a process neither sends nor keeps what it hears', async () => {
    const { cluster } = channel();
    const a = member(cluster);
    const b = member(cluster);
    a.commit(at(1, '1'));
    b.commit(at(1, '2'));
    await sleep(30);
    b.hints.stop();
    const d = at(3, '3');
    a.commit(d);
    await sleep(30);
    assert.equal(b.versions.get(d.device.id), undefined);
    a.hints.stop();
  });
});
