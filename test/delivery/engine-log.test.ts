// The delivery log as the engine writes it (extensions §X1, §X2), with the fake clock and the real HTTPS receiver
// through the in-process dispatcher: each attempt with its status, class, answer snippet and the computed next
// attempt; the 12-hour drop and dropped queues; the trigger header; the one attempt of pushOnce; pruning within the
// retention and the per-connector cap; a deleted connector's log; and the log turned off.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { jwtVerify } from 'jose';
import { pino } from 'pino';
import { createDispatcher } from '../../src/delivery/dispatcher.ts';
import { createDeliveryEngine, type DeliveryEngine, type EngineOptions } from '../../src/delivery/engine.ts';
import { DeliveryEngineNotRunning } from '../../src/delivery/handoff.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { ApiError } from '../../src/domain/errors.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { Logger } from '../../src/runtime/logger.ts';
import type { DeliveryLogRecord } from '../../src/store/contract/delivery-log.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { FakeDispatcher } from '../helpers/fake-dispatcher.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';
import { DAY, HOUR, createConnector, publish, queueDepth, metricsOf } from './engine-setup.ts';

const SECOND = 1000;
/** Receivers on loopback are allowed; the test CA is trusted. */
const ENV = { SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8', SENSORCLOUD_CA_FILE: testTls().caFile };
/** The dispatcher's deadline here: a hanging receiver times out in a second. */
const TIMEOUT_MS = 1000;

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  server.close();
  await once(server, 'close');
  return port;
}

interface Rig {
  t: TestContext;
  rx: Receiver;
  dispatchers: Dispatcher[];
  engines: DeliveryEngine[];
  /** An engine on the real transport (`allow`: the private ranges its guard lets through). */
  engine(options?: EngineOptions, allow?: string[], logger?: Logger): DeliveryEngine;
  close(): Promise<void>;
}

/**
 * A context whose connectors may point at loopback, and a receiver that answers by path: `/hook/fail` 500 with a
 * body, `/hook/hang` never, anything else 200 with "ok".
 */
async function rig(env: Record<string, string> = {}): Promise<Rig> {
  const t = await createTestContext({ env: { ...ENV, ...env } });
  const rx = await startReceiver({
    reply: (req) =>
      req.path === '/hook/fail'
        ? { status: 500, body: 'failed here' }
        : req.path === '/hook/hang'
          ? { hang: true }
          : { status: 200, body: 'ok' },
  });
  const dispatchers: Dispatcher[] = [];
  const engines: DeliveryEngine[] = [];
  return {
    t,
    rx,
    dispatchers,
    engines,
    engine(options = {}, allow = ['127.0.0.0/8'], logger = t.deps.logger) {
      const dispatcher = createDispatcher({
        config: { caFile: testTls().caFile, allowPrivateEndpoints: allow },
        clock: t.clock,
        ids: t.deps.ids,
        logger: t.deps.logger,
        extraCaFile: null,
        timeoutMs: TIMEOUT_MS,
      });
      dispatchers.push(dispatcher);
      const engine = createDeliveryEngine({ ...t.deps, logger }, dispatcher, { pollIntervalMs: 60_000, ...options });
      engines.push(engine);
      return engine;
    },
    async close() {
      for (const e of engines) await e.stop();
      for (const d of dispatchers) await d.close();
      await rx.close();
      await t.close();
    },
  };
}

const micros = (ms: number) => Math.floor(ms * 1000);

/** The connector's deliveries, newest first, as the log answers them now. */
const logOf = (t: TestContext, connectorId: string): Promise<DeliveryLogRecord[]> =>
  t.deps.store.deliveryLog.list({ connectorIds: [connectorId] }, 1000, nowMicros(t.deps));

/** The connector's only delivery, with its attempts. */
async function onlyDelivery(t: TestContext, connectorId: string): Promise<DeliveryLogRecord> {
  const list = await logOf(t, connectorId);
  assert.equal(list.length, 1, JSON.stringify(list));
  const one = await t.deps.store.deliveryLog.get(connectorId, list[0]!.id, nowMicros(t.deps));
  assert.ok(one);
  return one;
}

