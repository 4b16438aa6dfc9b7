// A connector's delivery controls at work in the engine (extensions §X4), on the test store (SQLite or PostgreSQL):
// the pause keeps the queue and sends it, in order, on resume, while the 12-hour expiry still applies; maxConcurrency
// bounds the pushes open at once; maxRate spaces attempts' starts (pacing.ts), every event still arriving. Several
// processes sharing PostgreSQL are in test/cluster/controls.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptOutcome, PushTarget } from '../../src/delivery/types.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { FakeDispatcher } from '../helpers/fake-dispatcher.ts';
import { sleep } from '../helpers/until.ts';
import { createDeliveryEngine } from '../../src/delivery/engine.ts';
import { createConnector, dueNow, HOUR, publish, queueDepth, settle, until, withEngine } from './engine-setup.ts';

const patch = async (t: TestContext, name: string, body: unknown) => {
  const res = await t.request('PATCH', `/v2/${name}`, { body });
  assert.equal(res.status, 200, res.text);
  return res.body;
};

describe('pause', () => {
  it('keeps every event queued and pushes none; resume sends them in order, then later events after them', async () => {
    await withEngine(
      {},
      async ({ t, fake, engine }) => {
        const dc = await createConnector(t, { deliveryConfig: { paused: true } });
        const device = await t.createDevice();
        engine.start();
        const queued = [];
        for (let i = 0; i < 5; i++) queued.push((await publish(t, device)).event.eventId);
        await settle();
        engine.wake();
        await settle();
        assert.equal(fake.calls.length, 0, 'nothing pushed while paused');
        assert.equal(await queueDepth(t), 5);
        assert.deepEqual(await dueNow(t), [dc.id], 'every row waits due in the queue');
        await patch(t, dc.name, { deliveryConfig: { paused: false } });
        engine.wake();
        const later = (await publish(t, device)).event.eventId;
        await until(() => fake.calls.length >= 6);
        assert.deepEqual(fake.eventIds(dc.url), [...queued, later], 'in order of due time, the later event last');
        await until(async () => (await queueDepth(t)) === 0);
        assert.equal(await queueDepth(t), 0);
      },
      'any',
    );
  });

  it('pausing a running connector stops its pushes at once (rows in line go back to the queue); other connectors go on', async () => {
    await withEngine(
      {},
      async ({ t, fake, engine }) => {
        const dc = await createConnector(t);
        const other = await createConnector(t);
        const device = await t.createDevice();
        engine.start();
        await publish(t, device);
        await until(() => fake.callsTo(dc.url).length === 1);
        await patch(t, dc.name, { deliveryConfig: { paused: true } });
        const held = [];
        for (let i = 0; i < 3; i++) held.push((await publish(t, device)).event.eventId);
        await until(() => fake.callsTo(other.url).length === 4);
        await settle();
        assert.equal(fake.callsTo(dc.url).length, 1, 'the paused connector got nothing more');
        assert.equal(fake.callsTo(other.url).length, 4);
        await patch(t, dc.name, { deliveryConfig: { paused: false } });
        engine.wake();
        await until(() => fake.callsTo(dc.url).length === 4);
        assert.deepEqual(fake.eventIds(dc.url).slice(1), held);
      },
      'any',
    );
  });

  it('the 12-hour expiry still drops what a paused connector kept, and the delivery log says EXPIRED', async () => {
    const { t, fake, engine } = await (async () => {
      const t = await createTestContext();
      const fake = new FakeDispatcher();
      return { t, fake, engine: createDeliveryEngine(t.deps, fake) };
    })();
    try {
      const dc = await createConnector(t, { deliveryConfig: { paused: true } });
      const device = await t.createDevice();
      const old = (await publish(t, device)).event.eventId;
      t.clock.advance(11 * HOUR);
      const fresh = (await publish(t, device)).event.eventId;
      assert.equal((await engine.runOnce()).attempted, 0);
      t.clock.advance(HOUR + 1000);
      const report = await engine.runOnce();
      assert.equal(report.attempted, 0);
      assert.equal(report.dropped, 1, 'the event queued over 12 hours ago');
      const log = await t.request('GET', `/v2/${dc.name}/deliveries`);
      const states = Object.fromEntries(log.body.deliveries.map((d: any) => [d.eventId, d.state]));
      assert.deepEqual(states, { [old]: 'EXPIRED', [fresh]: 'PENDING' });
      await patch(t, dc.name, { deliveryConfig: { paused: false } });
      assert.equal((await engine.runOnce()).acked, 1);
      assert.deepEqual(fake.eventIds(dc.url), [fresh]);
    } finally {
      await t.close();
    }
  });
});

