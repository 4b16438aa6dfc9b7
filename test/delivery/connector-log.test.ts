// Delivery failures visible in the default log (docs/data-connectors.md): a connector's first failure after a
// success, its recovery, a hanging attempt and an automatic disable each give one info/warn line with the reason,
// at most one per connector per minute, never the signature secret.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createConnectorLog, failureReason } from '../../src/delivery/connector-log.ts';
import { createDeliveryEngine } from '../../src/delivery/engine.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { FakeDispatcher } from '../helpers/fake-dispatcher.ts';

/** A pino logger at the default level (info) whose lines are kept, parsed. */
function capturingLogger() {
  const lines: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const connector = { id: 'c1', projectId: 'p1' };

describe('the connector log', () => {
  it('names the reason of a failure as an operator reads it', () => {
    assert.equal(
      failureReason({ ok: false, reason: 'http_status', status: 401, responseTimeMs: 1, message: '' }),
      'HTTP 401',
    );
    assert.match(failureReason({ ok: false, reason: 'tls', responseTimeMs: 1, message: '' }), /TLS/);
    assert.match(failureReason({ ok: false, reason: 'timeout', responseTimeMs: 10_000, message: '' }), /timeout/);
    assert.match(failureReason({ ok: false, reason: 'refused_address', responseTimeMs: 0, message: '' }), /SSRF/);
    assert.match(failureReason({ ok: false, reason: 'connection', responseTimeMs: 0, message: '' }), /refused/);
  });

  it('a hanging connector is logged once when it starts hanging, not again while it hangs, and again after a minute', async () => {
    const { logger, lines } = capturingLogger();
    const clock = new FakeClock();
    const log = createConnectorLog(logger, clock);
    log.hanging([connector]);
    log.hanging([connector]);
    log.hanging([]);
    clock.advance(10_000);
    log.hanging([connector]); // hangs again, but within the minute
    clock.advance(60_000);
    log.hanging([]);
    log.hanging([connector]);
    await new Promise((r) => setImmediate(r));
    assert.equal(lines.length, 2);
    assert.ok(
      lines.every(
        (l) =>
          l.level === 40 &&
          l.connector === 'projects/p1/dataconnectors/c1' &&
          /no answer for over a second/.test(l.msg),
      ),
    );
  });

  it('a recovery after a logged failure is always logged; a flapping endpoint gives at most a failure and a recovery a minute', async () => {
    const { logger, lines } = capturingLogger();
    const clock = new FakeClock();
    const log = createConnectorLog(logger, clock);
    const outcome = { ok: false as const, reason: 'http_status' as const, status: 500, responseTimeMs: 1, message: '' };
    log.failing(connector, outcome);
    clock.advance(1_000);
    log.recovered(connector); // within the minute, but the log must not end on a failure that is over
    for (let i = 0; i < 5; i++) {
      clock.advance(1_000);
      log.failing(connector, outcome);
      log.recovered(connector);
    }
    clock.advance(60_000);
    log.failing(connector, outcome);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      lines.map((l) => l.level),
      [40, 30, 40],
    );
    assert.match(lines[1]!.msg, /succeed again/);
  });
});

describe('delivery failures in the default log', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  it('one warn line for the first failure (with the reason), none for the next ones, one info line for the recovery', async () => {
    const { logger, lines } = capturingLogger();
    const fake = new FakeDispatcher({ answer: 503 });
    const engine = createDeliveryEngine({ ...t.deps, logger }, fake);
    const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
      body: {
        type: 'HTTP_PUSH',
        httpConfig: { url: 'https://receiver.example/hook', signatureSecret: 'top-secret-value' },
      },
    });
    const name = res.body.name;
    const device = await t.createDevice({ type: 'touch' });
    for (let i = 0; i < 3; i++)
      await t.request('POST', `/v2/projects/${t.projectId}/devices/${device.id}:publish`, { body: { touch: {} } });

    assert.equal((await engine.runOnce()).failed, 3);
    t.clock.advance(20_000);
    assert.equal((await engine.runOnce()).failed, 3);
    const failing = lines.filter((l) => l.connector === name);
    assert.equal(failing.length, 1, JSON.stringify(lines));
    assert.equal(failing[0]!.level, 40);
    assert.equal(failing[0]!.reason, 'HTTP 503');
    assert.match(failing[0]!.msg, /pushes are failing/);

    fake.byUrl.set('https://receiver.example/hook', 200);
    t.clock.advance(61_000);
    assert.equal((await engine.runOnce()).acked, 3);
    const recovered = lines.filter((l) => l.connector === name).slice(1);
    assert.equal(recovered.length, 1, JSON.stringify(lines));
    assert.equal(recovered[0]!.level, 30);
    assert.match(recovered[0]!.msg, /succeed again/);
    assert.ok(!JSON.stringify(lines).includes('top-secret-value'), 'the secret never reaches the log');
  });
});