describe('every attempt in the log', () => {
  let r: Rig;
  before(async () => {
    r = await rig();
  });
  after(() => r.close());

  it('a receiver failing twice then succeeding: three attempts with their statuses and next-attempt times', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/twice` } });
    const device = await t.createDevice();
    const t0 = t.clock.now();
    const emitted = await publish(t, device);
    rx.replyOnce({ status: 500, body: 'first failure' }, { status: 503, body: 'second failure' });

    await engine.runOnce();
    let d = await onlyDelivery(t, dc.id);
    assert.equal(d.state, 'RETRYING');
    assert.equal(d.eventId, emitted.event.eventId);
    assert.equal(d.eventType, 'touch');
    assert.equal(d.deviceId, device.id);
    assert.equal(d.trigger, 'EVENT');
    assert.equal(d.createTime, micros(t0));
    assert.equal(d.attemptCount, 1);
    // The retry schedule (contract §6.5): 8 s, then 24 s after the enqueue.
    assert.equal(d.nextAttemptTime, micros(t0 + 8 * SECOND));

    t.clock.set(t0 + 8 * SECOND);
    await engine.runOnce();
    d = await onlyDelivery(t, dc.id);
    assert.equal(d.state, 'RETRYING');
    assert.equal(d.attemptCount, 2);
    assert.equal(d.nextAttemptTime, micros(t0 + 24 * SECOND));
    assert.equal(d.updateTime, micros(t0 + 8 * SECOND));

    t.clock.set(t0 + 24 * SECOND);
    await engine.runOnce();
    d = await onlyDelivery(t, dc.id);
    assert.equal(d.state, 'DELIVERED');
    assert.equal(d.attemptCount, 3);
    assert.equal(d.nextAttemptTime, null);
    assert.deepEqual(
      d.attempts!.map((a) => [a.time, a.outcome, a.httpStatus, a.responseBody, a.responseBodyTruncated, a.error]),
      [
        [micros(t0), 'HTTP_ERROR', 500, 'first failure', false, 'HTTP 500'],
        [micros(t0 + 8 * SECOND), 'HTTP_ERROR', 503, 'second failure', false, 'HTTP 503'],
        [micros(t0 + 24 * SECOND), 'SUCCESS', 200, 'ok', false, ''],
      ],
    );
    assert.equal(rx.requests.filter((q) => q.path === '/hook/twice').length, 3);
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('classifies a timeout, a refused connection and a TLS failure; a blocked address made no request and has no snippet', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const untrusted = await startReceiver({ cert: 'self-signed', reply: { status: 200, body: 'never read' } });
    try {
      const hang = await createConnector(t, { httpConfig: { url: `${rx.url}/hang` } });
      const refused = await createConnector(t, { httpConfig: { url: `https://127.0.0.1:${await closedPort()}/hook` } });
      const tls = await createConnector(t, { httpConfig: { url: untrusted.url } });
      await publish(t, await t.createDevice());
      assert.equal((await engine.runOnce()).failed, 3);

      const timedOut = (await onlyDelivery(t, hang.id)).attempts![0]!;
      assert.equal(timedOut.outcome, 'TIMEOUT');
      assert.equal(timedOut.httpStatus, 0);
      assert.equal(timedOut.durationMicros, TIMEOUT_MS * 1000, 'a timeout lasts the deadline');
      assert.match(timedOut.error, /no response headers within/);
      const notListening = (await onlyDelivery(t, refused.id)).attempts![0]!;
      assert.equal(notListening.outcome, 'CONNECTION_REFUSED');
      assert.match(notListening.error, /ECONNREFUSED/);
      const badCert = (await onlyDelivery(t, tls.id)).attempts![0]!;
      assert.equal(badCert.outcome, 'TLS_ERROR');
      assert.equal(badCert.responseBody, '');
      for (const a of [timedOut, notListening, badCert]) {
        assert.equal(a.httpStatus, 0);
        assert.doesNotMatch(a.error, /\n/, 'one line');
      }
      for (const dc of [hang, refused, tls])
        assert.equal((await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`)).status, 200);

      // A guard that lets no private address through: the attempt is refused before any connection.
      const guarded = r.engine({}, []);
      const dc = await createConnector(t, { httpConfig: { url: rx.url } });
      const connections = rx.connections;
      await publish(t, await t.createDevice());
      assert.equal((await guarded.runOnce()).failed, 1);
      assert.equal(rx.connections, connections, 'no connection was made');
      const blocked = (await onlyDelivery(t, dc.id)).attempts![0]!;
      assert.deepEqual([blocked.outcome, blocked.httpStatus, blocked.responseBody], ['BLOCKED_ADDRESS', 0, '']);
      assert.equal(blocked.responseBodyTruncated, false);
      await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
    } finally {
      await untrusted.close();
    }
  });

  it('logs the live path too: a row handed off to the running engine, DELIVERED', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/live` } });
    engine.start();
    try {
      const emitted = await publish(t, await t.createDevice());
      await rx.waitFor(rx.requests.length + 1);
      let d: DeliveryLogRecord | undefined;
      for (let i = 0; i < 500 && d?.state !== 'DELIVERED'; i++) {
        d = (await logOf(t, dc.id))[0];
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.deepEqual(
        [d?.state, d?.eventId, d?.attemptCount, d?.trigger],
        ['DELIVERED', emitted.event.eventId, 1, 'EVENT'],
      );
    } finally {
      await engine.stop();
    }
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it("never writes the answer's body to the service's own log, at any level", async () => {
    const { t, rx } = r;
    const lines: string[] = [];
    const logger = pino(
      { level: 'trace' },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(chunk.toString('utf8'));
          done();
        },
      }),
    );
    const engine = r.engine({}, undefined, logger);
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/secret-answer` } });
    rx.replyOnce({ status: 500, body: 'answer-only-the-log-keeps' });
    await publish(t, await t.createDevice());
    assert.equal((await engine.runOnce()).failed, 1);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(
      lines.some((l) => l.includes('push attempt failed')),
      'the failure is in the debug log',
    );
    assert.ok(!lines.join('').includes('answer-only-the-log-keeps'));
    assert.equal((await onlyDelivery(t, dc.id)).attempts![0]!.responseBody, 'answer-only-the-log-keeps');
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('keeps the first KiB of a long answer, marked truncated', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/long` } });
    rx.replyOnce({ status: 502, body: `${'é'.repeat(600)}tail` });
    await publish(t, await t.createDevice());
    await engine.runOnce();
    const a = (await onlyDelivery(t, dc.id)).attempts![0]!;
    assert.equal(a.responseBodyTruncated, true);
    // 1,024 bytes are 512 two-byte characters exactly.
    assert.equal(a.responseBody, 'é'.repeat(512));
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });
});

