// GET …/dataconnectors/{dc}:metricsHistory: the per-minute series behind :metrics, under the same rules
// (dataconnector.read, 404 for unknown or unreadable, the error body), for the console's delivery-health chart.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bucketStartOf } from '../../src/delivery/metrics.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

let t: TestContext;
let base: string;
before(async () => {
  t = await createTestContext();
  base = `/v2/projects/${t.projectId}/dataconnectors`;
});
after(() => t.close());

async function createConnector(): Promise<string> {
  const res = await t.request('POST', base, {
    body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/hook' } },
  });
  assert.equal(res.status, 200, res.text);
  return res.body.name.split('/')[3];
}

describe('happy', () => {
  it('lists the minutes with attempts, oldest first, and adds up to :metrics', async () => {
    const dc = await createConnector();
    const now = nowMicros(t.deps);
    const minute = 60_000_000;
    // Attempts 4 h ago (outside the window), 2 h ago and now, written as the delivery engine writes them.
    await t.deps.store.connectorMetrics.add(dc, bucketStartOf(now - 240 * minute), 7, 7, new Map([['100', 7]]));
    await t.deps.store.connectorMetrics.add(dc, bucketStartOf(now - 120 * minute), 3, 1, new Map([['100', 3]]));
    await t.deps.store.connectorMetrics.add(dc, bucketStartOf(now), 2, 0, new Map([['100', 2]]));
    const res = await t.request('GET', `${base}/${dc}:metricsHistory`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      bucketDuration: '60s',
      buckets: [
        { startTime: formatTimestamp(bucketStartOf(now - 120 * minute)), successCount: 3, errorCount: 1 },
        { startTime: formatTimestamp(bucketStartOf(now)), successCount: 2, errorCount: 0 },
      ],
    });
    const metrics = await t.request('GET', `${base}/${dc}:metrics`);
    assert.equal(metrics.body.metrics.successCount, 5);
    assert.equal(metrics.body.metrics.errorCount, 1);
  });

  it('a connector without attempts has an empty series; the encoded colon works', async () => {
    const dc = await createConnector();
    const res = await t.request('GET', `${base}/${dc}%3AmetricsHistory`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { bucketDuration: '60s', buckets: [] });
  });

  it('a project user may read it', async () => {
    const dc = await createConnector();
    const user = await t.createServiceAccount({ roles: ['roles/project.user'] });
    assert.equal((await t.request('GET', `${base}/${dc}:metricsHistory`, { auth: user.auth })).status, 200);
  });
});

describe('sad', () => {
  it('401 without credentials, 404 for an unknown connector or an unreadable project', async () => {
    const dc = await createConnector();
    const anonymous = await t.request('GET', `${base}/${dc}:metricsHistory`, { auth: null });
    assert.equal(anonymous.status, 401);
    assert.deepEqual(Object.keys(anonymous.body), ['error', 'code', 'help']);
    assert.equal((await t.request('GET', `${base}/cvq2b1b0l4l9s3f2a9g0:metricsHistory`)).status, 404);
    const other = await t.createProject('other');
    const outsider = await t.createServiceAccount({
      projectId: other,
      roles: ['roles/project.admin'],
      memberOf: other,
    });
    assert.equal((await t.request('GET', `${base}/${dc}:metricsHistory`, { auth: outsider.auth })).status, 404);
  });

  it('only GET: another method is a 404', async () => {
    const dc = await createConnector();
    assert.equal((await t.request('POST', `${base}/${dc}:metricsHistory`)).status, 404);
  });
});