/** A dispatcher that answers after `ms` of real time and counts the pushes open at once. */
class SlowDispatcher extends FakeDispatcher {
  open = 0;
  mostOpen = 0;
  constructor(private readonly ms: number) {
    super();
  }
  override async send(target: PushTarget, body: Buffer): Promise<AttemptOutcome> {
    this.open++;
    this.mostOpen = Math.max(this.mostOpen, this.open);
    try {
      await sleep(this.ms);
      return await super.send(target, body);
    } finally {
      this.open--;
    }
  }
}

describe('maxConcurrency', () => {
  for (const store of ['sqlite', 'postgres'] as const) {
    it(`never has more than maxConcurrency pushes open, handed off or claimed, and delivers every event (${store})`, async () => {
      const t = await createTestContext(
        store === 'postgres' ? { store: (await import('../helpers/store.ts')).createPostgresTestStore } : {},
      );
      const slow = new SlowDispatcher(30);
      const engine = createDeliveryEngine(t.deps, slow, { pollIntervalMs: 20 });
      try {
        const dc = await createConnector(t, { deliveryConfig: { maxConcurrency: 2 } });
        const device = await t.createDevice();
        engine.start();
        for (let i = 0; i < 12; i++) await publish(t, device);
        await until(() => slow.calls.length === 12);
        await until(async () => (await queueDepth(t)) === 0);
        assert.equal(slow.callsTo(dc.url).length, 12);
        assert.equal(slow.mostOpen, 2);
        // Raised: up to the new limit at once.
        await patch(t, dc.name, { deliveryConfig: { maxConcurrency: 5 } });
        slow.mostOpen = 0;
        for (let i = 0; i < 12; i++) await publish(t, device);
        await until(() => slow.calls.length === 24);
        assert.ok(slow.mostOpen > 2 && slow.mostOpen <= 5, `at most 5 open, more than 2: ${slow.mostOpen}`);
      } finally {
        await engine.stop();
        await t.close();
      }
    });
  }
});

/** The test context's clock reading real time: pacing waits real milliseconds. */
class RealTimeClock extends FakeClock {
  override now(): number {
    return Date.now();
  }
}

/** The most starts (ms) in any window of `windowMs` beginning at a start. */
function mostInWindow(starts: number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[j]! < sorted[i]! - windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('maxRate', () => {
  it('maxRate 5: never more than ⌈5⌉ + 1 attempts start in any second, spaced 200 ms apart; every event arrives', async () => {
    const clock = new RealTimeClock();
    const t = await createTestContext({ clock });
    const fake = new FakeDispatcher({ clock });
    const engine = createDeliveryEngine(t.deps, fake, { pollIntervalMs: 50 });
    try {
      const dc = await createConnector(t, { deliveryConfig: { maxRate: 5 } });
      const other = await createConnector(t);
      const device = await t.createDevice();
      engine.start();
      const sent = [];
      for (let i = 0; i < 12; i++) sent.push((await publish(t, device)).event.eventId);
      // The other connector is not slowed by this one's rate.
      await until(() => fake.callsTo(other.url).length === 12);
      assert.equal(fake.callsTo(other.url).length, 12);
      assert.ok(fake.callsTo(dc.url).length <= 3, 'the paced connector has only begun');
      await waitFor(() => fake.callsTo(dc.url).length === 12, 6000);
      const starts = fake.callsTo(dc.url).map((c) => c.at);
      assert.deepEqual(fake.eventIds(dc.url), sent, 'in order');
      // The start times given are 200 ms apart, so that any second holds at most ⌈5⌉ + 1 of them (pacing.test.ts and
      // the shared store contract check them exactly). A push begins a little after its time, never before: the first
      // after its claim's commit, any of them after a timer that fires late on a busy machine. So the pushes seen here
      // hold that bound give or take one, and take at least the 2.2 s the spacing makes, give or take the first's delay.
      const most = mostInWindow(starts, 1000);
      assert.ok(most <= 7, `at most 6 (+1 for a late timer) in a second: ${most}`);
      const span = starts[starts.length - 1]! - starts[0]!;
      assert.ok(span >= 11 * 200 - 300, `12 starts over ${span.toFixed(0)} ms`);
      // Raised to 10,000 a second: the rest goes at once.
      await patch(t, dc.name, { deliveryConfig: { maxRate: 10_000 } });
      const before = Date.now();
      for (let i = 0; i < 20; i++) await publish(t, device);
      await waitFor(() => fake.callsTo(dc.url).length === 32, 5000);
      assert.ok(Date.now() - before < 2000, 'no longer held back');
    } finally {
      await engine.stop();
      await t.close();
    }
  });
});

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond() && Date.now() < end) await sleep(10);
}