describe('rows removed without an attempt, and a connector deleted meanwhile', () => {
  let r: Rig;
  before(async () => {
    r = await rig();
  });
  after(() => r.close());

  it('the 12-hour drop logs EXPIRED: an attempted row with its attempt, a row never attempted with none', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/fail` } });
    const device = await t.createDevice();
    const first = await publish(t, device);
    await engine.runOnce();
    const second = await publish(t, device);
    t.clock.advance(12 * HOUR);
    const report = await engine.runOnce();
    assert.equal(report.dropped, 2);
    assert.equal(report.attempted, 0);
    const byEvent = new Map((await logOf(t, dc.id)).map((d) => [d.eventId, d]));
    const a = byEvent.get(first.event.eventId)!;
    const b = byEvent.get(second.event.eventId)!;
    assert.deepEqual([a.state, a.attemptCount, a.nextAttemptTime], ['EXPIRED', 1, null]);
    assert.deepEqual([b.state, b.attemptCount, b.nextAttemptTime], ['EXPIRED', 0, null]);
    assert.equal(b.updateTime, nowMicros(t.deps));
    assert.equal((await t.deps.store.deliveryLog.get(dc.id, a.id, nowMicros(t.deps)))!.attempts!.length, 1);
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('an attempt after which the next would fall past 12 h is logged EXPIRED with it', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/fail` } });
    await publish(t, await t.createDevice());
    const t0 = t.clock.now();
    const at = [0, 8, 24, 56, 120, 248, 504, 1016, 2040, 4088];
    for (let n = 10; n < 20; n++) at.push(at[n - 1]! + 3600);
    for (const s of at) {
      t.clock.set(t0 + s * SECOND);
      assert.equal((await engine.runOnce()).attempted, 1);
    }
    const d = await onlyDelivery(t, dc.id);
    assert.deepEqual([d.state, d.attemptCount, d.nextAttemptTime], ['EXPIRED', 20, null]);
    assert.equal(d.attempts![19]!.time, micros(t0 + 40_088 * SECOND));
    assert.equal(await queueDepth(t), 0);
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('disabling logs the queue DISCARDED; deleting the connector deletes its log', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/fail` } });
    const device = await t.createDevice();
    await publish(t, device);
    await engine.runOnce();
    await publish(t, device);
    t.clock.advance(SECOND);
    const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
      body: { status: 'USER_DISABLED' },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(await queueDepth(t), 0);
    const log = await logOf(t, dc.id);
    assert.deepEqual(
      log.map((d) => [d.state, d.attemptCount, d.updateTime]),
      [
        ['DISCARDED', 0, nowMicros(t.deps)],
        ['DISCARDED', 1, nowMicros(t.deps)],
      ],
    );
    assert.equal((await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`)).status, 200);
    assert.deepEqual(await logOf(t, dc.id), []);
  });

  it('5 days of failures: the attempt that disables the connector and the rest of its queue are logged DISCARDED', async () => {
    const { t, rx } = r;
    const engine = r.engine({ perConnectorConcurrency: 1 });
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/fail` } });
    const device = await t.createDevice();
    for (let i = 0; i < 3; i++) await publish(t, device);
    const now = nowMicros(t.deps);
    await t.deps.store.dataConnectors.updateState(dc.id, 'ACTIVE', now - micros(5 * DAY + SECOND), now);
    await engine.runOnce();
    assert.equal((await t.deps.store.dataConnectors.get(dc.id))!.status, 'SYSTEM_DISABLED');
    const log = await logOf(t, dc.id);
    assert.equal(log.length, 3);
    assert.ok(log.every((d) => d.state === 'DISCARDED' && d.nextAttemptTime === null));
    assert.equal(log.filter((d) => d.attemptCount === 1).length, 1, 'one attempt was made');
    await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`);
  });

  it('logs nothing of an attempt whose connector was deleted meanwhile', async () => {
    const { t } = r;
    const fake = new FakeDispatcher();
    const engine = createDeliveryEngine(t.deps, fake);
    r.engines.push(engine);
    const dc = await createConnector(t);
    await publish(t, await t.createDevice());
    fake.hold();
    const run = engine.runOnce();
    while (fake.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`)).status, 200);
    fake.release();
    assert.equal((await run).attempted, 1);
    assert.deepEqual(await logOf(t, dc.id), []);
    assert.equal(await t.deps.store.deliveryLog.count(), 0);
  });
});

describe('the trigger header', () => {
  let r: Rig;
  before(async () => {
    r = await rig();
  });
  after(() => r.close());

  it('a :sync push carries X-Sensorcloud-Delivery-Trigger: SYNC with the same body; a published event none', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, { httpConfig: { url: `${rx.url}/sync` } });
    await publish(t, await t.createDevice());
    await engine.runOnce();
    const synced = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}:sync`, { body: {} });
    assert.equal(synced.status, 200, synced.text);
    await engine.runOnce();
    const [live, sync] = rx.requests.filter((q) => q.path === '/hook/sync');
    assert.equal(live!.headers['x-sensorcloud-delivery-trigger'], undefined);
    assert.equal(sync!.headers['x-sensorcloud-delivery-trigger'], 'SYNC');
    assert.ok(sync!.body.equals(live!.body), 'the body is unchanged');
    assert.deepEqual(
      (await logOf(t, dc.id)).map((d) => [d.trigger, d.state]),
      [
        ['SYNC', 'DELIVERED'],
        ['EVENT', 'DELIVERED'],
      ],
    );
  });

  it('is reserved: a connector cannot set it as a custom header', async () => {
    const { t, rx } = r;
    const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
      body: {
        type: 'HTTP_PUSH',
        httpConfig: { url: rx.url, headers: { 'x-sensorcloud-delivery-trigger': 'REPLAY' } },
      },
    });
    assert.equal(res.status, 400, res.text);
    assert.match(res.body.error, /reserved/);
  });
});

