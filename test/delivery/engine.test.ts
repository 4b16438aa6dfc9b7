// The delivery engine against real SQLite, a fake clock and a scripted dispatcher (contract §6.1-§6.7).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createDeliveryEngine, type DeliveryEngine, type EngineOptions } from '../../src/delivery/engine.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { pruneOnce } from '../../src/events/retention.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type ContextOptions, type TestContext } from '../helpers/context.ts';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { createPostgresTestStore } from '../helpers/store.ts';
import type { PostgresStore } from '../../src/store/postgres/index.ts';
import { FakeDispatcher } from '../helpers/fake-dispatcher.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

interface Setup {
  t: TestContext;
  fake: FakeDispatcher;
  engine: DeliveryEngine;
}

async function setup(options: ConstructorParameters<typeof FakeDispatcher>[0] = {}, store?: ContextOptions['store']): Promise<Setup> {
  const t = await createTestContext({ store });
  const fake = new FakeDispatcher(options);
  return { t, fake, engine: createDeliveryEngine(t.deps, fake) };
}

let urlCounter = 0;
async function createConnector(t: TestContext, body: Record<string, unknown> = {}, projectId = t.projectId): Promise<{ id: string; url: string; name: string }> {
  const url = `https://receiver${++urlCounter}.example/hook`;
  const res = await t.request('POST', `/v2/projects/${projectId}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', displayName: 'test', ...body, httpConfig: { url, ...(body.httpConfig as object) } },
  });
  assert.equal(res.status, 200, res.text);
  return { id: res.body.name.split('/')[3], url: res.body.httpConfig.url, name: res.body.name };
}

/** Emits one event through the pipeline, as the device API and the emulator do. */
async function publish(t: TestContext, device: DeviceRecord, eventType = 'touch', data?: unknown) {
  const ts = nowMicros(t.deps);
  const fresh = (await t.deps.store.devices.get(device.id)) ?? device;
  const payload = data ?? (eventType === 'labelsChanged' ? { added: {}, modified: {}, removed: [] } : { [eventType]: { updateTime: formatTimestamp(ts) } });
  return t.deps.events.transaction((_tx, emit) => emit(fresh, eventType, payload, ts));
}

/**
 * Waits until `cond` holds, polling in real time, for at most 5 s (the assertions after it say what was missing).
 * Real time, not a count of event-loop turns: a store across the network takes milliseconds per claim.
 */
async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await cond()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
}

/** Time for the engine to act on all it has (claims, attempts) before a test asserts that nothing more happened. */
const settle = () => new Promise((r) => setTimeout(r, 50));

const queueDepth = (t: TestContext) => t.deps.store.deliveries.count();
const getConnector = async (t: TestContext, id: string) => (await t.request('GET', `/v2/projects/${t.projectId}/dataconnectors/${id}`)).body;
const metricsOf = async (t: TestContext, id: string) => (await t.request('GET', `/v2/projects/${t.projectId}/dataconnectors/${id}:metrics`)).body.metrics;

describe('happy', () => {
  let s: Setup;
  before(async () => {
    s = await setup();
  });
  after(() => s.t.close());

  it('queues in the event transaction and pushes the exact body once', async () => {
    const { t, fake, engine } = s;
    const dc = await createConnector(t, { labels: ['room', 'name', 'missing'] });
    const device = await t.createDevice({ labels: { name: 'Meeting room 4', other: 'x', room: '4', 'virtual-sensor': '' } });
    const emitted = await publish(t, device, 'temperature', { temperature: { value: 21.5, updateTime: '2025-06-01T12:00:00.250000Z', samples: [], isBackfilled: false } });
    assert.equal(await queueDepth(t), 1);
    const report = await engine.runOnce();
    assert.deepEqual(report, { attempted: 1, acked: 1, failed: 0, dropped: 0 });
    assert.equal(await queueDepth(t), 0);
    const call = fake.callsTo(dc.url)[0]!;
    const expected = JSON.stringify({
      event: emitted.event,
      labels: { room: '4', name: 'Meeting room 4' },
      metadata: { deviceId: device.id, projectId: t.projectId, deviceType: 'temperature', productNumber: '102058' },
    });
    assert.equal(call.body.toString('utf8'), expected);
    assert.deepEqual(Object.keys(call.json.event), ['eventId', 'targetName', 'eventType', 'data', 'timestamp']);
    assert.deepEqual(await engine.runOnce(), { attempted: 0, acked: 0, failed: 0, dropped: 0 });
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('writes non-ASCII as UTF-8 without \\u escapes', async () => {
    const { t, fake, engine } = s;
    const dc = await createConnector(t, { labels: ['name'] });
    const device = await t.createDevice({ labels: { name: 'Büro ☕ 会議室' } });
    await publish(t, device);
    await engine.runOnce();
    const body = fake.callsTo(dc.url)[0]!.body;
    assert.ok(body.includes(Buffer.from('Büro ☕ 会議室', 'utf8')));
    assert.ok(!body.toString('utf8').includes('\\u'));
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('reads url, headers and secret at each attempt; labels are a snapshot taken at enqueue', async () => {
    const { t, fake, engine } = s;
    const dc = await createConnector(t, { labels: ['room'], httpConfig: { headers: { 'X-Old': '1' } } });
    const device = await t.createDevice({ labels: { room: 'before' } });
    await publish(t, device);
    await t.deps.store.devices.updateLabels(device.id, { room: 'after' }, nowMicros(t.deps));
    const newUrl = 'https://moved.example/hook';
    const patched = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
      body: { httpConfig: { url: newUrl, headers: { 'X-New': '2' }, signatureSecret: 's3cret' } },
    });
    assert.equal(patched.status, 200, patched.text);
    await engine.runOnce();
    const call = fake.callsTo(newUrl)[0]!;
    assert.deepEqual(call.target, { url: newUrl, headers: { 'X-New': '2' }, signatureSecret: 's3cret', probe: false });
    assert.deepEqual(call.json.labels, { room: 'before' });
    assert.equal(fake.callsTo(dc.url).length, 0);
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('applies the events filter; every matching connector gets its own copy', async () => {
    const { t, fake, engine } = s;
    const only = await createConnector(t, { events: ['temperature', 'labelsChanged'] });
    const all = await createConnector(t);
    const disabled = await createConnector(t, { status: 'USER_DISABLED' });
    const other = await createConnector(t, {}, await t.createProject('other'));
    const device = await t.createDevice();
    await publish(t, device, 'touch');
    await publish(t, device, 'temperature', { temperature: { value: 1, updateTime: formatTimestamp(nowMicros(t.deps)), samples: [], isBackfilled: false } });
    await publish(t, device, 'labelsChanged');
    await engine.runOnce();
    assert.deepEqual(fake.callsTo(only.url).map((c) => c.json.event.eventType).sort(), ['labelsChanged', 'temperature']);
    assert.deepEqual(fake.callsTo(all.url).map((c) => c.json.event.eventType).sort(), ['labelsChanged', 'temperature', 'touch']);
    assert.equal(fake.callsTo(disabled.url).length, 0);
    assert.equal(fake.callsTo(other.url).length, 0);
    for (const dc of [only, all, disabled]) await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('never queues pings', async () => {
    const { t } = s;
    const dc = await createConnector(t);
    const device = await t.createDevice();
    await publish(t, device, 'ping', null);
    assert.equal(await queueDepth(t), 0);
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });
});

describe('happy: retry schedule', () => {
  it('retries at 8, 24, 56 … 40088 s after enqueue and drops after 20 attempts', async () => {
    const { t, fake, engine } = await setup({ answer: 500 });
    try {
      const dc = await createConnector(t);
      await publish(t, await t.createDevice());
      const t0 = t.clock.now();
      const expected = [0, 8, 24, 56, 120, 248, 504, 1016, 2040, 4088];
      for (let n = 10; n < 20; n++) expected.push(expected[n - 1]! + 3600);
      for (const at of expected) {
        t.clock.set(t0 + at * 1000 - 1);
        if (at > 0) assert.equal((await engine.runOnce()).attempted, 0, `nothing due just before ${at} s`);
        t.clock.set(t0 + at * 1000);
        assert.equal((await engine.runOnce()).attempted, 1, `attempt due at ${at} s`);
      }
      assert.equal(fake.callsTo(dc.url).length, 20);
      assert.equal(expected[19], 40088);
      // Attempt 21 would start at 43688 s, after the 12-hour drop: the row is already gone.
      assert.equal(await queueDepth(t), 0);
      t.clock.set(t0 + 43688 * 1000);
      assert.equal((await engine.runOnce()).attempted, 0);
      const m = await metricsOf(t, dc.id);
      assert.equal(m.successCount, 0);
      assert.ok(m.errorCount >= 3, 'attempts of the last 3 hours count');
    } finally {
      await t.close();
    }
  });

  it('waits at least 4x the response time after the attempt ends (3 s → 12 s, timeout → 40 s)', async () => {
    const { t, fake, engine } = await setup({ answer: 500, responseTimeMs: 3000 });
    try {
      await createConnector(t);
      await publish(t, await t.createDevice());
      const t0 = t.clock.now();
      await engine.runOnce(); // ends at 3 s; next at 3 + 12 = 15 s
      t.clock.set(t0 + 15_000 - 1);
      assert.equal((await engine.runOnce()).attempted, 0);
      t.clock.set(t0 + 15_000);
      fake.answer = 'timeout';
      assert.equal((await engine.runOnce()).attempted, 1); // ends at 25 s; next at 25 + 40 = 65 s (not 25 + 16)
      t.clock.set(t0 + 65_000 - 1);
      assert.equal((await engine.runOnce()).attempted, 0);
      t.clock.set(t0 + 65_000);
      assert.equal((await engine.runOnce()).attempted, 1);
    } finally {
      await t.close();
    }
  });

  it('lets Retry-After lengthen an interval, capped at 3600 s', async () => {
    const { t, fake, engine } = await setup();
    try {
      await createConnector(t);
      await publish(t, await t.createDevice());
      const t0 = t.clock.now();
      fake.queue.push({ ok: false, reason: 'http_status', status: 503, retryAfterSeconds: 100 });
      await engine.runOnce();
      t.clock.set(t0 + 99_999);
      assert.equal((await engine.runOnce()).attempted, 0);
      t.clock.set(t0 + 100_000);
      fake.queue.push({ ok: false, reason: 'http_status', status: 429, retryAfterSeconds: 1 }); // shorter: ignored (16 s)
      await engine.runOnce();
      t.clock.set(t0 + 116_000 - 1);
      assert.equal((await engine.runOnce()).attempted, 0);
      t.clock.set(t0 + 116_000);
      fake.queue.push({ ok: false, reason: 'http_status', status: 429, retryAfterSeconds: 86_400 });
      await engine.runOnce();
      t.clock.set(t0 + 116_000 + 3600_000 - 1);
      assert.equal((await engine.runOnce()).attempted, 0);
      t.clock.set(t0 + 116_000 + 3600_000);
      assert.deepEqual(await engine.runOnce(), { attempted: 1, acked: 1, failed: 0, dropped: 0 });
    } finally {
      await t.close();
    }
  });

  it('drops an event 12 h after enqueue without another attempt', async () => {
    const { t, fake, engine } = await setup({ answer: 500 });
    try {
      const dc = await createConnector(t);
      await publish(t, await t.createDevice());
      await engine.runOnce();
      t.clock.advance(12 * HOUR);
      fake.answer = 200;
      assert.deepEqual(await engine.runOnce(), { attempted: 0, acked: 0, failed: 0, dropped: 1 });
      assert.equal(fake.callsTo(dc.url).length, 1);
      assert.equal(await queueDepth(t), 0);
      const prom = await t.request('GET', '/metrics', { auth: null });
      assert.match(prom.text, /^deliveries_total\{outcome="dropped"\} 1$/m);
    } finally {
      await t.close();
    }
  });
});

describe('happy: status machine', () => {
  it('disables after 5 days of failures, dropping the queue; nothing is queued afterwards', async () => {
    const { t, fake, engine } = await setup({ answer: 500 });
    try {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      const t0 = t.clock.now();
      for (let day = 0; day < 5; day++) {
        t.clock.set(t0 + day * DAY);
        await publish(t, device);
        await engine.runOnce();
        const c = await getConnector(t, dc.id);
        assert.equal(c.status, 'ACTIVE', `day ${day}`);
      }
      t.clock.set(t0 + 5 * DAY);
      await publish(t, device);
      await publish(t, device);
      await engine.runOnce();
      assert.equal((await getConnector(t, dc.id)).status, 'SYSTEM_DISABLED');
      assert.equal(await queueDepth(t), 0);
      await publish(t, device);
      assert.equal(await queueDepth(t), 0);
      const calls = fake.callsTo(dc.url).length;
      t.clock.advance(HOUR);
      await engine.runOnce();
      assert.equal(fake.callsTo(dc.url).length, calls);
      // Re-enabling works and starts a fresh failing period.
      const re = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { status: 'ACTIVE' } });
      assert.equal(re.body.status, 'ACTIVE');
      await publish(t, device);
      await engine.runOnce();
      assert.equal((await getConnector(t, dc.id)).status, 'ACTIVE');
    } finally {
      await t.close();
    }
  });

  it('one success resets the failing period', async () => {
    const { t, fake, engine } = await setup({ answer: 500 });
    try {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      const t0 = t.clock.now();
      await publish(t, device);
      await engine.runOnce();
      assert.equal((await t.deps.store.dataConnectors.get(dc.id))!.failingSince, nowMicros(t.deps));
      t.clock.set(t0 + 4 * DAY);
      fake.answer = 200;
      await publish(t, device);
      await engine.runOnce();
      assert.equal((await t.deps.store.dataConnectors.get(dc.id))!.failingSince, null);
      fake.answer = 500;
      t.clock.set(t0 + 6 * DAY);
      await publish(t, device);
      await engine.runOnce();
      assert.equal((await t.deps.store.dataConnectors.get(dc.id))!.failingSince, nowMicros(t.deps));
      t.clock.set(t0 + 9 * DAY);
      await publish(t, device);
      await engine.runOnce();
      assert.equal((await getConnector(t, dc.id)).status, 'ACTIVE');
    } finally {
      await t.close();
    }
  });

  it('USER_DISABLED drops the queue; nothing generated while disabled is ever sent; no backfill', async () => {
    const { t, fake, engine } = await setup({ answer: 500 });
    try {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      const before = [await publish(t, device), await publish(t, device)];
      await engine.runOnce();
      assert.equal(await queueDepth(t), 2);
      const off = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { status: 'USER_DISABLED' } });
      assert.equal(off.body.status, 'USER_DISABLED');
      assert.equal(await queueDepth(t), 0);
      const during = await publish(t, device);
      assert.equal(await queueDepth(t), 0);
      const on = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { status: 'ACTIVE' } });
      assert.equal(on.body.status, 'ACTIVE');
      assert.equal(await queueDepth(t), 0);
      fake.answer = 200;
      const later = await publish(t, device);
      t.clock.advance(HOUR);
      await engine.runOnce();
      const ids = fake.eventIds(dc.url);
      assert.ok(!ids.includes(during.event.eventId));
      assert.equal(ids.filter((id) => id === before[0]!.event.eventId).length, 1, 'only the first failed attempt');
      assert.ok(ids.includes(later.event.eventId));
      assert.equal(await queueDepth(t), 0);
    } finally {
      await t.close();
    }
  });

  it('an attempt in flight when the connector is disabled counts in metrics but is not retried', async () => {
    const { t, fake, engine } = await setup({ answer: 500 });
    try {
      const dc = await createConnector(t);
      await publish(t, await t.createDevice());
      fake.hold();
      const run = engine.runOnce();
      await until(() => fake.calls.length > 0);
      assert.equal(fake.calls.length, 1);
      await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { status: 'USER_DISABLED' } });
      await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { status: 'ACTIVE' } });
      fake.release();
      assert.deepEqual(await run, { attempted: 1, acked: 0, failed: 1, dropped: 0 });
      assert.equal(await queueDepth(t), 0);
      assert.equal((await metricsOf(t, dc.id)).errorCount, 1);
    } finally {
      await t.close();
    }
  });

  it('a deleted connector loses its queue and metrics; an attempt in flight is forgotten', async () => {
    const { t, fake, engine } = await setup();
    try {
      const dc = await createConnector(t);
      await publish(t, await t.createDevice());
      fake.hold();
      const run = engine.runOnce();
      await until(() => fake.calls.length > 0);
      assert.equal((await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`)).status, 200);
      fake.release();
      await run;
      assert.equal(await queueDepth(t), 0);
      assert.deepEqual(await t.deps.store.connectorMetrics.listSince(dc.id, 0), []);
    } finally {
      await t.close();
    }
  });
});

