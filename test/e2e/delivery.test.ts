// End to end over real HTTPS: an event published through the API reaches a loopback receiver (test CA) as a
// signed POST with the exact body, through the real dispatcher and the engine.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { jwtVerify } from 'jose';
import { createDeliveryEngine, type DeliveryEngine } from '../../src/delivery/engine.ts';
import { createDispatcher } from '../../src/delivery/dispatcher.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';

let t: TestContext;
let receiver: Receiver;
let dispatcher: Dispatcher;
let engine: DeliveryEngine;

before(async () => {
  t = await createTestContext({
    env: { SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8', SENSORCLOUD_CA_FILE: testTls().caFile },
  });
  receiver = await startReceiver();
  dispatcher = createDispatcher({
    config: t.deps.config,
    clock: t.deps.clock,
    ids: t.deps.ids,
    logger: t.deps.logger,
    timeoutMs: 2000,
  });
  engine = createDeliveryEngine(t.deps, dispatcher);
});
after(async () => {
  await engine.stop();
  await dispatcher.close();
  await receiver.close();
  await t.close();
});

async function createDevice(labels: Record<string, string>) {
  const res = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'temperature', labels } });
  assert.equal(res.status, 200, res.text);
  return res.body.name as string;
}

describe('happy', () => {
  it('delivers a published event as a signed POST with the exact body', async () => {
    const dc = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
      body: {
        type: 'HTTP_PUSH',
        displayName: 'e2e',
        labels: ['name', 'room'],
        httpConfig: { url: receiver.url, headers: { 'X-Api-Key': 'k' }, signatureSecret: 'my-signature-secret' },
      },
    });
    assert.equal(dc.status, 200, dc.text);
    const device = await createDevice({ name: 'Meeting room 4', room: '4' });
    const pub = await t.request('POST', `/v2/${device}:publish`, { body: { temperature: { value: 21.5 } } });
    assert.equal(pub.status, 200, pub.text);
    const report = await engine.runOnce();
    assert.deepEqual(report, { attempted: 1, acked: 1, failed: 0, dropped: 0 });
    const [req] = await receiver.waitFor(1);
    assert.equal(req!.method, 'POST');
    assert.equal(req!.headers['content-type'], 'application/json');
    assert.equal(req!.headers['x-api-key'], 'k');
    assert.match(String(req!.headers['user-agent']), /^SensorCloud-DataConnector\//);
    const history = await t.request('GET', `/v2/${device}/events`);
    const event = history.body.events.find((e: any) => e.eventType === 'temperature');
    const deviceId = device.split('/')[3];
    const expected = JSON.stringify({
      event,
      labels: { name: 'Meeting room 4', room: '4' },
      metadata: { deviceId, projectId: t.projectId, deviceType: 'temperature', productNumber: '102058' },
    });
    assert.equal(req!.body.toString('utf8'), expected);
    const token = String(req!.headers['x-service-signature']);
    const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode('my-signature-secret'), {
      algorithms: ['HS256'],
      clockTolerance: 10 ** 9,
    });
    assert.equal(protectedHeader.alg, 'HS256');
    assert.equal(payload.checksum_sha256, createHash('sha256').update(req!.body).digest('hex'));
    const metrics = await t.request('GET', `/v2/${dc.body.name}:metrics`);
    assert.equal(metrics.body.metrics.successCount, 1);
  });

  it('sends only the event types of the connector filter, with only its label keys', async () => {
    const dc = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
      body: {
        type: 'HTTP_PUSH',
        displayName: 'touch only',
        events: ['touch'],
        labels: ['room'],
        httpConfig: { url: `${receiver.url}/touch-only` },
      },
    });
    assert.equal(dc.status, 200, dc.text);
    const device = await createDevice({ name: 'Lobby', room: '1' });
    for (const body of [{ temperature: { value: 20 } }, { touch: {} }, { networkStatus: {} }]) {
      assert.equal((await t.request('POST', `/v2/${device}:publish`, { body })).status, 200);
    }
    await engine.runOnce();
    const received = receiver.requests.filter((r) => r.path === '/hook/touch-only');
    assert.equal(received.length, 1);
    const body = JSON.parse(received[0]!.body.toString('utf8'));
    assert.equal(body.event.eventType, 'touch');
    assert.deepEqual(body.labels, { room: '1' });
    assert.equal(received[0]!.headers['x-service-signature'], undefined, 'no secret, no signature');
    assert.equal((await t.request('DELETE', `/v2/${dc.body.name}`)).status, 200);
  });

  it('counts a refused answer as a failure and retries it on schedule', async () => {
    const device = await createDevice({});
    receiver.replyOnce({ status: 503, retryAfter: '20' });
    const before = receiver.requests.length;
    await t.request('POST', `/v2/${device}:publish`, { body: { touch: {} } });
    const first = await engine.runOnce();
    assert.deepEqual([first.attempted, first.failed], [1, 1]);
    t.clock.advance(20_000);
    const second = await engine.runOnce();
    assert.deepEqual([second.attempted, second.acked], [1, 1]);
    const got = await receiver.waitFor(before + 2);
    assert.equal(got[before]!.body.toString(), got[before + 1]!.body.toString(), 'the same bytes on every attempt');
  });
});

describe('errors', () => {
  it('an untrusted certificate is a failed attempt, visible in errorCount', async () => {
    const bad = await startReceiver({ cert: 'self-signed' });
    try {
      const dc = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
        body: { type: 'HTTP_PUSH', httpConfig: { url: bad.url } },
      });
      const device = await createDevice({});
      await t.request('POST', `/v2/${device}:publish`, { body: { touch: {} } });
      const report = await engine.runOnce();
      assert.ok(report.failed >= 1);
      const m = await t.request('GET', `/v2/${dc.body.name}:metrics`);
      assert.equal(m.body.metrics.errorCount, 1);
      assert.equal(bad.requests.length, 0);
      await t.request('DELETE', `/v2/${dc.body.name}`);
    } finally {
      await bad.close();
    }
  });
});