describe('pushOnce', () => {
  let r: Rig;
  before(async () => {
    r = await rig();
  });
  after(() => r.close());

  it('one signed attempt with the trigger header and the custom headers; not queued, counted or logged', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    const dc = await createConnector(t, {
      status: 'USER_DISABLED',
      httpConfig: { url: `${rx.url}/once`, headers: { 'X-Api-Key': 'k' }, signatureSecret: 'once-secret' },
    });
    const connector = (await t.deps.store.dataConnectors.get(dc.id))!;
    const body = Buffer.from('{"event":{"eventId":"test","eventType":"touch"},"labels":{},"metadata":{}}');
    await assert.rejects(t.deps.delivery.pushOnce(connector, body, 'TEST'), DeliveryEngineNotRunning);

    const counters = await t.deps.store.connectorMetrics.counters();
    engine.start();
    const outcome = await t.deps.delivery.pushOnce(connector, body, 'TEST');
    assert.deepEqual([outcome.ok, outcome.outcome, outcome.status], [true, 'SUCCESS', 200]);
    assert.equal(outcome.responseBody?.toString('utf8'), 'ok');
    const [req] = rx.requests.filter((q) => q.path === '/hook/once');
    assert.ok(req!.body.equals(body));
    assert.equal(req!.headers['x-sensorcloud-delivery-trigger'], 'TEST');
    assert.equal(req!.headers['x-api-key'], 'k');
    const { payload } = await jwtVerify(
      String(req!.headers['x-service-signature']),
      new TextEncoder().encode('once-secret'),
      { algorithms: ['HS256'], clockTolerance: 10 ** 9 },
    );
    assert.equal(payload.checksum_sha256, createHash('sha256').update(body).digest('hex'));

    assert.equal(await queueDepth(t), 0);
    assert.deepEqual(await t.deps.store.connectorMetrics.counters(), counters, 'no counter moved');
    const metrics = await metricsOf(t, dc.id);
    assert.deepEqual([metrics.successCount, metrics.errorCount], [0, 0]);
    assert.equal(await t.deps.store.deliveryLog.count(), 0, 'the caller logs it');
    await engine.stop();
  });

  it('reports a failure as its outcome, with the answer; refuses a third at once while two are in flight', async () => {
    const { t, rx } = r;
    const engine = r.engine();
    engine.start();
    try {
      const failing = await createConnector(t, { httpConfig: { url: `${rx.url}/fail` } });
      const body = Buffer.from('{}');
      const failed = await t.deps.delivery.pushOnce((await t.deps.store.dataConnectors.get(failing.id))!, body, 'TEST');
      assert.deepEqual([failed.ok, failed.outcome, failed.status], [false, 'HTTP_ERROR', 500]);
      assert.equal(failed.responseBody?.toString('utf8'), 'failed here');

      const hang = (await t.deps.store.dataConnectors.get(
        (
          await createConnector(t, { httpConfig: { url: `${rx.url}/hang` } })
        ).id,
      ))!;
      const inFlight = [t.deps.delivery.pushOnce(hang, body, 'TEST'), t.deps.delivery.pushOnce(hang, body, 'TEST')];
      await assert.rejects(
        t.deps.delivery.pushOnce(hang, body, 'TEST'),
        (err: unknown) => err instanceof ApiError && err.status === 429,
      );
      // Another connector's is not held up.
      const other = await t.deps.delivery.pushOnce((await t.deps.store.dataConnectors.get(failing.id))!, body, 'TEST');
      assert.equal(other.status, 500);
      for (const o of await Promise.all(inFlight)) assert.equal(o.outcome, 'TIMEOUT');
      // Once they have answered, the connector may be tested again.
      assert.equal((await t.deps.delivery.pushOnce(hang, body, 'TEST')).outcome, 'TIMEOUT');
    } finally {
      await engine.stop();
    }
  });
});