describe('happy: concurrency', () => {
  it('caps attempts per connector so a hanging endpoint does not hold up the others', async () => {
    const { t, fake } = await setup();
    const engine = createDeliveryEngine(t.deps, fake, { perConnectorConcurrency: 4, totalConcurrency: 10 });
    try {
      const dead = await createConnector(t);
      const live = await createConnector(t);
      const device = await t.createDevice();
      for (let i = 0; i < 10; i++) await publish(t, device);
      fake.hold(dead.url);
      const run = engine.runOnce();
      await until(() => fake.callsTo(live.url).length >= 10 && fake.callsTo(dead.url).length >= 4);
      await settle();
      assert.equal(fake.callsTo(dead.url).length, 4);
      assert.equal(fake.callsTo(live.url).length, 10);
      fake.release();
      const report = await run;
      assert.equal(report.acked, 20);
      assert.equal(fake.callsTo(dead.url).length, 10);
    } finally {
      await t.close();
    }
  });
});

describe('isolation', () => {
  it('probes a connector whose last attempt failed with only a couple of attempts at a time', async () => {
    const { t, fake } = await setup();
    const engine = createDeliveryEngine(t.deps, fake, { perConnectorConcurrency: 8, failingConnectorConcurrency: 2, totalConcurrency: 100 });
    try {
      const dead = await createConnector(t);
      const device = await t.createDevice();
      await publish(t, device);
      fake.byUrl.set(dead.url, 503);
      assert.equal((await engine.runOnce()).failed, 1); // now known to fail
      for (let i = 0; i < 10; i++) await publish(t, device);
      fake.hold(dead.url);
      const run = engine.runOnce();
      await until(() => fake.callsTo(dead.url).length >= 1 + 2);
      await settle();
      assert.equal(fake.callsTo(dead.url).length, 1 + 2, 'a failing connector gets 2 slots, not 8');
      fake.byUrl.set(dead.url, 200);
      fake.release();
      await run;
      // Healthy again after a success: the next run may use the full share.
      for (let i = 0; i < 10; i++) await publish(t, device);
      fake.hold(dead.url);
      const next = engine.runOnce();
      await until(() => fake.callsTo(dead.url).length >= 3 + 8);
      assert.ok(fake.callsTo(dead.url).length >= 3 + 8, `full share after a success (${fake.callsTo(dead.url).length})`);
      fake.release();
      await next;
    } finally {
      await t.close();
    }
  });
});

