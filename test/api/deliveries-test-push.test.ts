// `:test` (extensions §X2) through the API and a running engine, to a loopback HTTPS receiver (test CA): the example
// event of the synthetic device arrives signed and with the trigger header, in any connector status; a receiver's
// error and a refused port are reported as they are; the push is logged as a TEST delivery and is not in :metrics.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { jwtVerify } from 'jose';
import { createDeliveryEngine, type DeliveryEngine } from '../../src/delivery/engine.ts';
import { createDispatcher } from '../../src/delivery/dispatcher.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { EVENT_TYPES } from '../../src/domain/device-types.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';

let t: TestContext;
let receiver: Receiver;
let dispatcher: Dispatcher;
let engine: DeliveryEngine;
let base: string;

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
  // A test push goes through the running engine's own attempt path.
  engine.start();
  base = `/v2/projects/${t.projectId}/dataconnectors`;
});
after(async () => {
  await engine.stop();
  await dispatcher.close();
  await receiver.close();
  await t.close();
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

async function connector(body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', base, { body: { type: 'HTTP_PUSH', ...body } });
  assert.equal(res.status, 200, res.text);
  return res.body.name;
}

async function test(name: string, body: unknown = {}) {
  const res = await t.request('POST', `/v2/${name}:test`, { body });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.body), ['delivery']);
  return res.body.delivery;
}

describe('happy', () => {
  it('pushes the example touch event of the synthetic device at once, signed, with the trigger header', async () => {
    const name = await connector({
      labels: ['name', 'room'],
      events: ['temperature'],
      httpConfig: { url: `${receiver.url}/happy`, signatureSecret: 'test-secret', headers: { 'X-Api-Key': 'k' } },
    });
    const d = await test(name);
    const [req] = receiver.requests.filter((r) => r.path === '/hook/happy');
    assert.ok(req, 'the push arrived before the answer');
    assert.equal(req.headers['x-sensorcloud-delivery-trigger'], 'TEST');
    assert.equal(req.headers['x-api-key'], 'k');
    const { payload } = await jwtVerify(
      String(req.headers['x-service-signature']),
      new TextEncoder().encode('test-secret'),
      {
        algorithms: ['HS256'],
        clockTolerance: 10 ** 9,
      },
    );
    assert.equal(payload.checksum_sha256, createHash('sha256').update(req.body).digest('hex'));
    const body = JSON.parse(req.body.toString('utf8'));
    assert.deepEqual(Object.keys(body), ['event', 'labels', 'metadata']);
    assert.deepEqual(Object.keys(body.event), ['eventId', 'targetName', 'eventType', 'data', 'timestamp']);
    assert.equal(body.event.eventType, 'touch', "any event type, whatever the connector's filter");
    assert.equal(body.event.targetName, `projects/${t.projectId}/devices/sensorcloud-test-device`);
    assert.deepEqual(body.event.data, { touch: { updateTime: body.event.timestamp } });
    assert.deepEqual(body.labels, { name: 'Sensor Cloud test device' });
    assert.deepEqual(body.metadata, {
      deviceId: 'sensorcloud-test-device',
      projectId: t.projectId,
      deviceType: 'touch',
      productNumber: '100110',
    });

    assert.match(d.name, new RegExp(`^${name}/deliveries/[1-9][0-9]*$`));
    assert.deepEqual(
      [d.eventId, d.eventType, d.targetName, d.trigger, d.state, d.attemptCount, d.nextAttemptTime],
      [body.event.eventId, 'touch', body.event.targetName, 'TEST', 'DELIVERED', 1, ''],
    );
    assert.equal(d.attempts.length, 1);
    assert.deepEqual(
      { ...d.attempts[0], duration: undefined },
      {
        attemptTime: d.createTime,
        duration: undefined,
        outcome: 'SUCCESS',
        httpStatus: 200,
        responseBody: '',
        responseBodyTruncated: false,
        error: '',
      },
    );
    // Logged like any other delivery, listed with trigger=TEST; not a push of the connector's metrics.
    assert.deepEqual((await t.request('GET', `/v2/${d.name}`)).body, d);
    const listed = await t.request('GET', `/v2/${name}/deliveries?trigger=TEST`);
    assert.deepEqual(
      listed.body.deliveries.map((x: any) => x.name),
      [d.name],
    );
    const metrics = await t.request('GET', `/v2/${name}:metrics`);
    assert.deepEqual(metrics.body.metrics, { successCount: 0, errorCount: 0, latency99p: '0.000s' });
  });

  it('sends a well-formed example event of every event type, even from a disabled connector', async () => {
    const name = await connector({ status: 'USER_DISABLED', httpConfig: { url: `${receiver.url}/types` } });
    for (const eventType of EVENT_TYPES) {
      const d = await test(name, { eventType });
      assert.deepEqual([d.eventType, d.state], [eventType, 'DELIVERED']);
      const req = receiver.requests.filter((r) => r.path === '/hook/types').pop()!;
      const { event } = JSON.parse(req.body.toString('utf8'));
      assert.equal(event.eventType, eventType);
      if (eventType === 'labelsChanged') {
        assert.deepEqual(event.data, { added: { name: 'Sensor Cloud test device' }, modified: {}, removed: [] });
      } else {
        assert.deepEqual(Object.keys(event.data), [eventType]);
        assert.equal(event.data[eventType].updateTime, event.timestamp);
      }
    }
    const status = await t.request('GET', `/v2/${name}`);
    assert.equal(status.body.status, 'USER_DISABLED');
  });
});

