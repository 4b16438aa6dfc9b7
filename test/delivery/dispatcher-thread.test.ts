// The dispatcher on its worker thread (what `serve` uses), against a real loopback HTTPS receiver: the same
// bytes, signature and outcomes as in process (with the delivery log's class and answer snippet), many pushes per
// message, SSRF and TLS refusals, close and the loss of the thread. The transport itself is covered in depth by
// dispatcher.test.ts.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { jwtVerify } from 'jose';
import { createThreadedDispatcher, type ThreadedDispatcherOptions } from '../../src/delivery/dispatcher-thread.ts';
import { decodeResponseBody } from '../../src/delivery/response-snippet.ts';
import { verifySignature } from '../../src/receiver/verify-signature.ts';
import type { Dispatcher, PushTarget } from '../../src/delivery/types.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';

const LOCAL = ['127.0.0.0/8', '::1/128'];
const body = (i: number) =>
  Buffer.from(`{"event":{"eventId":"e${i}","text":"Grüße ✓"},"labels":{},"metadata":{}}`, 'utf8');
const target = (url: string, extra: Partial<PushTarget> = {}): PushTarget => ({
  url,
  headers: {},
  signatureSecret: '',
  ...extra,
});

const dispatchers: Dispatcher[] = [];
function dispatcher(
  options: Partial<ThreadedDispatcherOptions> & { allow?: string[]; caFile?: string | null } = {},
): Dispatcher {
  const { allow = LOCAL, caFile = testTls().caFile, ...rest } = options;
  const d = createThreadedDispatcher({
    config: { caFile, allowPrivateEndpoints: allow },
    logger: createSilentLogger(),
    extraCaFile: null,
    ...rest,
  });
  dispatchers.push(d);
  return d;
}

