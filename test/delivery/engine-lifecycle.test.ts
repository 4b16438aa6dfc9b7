// The engine's background loop: woken by committed events, stopped cleanly, and a row leased by a process that died
// sent again after a start.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createDeliveryEngine } from '../../src/delivery/engine.ts';
import { setup, createConnector, publish, until, settle, queueDepth } from './engine-setup.ts';

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