describe('pruning', () => {
  let r: Rig;
  before(async () => {
    r = await rig();
  });
  after(() => r.close());

  it('keeps at most `max` deliveries per connector, the newest, and none past the retention', async () => {
    const { t, rx } = r;
    const engine = r.engine({ deliveryLog: { retentionSeconds: 3600, max: 3 } });
    const busy = await createConnector(t, { events: ['touch'], httpConfig: { url: `${rx.url}/busy` } });
    const quiet = await createConnector(t, { events: ['temperature'], httpConfig: { url: `${rx.url}/quiet` } });
    const device = await t.createDevice();
    for (let i = 0; i < 5; i++) await publish(t, device, 'touch');
    await publish(t, device, 'temperature');
    await engine.runOnce();
    const all = await logOf(t, busy.id);
    assert.equal(all.length, 5);
    t.clock.advance(30 * 60 * SECOND);
    await engine.runOnce(); // the housekeeping pass prunes first
    assert.deepEqual(
      (await logOf(t, busy.id)).map((d) => d.id),
      all.slice(0, 3).map((d) => d.id),
    );
    assert.equal((await logOf(t, quiet.id)).length, 1, 'a connector under the cap keeps its deliveries');

    t.clock.advance(30 * 60 * SECOND + SECOND);
    await publish(t, device, 'touch');
    await engine.runOnce();
    // Created an hour ago: gone. The one just made stays.
    assert.equal((await logOf(t, quiet.id)).length, 0);
    assert.equal((await logOf(t, busy.id)).length, 1);
  });
});

