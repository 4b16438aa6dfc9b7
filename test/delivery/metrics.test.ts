// Connector metrics (contract §6.8): counts per attempt over a sliding 3-hour window, p99 by nearest rank from
// a log-bucketed histogram (relative error ≤ 1 %), and the Prometheus export.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createDeliveryEngine } from '../../src/delivery/engine.ts';
import {
  addToHistogram,
  attemptCounterDeltas,
  HISTOGRAM_RELATIVE_ERROR,
  histogramKey,
  histogramValue,
  nearestRank,
  type AttemptSample,
  type Histogram,
} from '../../src/delivery/metrics.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { FakeDispatcher } from '../helpers/fake-dispatcher.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

async function publish(t: TestContext, device: DeviceRecord) {
  const ts = nowMicros(t.deps);
  return t.deps.events.transaction((_tx, emit) =>
    emit(device, 'touch', { touch: { updateTime: formatTimestamp(ts) } }, ts),
  );
}

async function connector(t: TestContext): Promise<string> {
  const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://m.example/hook' } },
  });
  assert.equal(res.status, 200, res.text);
  return res.body.name.split('/')[3];
}

describe('happy: Prometheus counter increments', () => {
  it('counts attempts per outcome and fills the cumulative duration buckets, a bound included in its bucket', () => {
    const sample = (reason: AttemptSample['reason'], responseTimeMs: number): AttemptSample => ({
      connectorId: 'c',
      time: 0,
      reason,
      ok: reason === 'ack',
      responseTimeMs,
    });
    // 5 ms sits exactly on the first bound; 20 s is above the last one; a negative time counts as 0.
    const into = attemptCounterDeltas(
      [sample('ack', 5), sample('ack', 30), sample('http_status', 20_000), sample('timeout', -1)],
      { 'deliveries_total{outcome="acked"}': 2 },
    );
    assert.deepEqual(into, {
      'deliveries_total{outcome="acked"}': 2,
      'delivery_attempts_total{outcome="ack"}': 2,
      'delivery_attempts_total{outcome="http_status"}': 1,
      'delivery_attempts_total{outcome="timeout"}': 1,
      'delivery_duration_seconds_bucket{le="0.005"}': 2,
      'delivery_duration_seconds_bucket{le="0.01"}': 2,
      'delivery_duration_seconds_bucket{le="0.025"}': 2,
      'delivery_duration_seconds_bucket{le="0.05"}': 3,
      'delivery_duration_seconds_bucket{le="0.1"}': 3,
      'delivery_duration_seconds_bucket{le="0.25"}': 3,
      'delivery_duration_seconds_bucket{le="0.5"}': 3,
      'delivery_duration_seconds_bucket{le="1"}': 3,
      'delivery_duration_seconds_bucket{le="2.5"}': 3,
      'delivery_duration_seconds_bucket{le="5"}': 3,
      'delivery_duration_seconds_bucket{le="10"}': 3,
      'delivery_duration_seconds_bucket{le="+Inf"}': 4,
      delivery_duration_seconds_sum: 20.035,
      delivery_duration_seconds_count: 4,
    });
    // Added to what is already there.
    attemptCounterDeltas([sample('ack', 1)], into);
    assert.equal(into['delivery_duration_seconds_bucket{le="0.005"}'], 3);
    assert.equal(into['delivery_attempts_total{outcome="ack"}'], 3);
    assert.deepEqual(attemptCounterDeltas([]), {});
  });
});

describe('happy: histogram', () => {
  it('represents every value within the relative error bound', () => {
    for (let v = 1; v < 20_000_000; v = Math.ceil(v * 1.37)) {
      const rep = histogramValue(histogramKey(v));
      assert.ok(Math.abs(rep - v) / v <= HISTOGRAM_RELATIVE_ERROR + 1e-12, `value ${v} → ${rep}`);
    }
    assert.equal(histogramValue(histogramKey(0)), 0);
  });

  it('takes the nearest rank: index ⌈0.99·N⌉−1 in ascending order', () => {
    const hist: Histogram = new Map();
    const values = Array.from({ length: 100 }, (_, i) => (i + 1) * 1000);
    for (const v of values) addToHistogram(hist, histogramKey(v), 1);
    const p99 = nearestRank(hist, 0.99)!;
    assert.ok(Math.abs(p99 - 99_000) / 99_000 <= HISTOGRAM_RELATIVE_ERROR);
    assert.equal(nearestRank(new Map(), 0.99), null);
    assert.equal(nearestRank(new Map([[histogramKey(5000), 0]]), 0.99), null);
    const one = new Map([[histogramKey(5000), 1]]);
    assert.ok(Math.abs(nearestRank(one, 0.99)! - 5000) <= 50);
  });
});

