// The connector status machine as the engine drives it (contract §6.6): auto-disable after 5 days of failures,
// a success resetting the failing period, user disabling and deleting, attempts in flight meanwhile.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import {
  HOUR,
  DAY,
  setup,
  createConnector,
  publish,
  until,
  queueDepth,
  getConnector,
  metricsOf,
} from './engine-setup.ts';

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
      const re = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
        body: { status: 'ACTIVE' },
      });
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
      const off = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
        body: { status: 'USER_DISABLED' },
      });
      assert.equal(off.body.status, 'USER_DISABLED');
      assert.equal(await queueDepth(t), 0);
      const during = await publish(t, device);
      assert.equal(await queueDepth(t), 0);
      const on = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
        body: { status: 'ACTIVE' },
      });
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
      await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
        body: { status: 'USER_DISABLED' },
      });
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