describe('the log turned off (SENSORCLOUD_DELIVERY_LOG_MAX=0)', () => {
  let r: Rig;
  before(async () => {
    r = await rig({ SENSORCLOUD_DELIVERY_LOG_MAX: '0' });
  });
  after(() => r.close());

  it('records nothing: attempts, the 12-hour drop, a dropped queue; rows left from before still age out', async () => {
    const { t, rx } = r;
    const engine = r.engine({ deliveryLog: t.deps.config.deliveryLog });
    const failing = await createConnector(t, { httpConfig: { url: `${rx.url}/fail` } });
    const device = await t.createDevice();
    await publish(t, device);
    await engine.runOnce();
    t.clock.advance(12 * HOUR);
    await publish(t, device);
    assert.equal((await engine.runOnce()).dropped, 1);
    await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${failing.id}`, {
      body: { status: 'USER_DISABLED' },
    });
    const ok = await createConnector(t, { httpConfig: { url: `${rx.url}/ok` } });
    await publish(t, device);
    assert.equal((await engine.runOnce()).acked, 1);
    assert.equal(await t.deps.store.deliveryLog.count(), 0);

    // A delivery logged while the log was on, 72 h ago: pruned by the retention.
    const now = nowMicros(t.deps);
    await t.deps.store.deliveryLog.record([
      {
        id: 1_000_000,
        connectorId: ok.id,
        eventId: 'old',
        eventType: 'touch',
        deviceId: device.id,
        trigger: 'EVENT',
        createTime: now - micros(72 * HOUR),
        state: 'DELIVERED',
        attempt: {
          time: now - micros(72 * HOUR),
          durationMicros: 1000,
          outcome: 'SUCCESS',
          httpStatus: 200,
          responseBody: '',
          responseBodyTruncated: false,
          error: '',
        },
        nextAttemptTime: null,
        updateTime: now - micros(72 * HOUR),
      },
    ]);
    assert.equal(await t.deps.store.deliveryLog.count(), 1);
    t.clock.advance(SECOND);
    await engine.runOnce();
    assert.equal(await t.deps.store.deliveryLog.count(), 0);
  });
});