describe('isolation: suspect connectors', () => {
  it('treats a connector with an attempt in flight for over a second like a failing one', async () => {
    const { t, fake } = await setup();
    const engine = createDeliveryEngine(t.deps, fake, { perConnectorConcurrency: 8, failingConnectorConcurrency: 2, suspectAfterMs: 1000 });
    try {
      const dead = await createConnector(t);
      const live = await createConnector(t);
      const device = await t.createDevice();
      for (let i = 0; i < 4; i++) await publish(t, device);
      fake.hold(dead.url);
      const first = engine.runOnce();
      await until(() => fake.callsTo(live.url).length >= 4 && fake.callsTo(dead.url).length >= 4);
      assert.equal(fake.callsTo(dead.url).length, 4, 'not yet suspect: a full share');
      t.clock.advance(1500);
      for (let i = 0; i < 10; i++) await publish(t, device);
      const second = engine.runOnce();
      await until(() => fake.callsTo(live.url).length >= 14);
      await settle();
      assert.equal(fake.callsTo(live.url).length, 14);
      assert.equal(fake.callsTo(dead.url).length, 4, 'suspect: no new attempts beyond the 2-slot probe share');
      fake.release();
      await Promise.all([first, second]);
    } finally {
      await t.close();
    }
  });
});

describe('isolation: fair share', () => {
  it('splits the overall cap among the connectors that have rows due', async () => {
    const { t, fake } = await setup();
    const engine = createDeliveryEngine(t.deps, fake, { perConnectorConcurrency: 8, failingConnectorConcurrency: 1, totalConcurrency: 8 });
    try {
      const dead = await createConnector(t);
      const live = await createConnector(t);
      const device = await t.createDevice();
      for (let i = 0; i < 8; i++) await publish(t, device);
      fake.hold(dead.url);
      const run = engine.runOnce();
      await until(() => fake.callsTo(live.url).length >= 8);
      assert.equal(fake.callsTo(live.url).length, 8, 'the other connector still gets through');
      // While the other connector had rows due, the hanging one held at most half of the overall cap ...
      const lastLive = fake.calls.map((c) => c.target.url).lastIndexOf(live.url);
      const deadBefore = fake.calls.slice(0, lastLive).filter((c) => c.target.url === dead.url).length;
      assert.equal(deadBefore, 4, 'half of the overall cap, not all of it');
      // ... and once nothing else is due it may use the rest (the cap is shared, not reserved).
      await settle();
      assert.ok(fake.callsTo(dead.url).length <= 8);
      fake.release();
      await run;
    } finally {
      await t.close();
    }
  });
});

