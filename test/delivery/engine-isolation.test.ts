// Isolation between connectors, so that a dead endpoint never slows the others: per-connector and overall attempt
// caps, failing and suspect connectors probed with a few slots, the fair share, and the bound on failing ones together.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeliveryEngine } from '../../src/delivery/engine.ts';
import { setup, createConnector, publish, until, settle } from './engine-setup.ts';

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
    const engine = createDeliveryEngine(t.deps, fake, {
      perConnectorConcurrency: 8,
      failingConnectorConcurrency: 2,
      totalConcurrency: 100,
    });
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
      assert.ok(
        fake.callsTo(dead.url).length >= 3 + 8,
        `full share after a success (${fake.callsTo(dead.url).length})`,
      );
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
    const engine = createDeliveryEngine(t.deps, fake, {
      perConnectorConcurrency: 8,
      failingConnectorConcurrency: 2,
      suspectAfterMs: 1000,
    });
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
    const engine = createDeliveryEngine(t.deps, fake, {
      perConnectorConcurrency: 8,
      failingConnectorConcurrency: 1,
      totalConcurrency: 8,
    });
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
    const engine = createDeliveryEngine(t.deps, fake, {
      perConnectorConcurrency: 8,
      failingConnectorConcurrency: 1,
      totalConcurrency: 8,
    });
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
      assert.equal(
        fake.callsTo(live.url).length,
        4,
        'the healthy connector delivers every event while the dead ones hang',
      );
      const probes = fake.calls.slice(lastDead).filter((c) => c.target.url !== live.url).length;
      assert.equal(probes, 4, 'four probes in flight (half of 8), not one per failing connector');
      const sent = fake.calls.slice(lastDead);
      assert.ok(
        sent.every((c) => (c.target.probe === true) === (c.target.url !== live.url)),
        'the dispatcher is told which attempts are probes',
      );
      fake.release();
      await run;
    } finally {
      await t.close();
    }
  });
});
