// When the engine attempts a row again (contract §6.4-§6.5): the retry schedule, response time and Retry-After, the
// 12-hour drop, and a row whose lease is half over when its attempt would start (a paused process).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HOUR, setup, createConnector, publish, queueDepth, metricsOf } from './engine-setup.ts';

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