describe('isolation: many failing connectors', () => {
  it('failing connectors together hold at most half the overall cap, however many: a healthy one still delivers', async () => {
    // 1,000 dead endpoints, two probes each, once held all 1,024 slots: here 12 dead ones, one probe each, 8 slots.
    const { t, fake } = await setup();
    const engine = createDeliveryEngine(t.deps, fake, { perConnectorConcurrency: 8, failingConnectorConcurrency: 1, totalConcurrency: 8 });
    try {
      const dead = [];
      for (let i = 0; i < 12; i++) dead.push(await createConnector(t));
      const device = await t.createDevice();
      await publish(t, device);
      for (const d of dead) fake.byUrl.set(d.url, 503);
      await engine.runOnce(); // every dead one is now known to fail
      const live = await createConnector(t);
      for (const d of dead) fake.hold(d.url);
      const lastDead = fake.calls.length;
      for (let i = 0; i < 4; i++) await publish(t, device);
      t.clock.advance(60_000); // the dead ones' retries are due too
      const run = engine.runOnce();
      await until(() => fake.callsTo(live.url).length >= 4);
      await settle();
      assert.equal(fake.callsTo(live.url).length, 4, 'the healthy connector delivers every event while the dead ones hang');
      const probes = fake.calls.slice(lastDead).filter((c) => c.target.url !== live.url).length;
      assert.equal(probes, 4, 'four probes in flight (half of 8), not one per failing connector');
      const sent = fake.calls.slice(lastDead);
      assert.ok(sent.every((c) => (c.target.probe === true) === (c.target.url !== live.url)), 'the dispatcher is told which attempts are probes');
      fake.release();
      await run;
    } finally {
      await t.close();
    }
  });
});