describe('failures are reported as they are', () => {
  it('an HTTP error: FAILED with the status and the start of the answer', async () => {
    const name = await connector({ httpConfig: { url: `${receiver.url}/failing` } });
    receiver.reply((r) => (r.path === '/hook/failing' ? { status: 500, body: 'x'.repeat(2000) } : {}));
    try {
      const d = await test(name, { eventType: 'temperature' });
      assert.deepEqual([d.state, d.attemptCount, d.nextAttemptTime], ['FAILED', 1, '']);
      const [a] = d.attempts;
      assert.deepEqual(
        [a.outcome, a.httpStatus, a.responseBody, a.responseBodyTruncated, a.error],
        ['HTTP_ERROR', 500, 'x'.repeat(1024), true, 'HTTP 500'],
      );
      assert.equal((await t.request('GET', `/v2/${name}/deliveries?state=FAILED`)).body.deliveries.length, 1);
      const metrics = await t.request('GET', `/v2/${name}:metrics`);
      assert.equal(metrics.body.metrics.errorCount, 0, 'a test push is not counted in :metrics');
      const connectorNow = await t.request('GET', `/v2/${name}`);
      assert.equal(connectorNow.body.status, 'ACTIVE');
    } finally {
      receiver.reply({});
    }
  });

  it('a refused connection: FAILED, CONNECTION_REFUSED, no HTTP status', async () => {
    const port = await closedPort();
    const name = await connector({ httpConfig: { url: `https://127.0.0.1:${port}/nobody` } });
    const d = await test(name);
    assert.equal(d.state, 'FAILED');
    const [a] = d.attempts;
    assert.deepEqual([a.outcome, a.httpStatus, a.responseBody], ['CONNECTION_REFUSED', 0, '']);
    assert.notEqual(a.error, '');
    assert.doesNotMatch(a.error, /\n/);
  });
});

describe('errors', () => {
  it('400 for an unknown event type, naming the valid ones; 404 for an unknown connector', async () => {
    const name = await connector({ httpConfig: { url: `${receiver.url}/errors` } });
    const res = await t.request('POST', `/v2/${name}:test`, { body: { eventType: 'ping' } });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error, /eventType.*"ping".*touch, temperature/);
    const none = await t.request('POST', `${base}/cvq2b1b0l4l9s3f2a9g0:test`, { body: {} });
    assert.equal(none.status, 404, none.text);
  });

  it('GET /metrics counts the test pushes', async () => {
    const res = await t.request('GET', '/metrics', { auth: null });
    const m = /^delivery_recovery_requests_total\{kind="test"\} (\d+)$/m.exec(res.text);
    assert.equal(Number(m?.[1]), 3 + EVENT_TYPES.length);
  });
});