describe('happy: :metrics', () => {
  it('counts attempts, reports p99 of successes and slides over 3 hours', async () => {
    const t = await createTestContext();
    const fake = new FakeDispatcher();
    const engine = createDeliveryEngine(t.deps, fake);
    try {
      const dc = await connector(t);
      const url = `/v2/projects/${t.projectId}/dataconnectors/${dc}:metrics`;
      assert.deepEqual((await t.request('GET', url)).body, {
        metrics: { successCount: 0, errorCount: 0, latency99p: '0.000s' },
      });
      const device = await t.createDevice();
      // 200 successes with response times 1..200 ms: nearest rank p99 is the 198th = 198 ms.
      for (let i = 1; i <= 200; i++) {
        await publish(t, device);
        fake.queue.push({ ok: true, status: 200, responseTimeMs: i });
      }
      await engine.runOnce();
      // Three failures, one of them very slow (failures do not count in the latency).
      fake.answer = 500;
      fake.responseTimeMs = 9000;
      for (let i = 0; i < 3; i++) await publish(t, device);
      await engine.runOnce();
      const m = (await t.request('GET', url)).body.metrics;
      assert.equal(m.successCount, 200);
      assert.equal(m.errorCount, 3);
      const p99 = Number(m.latency99p.replace(/s$/, ''));
      assert.match(m.latency99p, /^\d+\.\d{3}s$/);
      assert.ok(Math.abs(p99 - 0.198) <= 0.198 * HISTOGRAM_RELATIVE_ERROR + 0.0005, m.latency99p);

      // The successes leave the window 3 h (plus up to one bucket) later; the failures, retried, keep coming.
      fake.answer = 200;
      fake.responseTimeMs = 0;
      t.clock.advance(3 * HOUR + MINUTE);
      const later = (await t.request('GET', url)).body.metrics;
      assert.deepEqual(later, { successCount: 0, errorCount: 0, latency99p: '0.000s' });
      await engine.runOnce(); // the three retries now succeed in 0 s
      const last = (await t.request('GET', url)).body.metrics;
      assert.deepEqual(last, { successCount: 3, errorCount: 0, latency99p: '0.000s' });
    } finally {
      await t.close();
    }
  });

  it('prunes old buckets and keeps metrics across a PATCH', async () => {
    const t = await createTestContext();
    const fake = new FakeDispatcher();
    const engine = createDeliveryEngine(t.deps, fake);
    try {
      const dc = await connector(t);
      await publish(t, await t.createDevice());
      await engine.runOnce();
      await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc}`, {
        body: { displayName: 'renamed' },
      });
      assert.equal(
        (await t.request('GET', `/v2/projects/${t.projectId}/dataconnectors/${dc}:metrics`)).body.metrics.successCount,
        1,
      );
      t.clock.advance(4 * HOUR);
      await engine.runOnce();
      assert.deepEqual(await t.deps.store.connectorMetrics.listSince(dc, 0), []);
    } finally {
      await t.close();
    }
  });
});

describe('happy: Prometheus', () => {
  it('exports counters, the duration histogram, the queue depth and connectors by status without auth', async () => {
    const t = await createTestContext();
    const fake = new FakeDispatcher({ responseTimeMs: 30 });
    const engine = createDeliveryEngine(t.deps, fake);
    try {
      await connector(t);
      const device = await t.createDevice();
      await publish(t, device);
      fake.queue.push(503);
      await publish(t, device);
      await engine.runOnce();
      const res = await t.request('GET', '/metrics', { auth: null });
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      const text = res.text;
      assert.match(text, /^# TYPE delivery_attempts_total counter$/m);
      assert.match(text, /^delivery_attempts_total\{outcome="ack"\} 1$/m);
      assert.match(text, /^delivery_attempts_total\{outcome="http_status"\} 1$/m);
      assert.match(text, /^deliveries_total\{outcome="acked"\} 1$/m);
      assert.match(text, /^deliveries_total\{outcome="dropped"\} 0$/m);
      assert.match(text, /^delivery_duration_seconds_bucket\{le="0\.025"\} 0$/m);
      assert.match(text, /^delivery_duration_seconds_bucket\{le="0\.05"\} 2$/m);
      assert.match(text, /^delivery_duration_seconds_bucket\{le="\+Inf"\} 2$/m);
      assert.match(text, /^delivery_duration_seconds_count 2$/m);
      assert.match(text, /^delivery_duration_seconds_sum 0\.06$/m);
      assert.match(text, /^delivery_queue_depth 1$/m);
      assert.match(text, /^data_connectors\{status="ACTIVE"\} 1$/m);
      assert.match(text, /^data_connectors\{status="SYSTEM_DISABLED"\} 0$/m);
    } finally {
      await t.close();
    }
  });
});