describe('a paused process', () => {
  it('does not attempt a row whose lease is half over when its attempt would start; it is attempted once the lease ends', async () => {
    const { t, fake, engine } = await setup();
    try {
      const dc = await createConnector(t);
      await publish(t, await t.createDevice());
      // The process stops for 40 s between the claim (a 60 s lease) and the attempt: another process of a cluster
      // could take the row before a push started now ended.
      const deliveries = t.deps.store.deliveries;
      const read = deliveries.connectorsWithDue.bind(deliveries);
      let pause = true;
      deliveries.connectorsWithDue = async (now, enqueuedAfter) => {
        const due = await read(now, enqueuedAfter);
        if (pause) t.clock.advance(40_000);
        pause = false;
        return due;
      };
      assert.deepEqual(await engine.runOnce(), { attempted: 0, acked: 0, failed: 0, dropped: 0 });
      assert.equal(fake.callsTo(dc.url).length, 0, 'not pushed');
      assert.equal(await queueDepth(t), 1, 'the row stays queued');
      t.clock.advance(20_000 - 1);
      assert.equal((await engine.runOnce()).attempted, 0, 'leased until 60 s after the claim');
      t.clock.advance(1);
      assert.deepEqual(await engine.runOnce(), { attempted: 1, acked: 1, failed: 0, dropped: 0 });
      assert.equal(fake.callsTo(dc.url).length, 1);
      assert.equal(await queueDepth(t), 0);
    } finally {
      await t.close();
    }
  });
});

describe('happy: background loop', () => {
  it('wakes on a committed event without waiting for the poll, and stops cleanly', async () => {
    const { t, fake } = await setup();
    const engine = createDeliveryEngine(t.deps, fake, { pollIntervalMs: 60_000 });
    try {
      const dc = await createConnector(t);
      engine.start();
      const sent = await publish(t, await t.createDevice());
      await until(() => fake.callsTo(dc.url).length > 0);
      assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
      await engine.stop();
      await until(async () => (await queueDepth(t)) === 0);
      assert.equal(await queueDepth(t), 0);
    } finally {
      await engine.stop();
      await t.close();
    }
  });

  it('sends a row leased by a process that died: at start on a store one process owns, after the lease on a shared one', async () => {
    const { t, fake } = await setup();
    const engine = createDeliveryEngine(t.deps, fake, { pollIntervalMs: 60_000 });
    try {
      const dc = await createConnector(t);
      const sent = await publish(t, await t.createDevice());
      // Simulate a claim by a process that died: the row is leased for a minute.
      const now = nowMicros(t.deps);
      const claimed = await t.deps.store.deliveries.claim(dc.id, now, 0, now + 60_000_000, 10);
      assert.equal(claimed.length, 1);
      engine.start();
      if (!t.deps.store.exclusive) {
        // Another process may still be pushing it: the lease is honoured until it runs out.
        await settle();
        assert.equal(fake.calls.length, 0);
        t.clock.advance(61_000);
        engine.wake();
      }
      await until(() => fake.callsTo(dc.url).length > 0);
      assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
    } finally {
      await engine.stop();
      await t.close();
    }
  });
});