describe('dispatcher thread', () => {
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver();
  });
  after(async () => {
    await Promise.all(dispatchers.map((d) => d.close()));
    await rx.close();
  });

  it('pushes the exact body bytes with a signature that verifies, and reports the outcome', async () => {
    const d = dispatcher();
    const secret = 'thread-secret';
    const before = rx.requests.length;
    const outcome = await d.send(target(rx.url, { headers: { 'X-Tenant': 't1' }, signatureSecret: secret }), body(1));
    assert.equal(outcome.ok, true);
    assert.equal(outcome.reason, 'ack');
    assert.equal(outcome.outcome, 'SUCCESS');
    assert.equal(outcome.status, 200);
    assert.ok(outcome.responseTimeMs >= 0 && outcome.responseTimeMs < 10_000);
    // An empty answer: nothing of a body crosses back.
    assert.equal('responseBody' in outcome, false);
    assert.equal('responseBodyTruncated' in outcome, false);
    const req = rx.requests[before]!;
    assert.ok(req.body.equals(body(1)));
    assert.equal(req.headers['x-tenant'], 't1');
    assert.equal(req.headers['content-type'], 'application/json');
    const { payload } = await jwtVerify(String(req.headers['x-service-signature']), new TextEncoder().encode(secret), {
      algorithms: ['HS256'],
    });
    assert.equal(payload.checksum_sha256, createHash('sha256').update(req.body).digest('hex'));
  });

  it('carries the trigger across the thread: a REPLAY push names it, a push without one names none', async () => {
    const d = dispatcher();
    const before = rx.requests.length;
    assert.equal((await d.send(target(rx.url, { trigger: 'REPLAY' }), body(1))).ok, true);
    assert.equal((await d.send(target(rx.url), body(2))).ok, true);
    const [replayed, live] = rx.requests.slice(before);
    assert.equal(replayed!.headers['x-sensorcloud-delivery-trigger'], 'REPLAY');
    assert.ok(replayed!.body.equals(body(1)), 'the body is unchanged');
    assert.equal(live!.headers['x-sensorcloud-delivery-trigger'], undefined);
  });

  it("carries a rotation's previous secret across the thread (§X3): both signatures, same claims, each its secret", async () => {
    const d = dispatcher();
    const before = rx.requests.length;
    const rotating = target(rx.url, { signatureSecret: 'new-secret', previousSignatureSecret: 'old-secret' });
    assert.equal((await d.send(rotating, body(1))).ok, true);
    assert.equal((await d.send(target(rx.url, { signatureSecret: 'new-secret' }), body(2))).ok, true);
    const [both, one] = rx.requests.slice(before);
    const current = await verifySignature(both!.body, String(both!.headers['x-service-signature']), 'new-secret');
    const previous = await verifySignature(
      both!.body,
      String(both!.headers['x-service-signature-previous']),
      'old-secret',
    );
    assert.deepEqual(previous, current);
    assert.equal(one!.headers['x-service-signature-previous'], undefined);
    await verifySignature(one!.body, String(one!.headers['x-service-signature']), 'new-secret');
  });

  it('carries many pushes per message: each arrives once and each send gets its own outcome', async () => {
    const d = dispatcher();
    const before = rx.requests.length;
    rx.reply((req) => ({ status: req.body.includes('"e7"') ? 500 : 200 }));
    try {
      const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => d.send(target(rx.url), body(i))));
      assert.equal(outcomes.length, 200);
      outcomes.forEach((o, i) => {
        if (i === 7) assert.deepEqual([o.ok, o.reason, o.status], [false, 'http_status', 500]);
        else assert.equal(o.ok, true, `send ${i}: ${o.message}`);
      });
      const got = rx.requests
        .slice(before)
        .map((r) => r.body.toString('utf8'))
        .sort();
      assert.deepEqual(got, Array.from({ length: 200 }, (_, i) => body(i).toString('utf8')).sort());
    } finally {
      rx.reply({});
    }
  });

  it('passes Retry-After of a 503 on', async () => {
    const d = dispatcher();
    rx.replyOnce({ status: 503, retryAfter: '120' });
    const outcome = await d.send(target(rx.url), body(2));
    assert.deepEqual(
      [outcome.ok, outcome.reason, outcome.status, outcome.retryAfterSeconds],
      [false, 'http_status', 503, 120],
    );
  });

  it('refuses loopback unless allowed, without connecting', async () => {
    const guarded = await startReceiver();
    try {
      const outcome = await dispatcher({ allow: [] }).send(
        target(guarded.url.replace('127.0.0.1', '[::ffff:7f00:1]')),
        body(3),
      );
      assert.equal(outcome.reason, 'refused_address');
      assert.equal(outcome.outcome, 'BLOCKED_ADDRESS');
      assert.equal('responseBody' in outcome, false);
      assert.equal(guarded.connections, 0);
    } finally {
      await guarded.close();
    }
  });

  it('fails an untrusted certificate as tls', async () => {
    const selfSigned = await startReceiver({ cert: 'self-signed' });
    try {
      const outcome = await dispatcher().send(target(selfSigned.url), body(4));
      assert.equal(outcome.reason, 'tls');
      assert.equal(outcome.outcome, 'TLS_ERROR');
      assert.equal(selfSigned.requests.length, 0);
    } finally {
      await selfSigned.close();
    }
  });

  it('carries the start of the answer back: a Buffer of at most 1,024 bytes, its own bytes only', async () => {
    const d = dispatcher();
    const answer = Buffer.from(Array.from({ length: 5 * 1024 }, (_, i) => 97 + (i % 26)));
    rx.replyOnce({ status: 200, body: answer });
    const long = await d.send(target(rx.url), body(20));
    assert.equal(long.outcome, 'SUCCESS');
    assert.ok(Buffer.isBuffer(long.responseBody), 'a Buffer again on this side');
    assert.equal(long.responseBody!.length, 1024);
    assert.equal(long.responseBody!.buffer.byteLength, 1024, 'only the snippet crossed, not a buffer behind it');
    assert.ok(long.responseBody!.equals(answer.subarray(0, 1024)));
    assert.equal(long.responseBodyTruncated, true);

    rx.replyOnce({ status: 500, body: `${'a'.repeat(1023)}€ tail` });
    const cut = await d.send(target(rx.url), body(21));
    assert.deepEqual([cut.reason, cut.outcome, cut.status], ['http_status', 'HTTP_ERROR', 500]);
    assert.equal(decodeResponseBody(cut.responseBody), `${'a'.repeat(1023)}\uFFFD`);
    assert.equal(cut.responseBodyTruncated, true);
    assert.ok(!cut.message.includes('a'.repeat(10)), 'the snippet stays out of the message');

    rx.replyOnce({ status: 202, body: '{"queued":true}' });
    const short = await d.send(target(rx.url), body(22));
    assert.equal(short.responseBody!.toString('utf8'), '{"queued":true}');
    assert.equal(short.responseBody!.buffer.byteLength, 15);
    assert.equal('responseBodyTruncated' in short, false);
  });

  it('classes connection failures in the thread as in process: a closed port is CONNECTION_REFUSED', async () => {
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    server.close();
    await once(server, 'close');
    const outcome = await dispatcher().send(target(`https://127.0.0.1:${port}/hook`), body(23));
    assert.deepEqual([outcome.reason, outcome.outcome], ['connection', 'CONNECTION_REFUSED']);
    assert.equal('responseBody' in outcome, false);
  });

  it('fails the start on an unreadable CA file, on the calling thread', () => {
    assert.throws(() => dispatcher({ caFile: '/nonexistent/ca.pem' }), /SENSORCLOUD_CA_FILE: cannot read/);
  });

  it('fails the start on a CA file without certificates or with a malformed one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-ca-'));
    try {
      writeFileSync(join(dir, 'none.pem'), 'not a certificate\n');
      writeFileSync(
        join(dir, 'bad.pem'),
        '-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n',
      );
      assert.throws(() => dispatcher({ caFile: join(dir, 'none.pem') }), /holds no PEM certificate/);
      assert.throws(() => dispatcher({ caFile: join(dir, 'bad.pem') }), /holds a malformed certificate/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when the thread dies, the attempts it held fail as connection errors and the next send gets a new thread', async () => {
    const clock = new FakeClock();
    const d = dispatcher({ clock, workerUrl: new URL('../helpers/dying-dispatcher-worker.mjs', import.meta.url) });
    const first = await d.send(target(rx.url), body(8));
    assert.equal(first.ok, true);
    assert.equal(first.outcome, 'SUCCESS', 'an outcome sent without its class gets the one its reason gives');
    clock.advance(5000); // the thread has lived long enough: no backoff
    const lost = await Promise.all([d.send(target(rx.url), Buffer.from('die')), d.send(target(rx.url), body(9))]);
    for (const o of lost) {
      assert.deepEqual([o.ok, o.reason, o.outcome], [false, 'connection', 'OTHER']);
      assert.match(o.message, /dispatcher thread stopped/);
    }
    assert.equal((await d.send(target(rx.url), body(10))).ok, true);
  });

  it('a thread that dies right after starting is restarted after a growing pause, sends failing meanwhile', async () => {
    const clock = new FakeClock();
    const d = dispatcher({ clock, workerUrl: new URL('../helpers/dying-dispatcher-worker.mjs', import.meta.url) });
    const first = await d.send(target(rx.url), Buffer.from('die'));
    assert.match(first.message, /dispatcher thread stopped/);
    const waiting = await d.send(target(rx.url), body(11));
    assert.deepEqual([waiting.ok, waiting.reason], [false, 'connection']);
    assert.match(waiting.message, /failed right after it started; the next one starts in 1 s/);
    clock.advance(1000);
    assert.match((await d.send(target(rx.url), Buffer.from('die'))).message, /dispatcher thread stopped/);
    assert.match((await d.send(target(rx.url), body(12))).message, /next one starts in 2 s/, 'the pause doubles');
    clock.advance(2000);
    assert.equal((await d.send(target(rx.url), body(13))).ok, true);
  });

  it('close lets attempts in flight finish, then refuses new sends', async () => {
    const d = dispatcher();
    rx.replyOnce({ delayMs: 300 });
    const inFlight = d.send(target(rx.url), body(5));
    await rx.waitFor(rx.requests.length + 1).catch(() => undefined);
    await d.close();
    assert.equal((await inFlight).ok, true);
    const late = await d.send(target(rx.url), body(6));
    assert.deepEqual([late.ok, late.reason], [false, 'connection']);
    assert.match(late.message, /closed/);
  });
});