describe('happy: hand-off of fresh rows', () => {
  const dueNow = (t: TestContext) => t.deps.store.deliveries.connectorsWithDue(nowMicros(t.deps), 0);

  /**
   * A test with its own context and an engine that polls only once a minute (hand-offs and wakes do the rest), on
   * the test store (`any`), or on SQLite or PostgreSQL whatever the test store is: the line exists only on a store
   * one process owns (on a shared store a row in line would count against the cluster's limit as in flight), and
   * the cluster's limit only on a shared one.
   */
  const withEngine = async (options: EngineOptions, body: (s: Setup) => Promise<void>, store: 'any' | 'sqlite' | 'postgres' = 'sqlite') => {
    const { t, fake } = await setup({}, store === 'any' ? undefined : store === 'sqlite' ? (dir) => createSqliteStore(join(dir, 'sensorcloud.db')) : createPostgresTestStore);
    const engine = createDeliveryEngine(t.deps, fake, { pollIntervalMs: 60_000, ...options });
    try {
      await body({ t, fake, engine });
    } finally {
      fake.release();
      await engine.stop();
      await t.close();
    }
  };

  /** A connector with one slot, taken by the held push of `first`. */
  const busyConnector = async ({ t, fake, engine }: Setup) => {
    const dc = await createConnector(t);
    const device = await t.createDevice();
    engine.start();
    fake.hold();
    const first = await publish(t, device);
    await until(() => fake.calls.length > 0);
    return { dc, device, first };
  };

  it('queues a fresh row already leased and attempts it at commit: never due, never claimed', async () => {
    await withEngine({}, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      engine.start();
      fake.hold();
      const sent = await publish(t, await t.createDevice());
      await until(() => fake.calls.length > 0);
      assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
      assert.equal(await queueDepth(t), 1, 'durable while in flight');
      assert.deepEqual(await dueNow(t), [], 'leased: no claim can take it a second time');
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.equal(await queueDepth(t), 0);
      assert.equal(fake.calls.length, 1);
    }, 'any');
  });

  it('a fresh row whose lease is half over at its commit (the process paused) is not pushed until its lease ends', async () => {
    await withEngine({}, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      engine.start();
      // Handed off with a 60 s lease; the process stops for 40 s before the commit is answered.
      const sent = await t.deps.events.transaction(async (_tx, emit) => {
        const emitted = await emit(device, 'touch', { touch: { updateTime: formatTimestamp(nowMicros(t.deps)) } }, nowMicros(t.deps));
        t.clock.advance(40_000);
        return emitted;
      });
      await settle();
      assert.equal(fake.calls.length, 0, 'not pushed');
      assert.equal(await queueDepth(t), 1, 'still queued');
      t.clock.advance(20_000);
      engine.wake();
      await until(() => fake.calls.length > 0);
      assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId], 'pushed once its lease ended');
      await until(async () => (await queueDepth(t)) === 0);
      assert.equal(await queueDepth(t), 0);
    }, 'any');
  });

  it('a rolled-back transaction gives its slot back', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      engine.start();
      await assert.rejects(
        t.deps.events.transaction(async (_tx, emit) => {
          await emit(device, 'touch', { touch: { updateTime: formatTimestamp(nowMicros(t.deps)) } }, nowMicros(t.deps));
          throw new Error('changed my mind');
        }),
        /changed my mind/,
      );
      assert.equal(await queueDepth(t), 0);
      // With one slot, a leaked reservation would leave the next row queued for the (minute-long) poll.
      const sent = await publish(t, device);
      await until(() => fake.calls.length > 0);
      assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
    }, 'any');
  });

  it('a publish undone and run again (its commit shared with one that failed after writing) goes out once, and no slot leaks', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async ({ t, fake, engine }) => {
      const seen: string[] = [];
      t.deps.events.subscribe((e) => seen.push(e.event.eventId)); // ends with the context
      const dc = await createConnector(t);
      const device = await t.createDevice();
      engine.start();
      const now = nowMicros(t.deps);
      // Requested in the same turn, so they share a commit: the second one's failure undoes the first one's call too.
      const [kept, failed] = await Promise.allSettled([
        t.deps.events.transaction((_tx, emit) => emit(device, 'touch', { touch: { updateTime: formatTimestamp(now) } }, now)),
        t.deps.events.transaction(async (_tx, emit) => {
          await emit(device, 'touch', { touch: { updateTime: formatTimestamp(now) } }, now);
          throw new Error('fails after writing');
        }),
      ]);
      assert.equal(failed.status, 'rejected');
      assert.equal(kept.status, 'fulfilled');
      const id = (kept as PromiseFulfilledResult<{ event: { eventId: string } }>).value.event.eventId;
      await until(async () => fake.calls.length > 0 && (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), [id], 'pushed once');
      assert.deepEqual(seen, [id], 'streamed once');
      assert.equal((await t.deps.store.events.listByDevice({ deviceId: device.id, eventTypes: [], startTime: 0, endTime: Number.MAX_SAFE_INTEGER, limit: 10 })).length, 1);
      // With one slot, a reservation leaked by the undone call would leave the next row queued for the poll.
      const later = await publish(t, device);
      await until(() => fake.calls.length > 1);
      assert.deepEqual(fake.eventIds(dc.url), [id, later.event.eventId]);
    }, 'any');
  });

  it('rows already due when the loop starts (a backlog after a restart) are drained without waiting for the poll', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push(await publish(t, device));
      assert.deepEqual(await dueNow(t), [dc.id]);
      engine.start();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), sent.map((e) => e.event.eventId), 'one slot: claimed one by one, in order');
      const later = await publish(t, device);
      await until(() => fake.calls.length > 5);
      assert.deepEqual(fake.eventIds(dc.url).slice(5), [later.event.eventId]);
    }, 'any');
  });

  it('a hanging connector never takes every slot: the other one gets each event at once', async () => {
    await withEngine({ perConnectorConcurrency: 6, totalConcurrency: 8 }, async ({ t, fake, engine }) => {
      const dead = await createConnector(t);
      const live = await createConnector(t);
      const device = await t.createDevice();
      engine.start();
      fake.hold(dead.url);
      for (let i = 0; i < 8; i++) await publish(t, device);
      await until(() => fake.callsTo(live.url).length >= 8);
      assert.equal(fake.callsTo(live.url).length, 8, 'the live connector gets every event while the dead one hangs');
      // Hand-offs give the hanging one half of the cap (two connectors per event); claims of its queued rows add
      // more once the live one's pushes are over (a slot is free again when its push ends), up to its own cap.
      await until(() => fake.callsTo(dead.url).length >= 6);
      assert.equal(fake.callsTo(dead.url).length, 6, 'the hanging connector holds its own cap, not the overall one');
      const later = await publish(t, device);
      await until(() => fake.callsTo(live.url).length >= 9);
      assert.deepEqual(fake.eventIds(live.url).slice(8), [later.event.eventId], 'a new event still goes out at once');
    }, 'any');
  });

  it('on a shared store, behind a busy connector fresh rows are queued due (no line) and claimed in order as slots free', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      const queued = [await publish(t, device), await publish(t, device)];
      assert.deepEqual(await dueNow(t), [dc.id]);
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), [first, ...queued].map((e) => e.event.eventId));
      fake.hold();
      const later = await publish(t, device);
      await until(() => fake.calls.length > 3);
      assert.deepEqual(fake.eventIds(dc.url).slice(3), [later.event.eventId]);
      assert.deepEqual(await dueNow(t), [], 'handed off again once nothing was due');
    }, 'postgres');
  });

  it('on a shared store the per-connector limit counts other processes\' rows in flight: fresh rows wait, due, for room', async () => {
    await withEngine({ perConnectorConcurrency: 2 }, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      // Two attempts of another process, in flight: the connector's whole limit.
      const now = nowMicros(t.deps);
      const foreign = await t.deps.store.deliveries.insert([1, 2].map((i) => ({
        connectorId: dc.id, eventId: `other${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now + 60_000_000, leaseUntil: now + 60_000_000,
      })));
      engine.start();
      const sent = await publish(t, device);
      await settle();
      assert.deepEqual(fake.calls.length, 0, 'no room in the cluster: not handed off, not claimed');
      assert.deepEqual(await dueNow(t), [dc.id]);
      // The other process recorded its outcomes: room again, and the row goes out at the next wake.
      await t.deps.store.deliveries.deleteMany(foreign);
      engine.wake();
      await until(() => fake.calls.length > 0);
      assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
    }, 'postgres');
  });

  it('on a shared store a row whose attempt has ended no longer counts as in flight while its outcome is being recorded', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      // The first outcome cannot commit: its row is locked by another transaction, which the recording's DELETE
      // waits for. The row stays leased in the store meanwhile.
      const pool = (t.deps.store as PostgresStore).pool;
      const holder = await pool.connect();
      try {
        await holder.query('BEGIN');
        assert.equal((await holder.query('SELECT id FROM deliveries FOR UPDATE')).rowCount, 1);
        fake.release();
        const blocked = async () => (await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'")).rowCount! > 0;
        await until(blocked);
        // The connector's one slot is free in the cluster as much as here: the next row is handed off at once.
        const next = await publish(t, device);
        await until(() => fake.calls.length === 2);
        assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId, next.event.eventId]);
        assert.deepEqual(await dueNow(t), [], 'queued leased, not due');
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
      }
      await until(async () => (await queueDepth(t)) === 0);
    }, 'postgres');
  });

  it('behind a busy connector fresh rows wait in line, leased, and go out in order as slots free: never due, never claimed', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      const lined = [await publish(t, device), await publish(t, device)];
      assert.equal(await queueDepth(t), 3, 'durable while waiting');
      assert.deepEqual(await dueNow(t), [], 'leased: no claim can take them');
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), [first, ...lined].map((e) => e.event.eventId));
    });
  });

  it('past the line (4 × the per-connector cap) rows queue as due and go out in order; the hand-off resumes once they are gone', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      const sent = [first];
      for (let i = 0; i < 6; i++) sent.push(await publish(t, device));
      assert.deepEqual(await dueNow(t), [dc.id], 'no slot and no place in line: queued as due');
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), sent.map((e) => e.event.eventId));

      fake.hold();
      const later = await publish(t, device);
      await until(() => fake.calls.length > 7);
      assert.deepEqual(fake.eventIds(dc.url).slice(7), [later.event.eventId]);
      assert.deepEqual(await dueNow(t), [], 'handed off again: leased at once');
    });
  });

  it('a connector that starts failing gives its line back to the queue, and the rows are claimed at the pace of a failing one', async () => {
    await withEngine({ perConnectorConcurrency: 2 }, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      engine.start();
      fake.hold();
      fake.queue.push(503, 503);
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push(await publish(t, device));
      await until(() => fake.calls.length === 2);
      assert.deepEqual(await dueNow(t), [], 'two in flight, three in line');
      fake.release();
      fake.hold();
      // The two failures are rescheduled (8 s on); the line is due at once, and claimed two at a time.
      await until(() => fake.calls.length === 4);
      assert.deepEqual(await dueNow(t), [dc.id], 'the third row of the line waits in the queue, due');
      fake.release();
      await until(async () => (await queueDepth(t)) === 2 && fake.calls.length === 5);
      assert.deepEqual(fake.eventIds(dc.url).sort(), sent.map((e) => e.event.eventId).sort(), 'each attempted once');
      assert.equal(await queueDepth(t), 2);
      assert.deepEqual(await dueNow(t), []);
    });
  });

  it('a connector disabled while rows wait in line: none of them is sent', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      await publish(t, device);
      await publish(t, device);
      const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { status: 'USER_DISABLED' } });
      assert.equal(res.status, 200, res.text);
      assert.equal(await queueDepth(t), 0, 'the queue is dropped, the row in flight included');
      fake.release();
      await settle();
      assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId]);
    });
  });

  it('a connector disabled and enabled again while rows wait in line: none of them is sent (no backfill)', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      await publish(t, device);
      await publish(t, device);
      for (const status of ['USER_DISABLED', 'ACTIVE']) {
        const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { status } });
        assert.equal(res.status, 200, res.text);
      }
      fake.release();
      await settle();
      assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId]);
      assert.equal(await queueDepth(t), 0);
    });
  });

  it('rows waiting in line go out with the connector\'s settings as they are when a slot frees', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      const lined = [await publish(t, device), await publish(t, device)];
      const url = 'https://moved.example/hook';
      const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, { body: { httpConfig: { url } } });
      assert.equal(res.status, 200, res.text);
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId], 'in flight before the change: the old URL');
      assert.deepEqual(fake.eventIds(url), lined.map((e) => e.event.eventId));
    });
  });

  it('rows in line when the loop stops stay leased, and go out after the next start', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake, engine } = s;
      const { dc, device, first } = await busyConnector(s);
      const sent = [first];
      sent.push(await publish(t, device), await publish(t, device));
      const stopped = engine.stop();
      fake.release();
      await stopped;
      assert.equal(await queueDepth(t), 2);
      assert.deepEqual(await dueNow(t), [], 'still leased');
      engine.start();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), sent.map((e) => e.event.eventId));
    });
  });
});

describe('happy: sync', () => {
  it('queues the latest event of each type of each device now in the project, filter applied, labels as of now', async () => {
    const { t, fake, engine } = await setup();
    try {
      const devA = await t.createDevice({ labels: { room: 'a1' } });
      const devB = await t.createDevice({ type: 'touch', productNumber: '100110', labels: {} });
      const elsewhere = await t.createProject('elsewhere');
      const devC = await t.createDevice({ projectId: elsewhere });
      const oldTouch = await publish(t, devA, 'touch');
      t.clock.advance(1000);
      const newTouch = await publish(t, devA, 'touch');
      const labels = await publish(t, devA, 'labelsChanged');
      await publish(t, devA, 'batteryStatus', { batteryStatus: { percentage: 50, updateTime: formatTimestamp(nowMicros(t.deps)) } });
      const touchB = await publish(t, devB, 'touch');
      await publish(t, devC, 'touch');
      // The connector exists only now: nothing above was queued for it.
      const dc = await createConnector(t, { events: ['touch', 'labelsChanged'], labels: ['room'] });
      await t.deps.store.devices.updateLabels(devA.id, { room: 'a2' }, nowMicros(t.deps));
      t.clock.advance(13 * HOUR); // enqueue time, not event time, starts the 12-hour window
      const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}:sync`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {});
      assert.equal(await queueDepth(t), 3);
      const report = await engine.runOnce();
      assert.equal(report.acked, 3);
      const calls = fake.callsTo(dc.url);
      assert.deepEqual(calls.map((c) => c.json.event.eventId).sort(), [newTouch.event.eventId, labels.event.eventId, touchB.event.eventId].sort());
      assert.ok(!calls.some((c) => c.json.event.eventId === oldTouch.event.eventId));
      const a = calls.find((c) => c.json.event.eventId === newTouch.event.eventId)!;
      assert.deepEqual(a.json.event, newTouch.event);
      assert.deepEqual(a.json.labels, { room: 'a2' });
    } finally {
      await t.close();
    }
  });

  it('sends an older event only once retention has deleted every later one of its type', async () => {
    const { t, fake, engine } = await setup();
    try {
      const device = await t.createDevice({ type: 'touch', productNumber: '100110', labels: {} });
      const emitAt = async (timestamp: number) => {
        const fresh = (await t.deps.store.devices.get(device.id))!;
        return t.deps.events.transaction((_tx, emit) => emit(fresh, 'touch', { touch: { updateTime: formatTimestamp(timestamp) } }, timestamp));
      };
      const latest = await emitAt(nowMicros(t.deps));
      t.clock.advance(20 * DAY);
      const backdated = await emitAt(latest.timestamp - HOUR * 1000);
      assert.equal(backdated.device.latestEvents.touch?.[1], latest.event.eventId, 'an older event is history only');
      const dc = await createConnector(t, { events: ['touch'] });
      const sync = async () => {
        const seen = fake.eventIds(dc.url).length;
        const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}:sync`);
        assert.equal(res.status, 200);
        await engine.runOnce();
        return fake.eventIds(dc.url).slice(seen);
      };
      assert.deepEqual(await sync(), [latest.event.eventId]);
      // 32 days after the latest was stored, retention (31 days) deletes it; the backdated one, stored 12 days
      // ago, is now the latest touch still stored.
      t.clock.advance(12 * DAY);
      assert.equal(await pruneOnce(t.deps), 1);
      assert.deepEqual(await sync(), [backdated.event.eventId]);
      const res = await t.request('GET', `/v2/projects/${t.projectId}/devices/${device.id}`);
      assert.equal(res.body.reported.touch.updateTime, latest.event.timestamp, '`reported` keeps the latest data');
    } finally {
      await t.close();
    }
  });

  it('is a 400 on a connector that is not ACTIVE', async () => {
    const { t } = await setup();
    try {
      const dc = await createConnector(t, { status: 'USER_DISABLED' });
      const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}:sync`);
      assert.equal(res.status, 400);
    } finally {
      await t.close();
    }
  });
});
