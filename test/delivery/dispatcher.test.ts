// The push transport against a real loopback HTTPS receiver: request bytes and headers, signature, outcomes, TLS
// verification and the SSRF guard (contract §6.2–§6.4, §6.10), and what each attempt gives the delivery log: its
// class and the start of the answer (extensions §X1).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { jwtVerify } from 'jose';
import { createDispatcher, packageVersion, type DispatcherOptions } from '../../src/delivery/dispatcher.ts';
import { decodeResponseBody } from '../../src/delivery/response-snippet.ts';
import type { Dispatcher, PushTarget } from '../../src/delivery/types.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createIdGenerator } from '../../src/runtime/ids.ts';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import { SeededRandom } from '../../src/runtime/random.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';

const LOCAL = ['127.0.0.0/8', '::1/128'];
const BODY = Buffer.from(
  '{"event":{"eventId":"e1","eventType":"touch","data":{"touch":{"updateTime":"2025-06-01T12:00:00.000000Z"}},"text":"Grüße ✓"},"labels":{},"metadata":{}}',
  'utf8',
);

const clock = new FakeClock();
const dispatchers: Dispatcher[] = [];
const receivers: Receiver[] = [];

function dispatcher(
  options: Partial<DispatcherOptions> & { allow?: string[]; caFile?: string | null } = {},
): Dispatcher {
  const { allow = LOCAL, caFile = testTls().caFile, ...rest } = options;
  const d = createDispatcher({
    config: { caFile, allowPrivateEndpoints: allow },
    clock,
    ids: createIdGenerator(clock, new SeededRandom('dispatcher-test')),
    logger: createSilentLogger(),
    extraCaFile: null,
    ...rest,
  });
  dispatchers.push(d);
  return d;
}

async function receiver(options: Parameters<typeof startReceiver>[0] = {}): Promise<Receiver> {
  const r = await startReceiver(options);
  receivers.push(r);
  return r;
}

const target = (url: string, extra: Partial<PushTarget> = {}): PushTarget => ({
  url,
  headers: {},
  signatureSecret: '',
  ...extra,
});
const key = (secret: string) => new TextEncoder().encode(secret);

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  server.close();
  await once(server, 'close');
  return port;
}

describe('dispatcher', () => {
  let rx: Receiver;
  let d: Dispatcher;
  before(async () => {
    rx = await receiver();
    d = dispatcher();
  });
  after(async () => {
    await Promise.all(dispatchers.map((x) => x.close()));
    await Promise.all(receivers.map((x) => x.close()));
  });

  describe('happy', () => {
    it('POSTs the body bytes with the contract headers, unsigned when the secret is empty', async () => {
      const before = rx.requests.length;
      const outcome = await d.send(target(`${rx.url}?tenant=a&x=1`), BODY);
      assert.deepEqual(outcome, {
        ok: true,
        reason: 'ack',
        outcome: 'SUCCESS',
        status: 200,
        responseTimeMs: 0,
        message: 'HTTP 200',
      });
      const req = rx.requests[before]!;
      assert.equal(req.method, 'POST');
      assert.equal(req.path, '/hook?tenant=a&x=1');
      assert.ok(req.body.equals(BODY));
      assert.equal(req.headers['content-type'], 'application/json');
      assert.equal(req.headers['content-length'], String(BODY.length));
      assert.equal(req.headers['user-agent'], `SensorCloud-DataConnector/${packageVersion()}`);
      assert.equal(req.headers['x-service-signature'], undefined);
      assert.equal(req.headers['transfer-encoding'], undefined);
    });

    it('sends custom headers verbatim, names in their case', async () => {
      const before = rx.requests.length;
      await d.send(
        target(rx.url, { headers: { 'X-Api-Key': 'k3y value', authorization: 'Bearer abc', 'x-Tenant': 't1' } }),
        BODY,
      );
      const req = rx.requests[before]!;
      assert.equal(req.headers['x-api-key'], 'k3y value');
      assert.equal(req.headers.authorization, 'Bearer abc');
      assert.equal(req.headers['x-tenant'], 't1');
      const names = req.rawHeaders.filter((_, i) => i % 2 === 0);
      for (const name of ['X-Api-Key', 'authorization', 'x-Tenant', 'Content-Type', 'User-Agent'])
        assert.ok(names.includes(name), name);
    });

    it('a custom User-Agent replaces the default; stored reserved headers are never sent', async () => {
      const before = rx.requests.length;
      const outcome = await d.send(
        target(rx.url, {
          headers: {
            'user-agent': 'mine/1',
            'Content-Type': 'text/plain',
            'X-Service-Signature': 'forged',
            Expect: '100-continue',
            Upgrade: 'h2c',
            'Keep-Alive': '5',
          },
        }),
        BODY,
      );
      assert.equal(outcome.ok, true);
      const req = rx.requests[before]!;
      assert.equal(req.headers['user-agent'], 'mine/1');
      assert.equal(req.headers['content-type'], 'application/json');
      assert.equal(req.headers['x-service-signature'], undefined);
      assert.equal(req.headers.expect, undefined);
      assert.equal(req.headers.upgrade, undefined);
      assert.equal(req.rawHeaders.filter((h) => h.toLowerCase() === 'user-agent').length, 1);
    });

    it('signs with a fresh JWT per attempt that jose verifies and whose checksum matches the raw body', async () => {
      const before = rx.requests.length;
      const secret = 'receiver-shared-secret';
      await d.send(target(rx.url, { signatureSecret: secret }), BODY);
      clock.advance(2000);
      await d.send(target(rx.url, { signatureSecret: secret }), BODY);
      const [first, second] = rx.requests.slice(before);
      const tokens = [first!, second!].map((req) => String(req.headers['x-service-signature']));
      const payloads = [];
      for (const [i, token] of tokens.entries()) {
        const { payload, protectedHeader } = await jwtVerify(token, key(secret), {
          algorithms: ['HS256'],
          currentDate: new Date(clock.now()),
        });
        assert.deepEqual(protectedHeader, { alg: 'HS256', typ: 'JWT' });
        const raw = [first!, second!][i]!.body;
        assert.equal(payload.checksum_sha256, createHash('sha256').update(raw).digest('hex'));
        assert.equal(payload.checksum, createHash('sha1').update(raw).digest('hex'));
        assert.equal(payload.exp, payload.iat! + 3600);
        assert.match(String(payload.jti), /^[0-9a-v]{20}$/);
        assert.equal(payload.aud, undefined);
        payloads.push(payload);
      }
      assert.equal(payloads[1]!.iat, payloads[0]!.iat! + 2);
      assert.notEqual(payloads[0]!.jti, payloads[1]!.jti);
      assert.ok(first!.body.equals(second!.body));
    });

    it('acknowledges every 2xx and reads and drops a response body', async () => {
      for (const status of [200, 201, 202, 204, 299]) {
        rx.replyOnce({ status, body: status === 204 ? '' : 'x'.repeat(100 * 1024) });
        const outcome = await d.send(target(rx.url), BODY);
        assert.equal(outcome.ok, true, String(status));
        assert.equal(outcome.reason, 'ack');
        assert.equal(outcome.status, status);
      }
    });

    it('reuses keep-alive connections', async () => {
      const own = await receiver();
      for (let i = 0; i < 6; i++) assert.equal((await d.send(target(own.url), BODY)).ok, true);
      assert.equal(own.requests.length, 6);
      // undici may open a second socket while the first is still finishing its response; never one per request.
      assert.ok(own.connections <= 2, `connections: ${own.connections}`);
    });

    it('bounds concurrency per origin and delivers every body once', async () => {
      const own = await receiver({ reply: { delayMs: 20 } });
      const limited = dispatcher({ connectionsPerOrigin: 2 });
      const bodies = Array.from({ length: 12 }, (_, i) => Buffer.from(`{"n":${i}}`));
      const outcomes = await Promise.all(bodies.map((b) => limited.send(target(own.url), b)));
      assert.ok(outcomes.every((o) => o.ok));
      assert.equal(own.connections, 2);
      assert.deepEqual(own.requests.map((r) => r.body.toString()).sort(), bodies.map((b) => b.toString()).sort());
    });

    it("probes to a hanging path hold at most half of the address's connections: a healthy path on it is served at once", async () => {
      // 100 connectors to a hanging path once took all 64 connections of a receiver host another tenant pushed to.
      const shared = await receiver({ reply: (request) => (request.path === '/dead' ? { hang: true } : {}) });
      const limited = dispatcher({ timeoutMs: 2000, connectionsPerOrigin: 4 });
      const origin = shared.url.replace(/\/hook$/, '');
      const probes = Array.from({ length: 10 }, () => limited.send(target(`${origin}/dead`, { probe: true }), BODY));
      await shared.waitFor(2);
      const started = performance.now();
      const healthy = await Promise.all(Array.from({ length: 6 }, () => limited.send(target(`${origin}/live`), BODY)));
      assert.ok(
        healthy.every((o) => o.ok),
        JSON.stringify(healthy.map((o) => o.reason)),
      );
      assert.ok(performance.now() - started < 1500, 'the healthy path did not wait for the probes to time out');
      assert.equal(
        shared.requests.filter((r) => r.path === '/dead').length,
        2,
        'two probes in flight: half of the 4 connections',
      );
      const ended = await Promise.all(probes);
      assert.ok(ended.every((o) => !o.ok && o.reason === 'timeout'));
    });

    it("a freed connection goes to the waiting URLs in turn: a healthy path does not wait behind a slow one's line", async () => {
      const shared = await receiver({ reply: (request) => (request.path === '/slow' ? { delayMs: 400 } : {}) });
      const limited = dispatcher({ connectionsPerOrigin: 2 });
      const origin = shared.url.replace(/\/hook$/, '');
      // Ten attempts to the slow path: two hold the connections, eight wait (first in, first out, they would take
      // 4 x 400 ms before the healthy path's turn).
      const slow = Array.from({ length: 10 }, () => limited.send(target(`${origin}/slow`), BODY));
      await shared.waitFor(2);
      const started = performance.now();
      const healthy = await limited.send(target(`${origin}/live`), BODY);
      const waited = performance.now() - started;
      assert.equal(healthy.ok, true);
      assert.ok(waited < 1000, `the healthy path got the next free connection (${Math.round(waited)} ms)`);
      assert.ok((await Promise.all(slow)).every((o) => o.ok));
    });

    it('connects to the vetted address of a host name and checks the certificate against the name', async () => {
      const lookups: string[] = [];
      const named = dispatcher({
        lookup: async (host) => {
          lookups.push(host);
          return ['127.0.0.1'];
        },
      });
      const own = await receiver();
      const url = `https://receiver.test:${own.port}/hook`;
      for (let i = 0; i < 6; i++) assert.equal((await named.send(target(url), BODY)).ok, true);
      assert.equal(own.requests[0]!.headers.host, `receiver.test:${own.port}`);
      // One resolution per new connection (at most two here, see above); requests reuse the pinned sockets.
      assert.equal(lookups.length, own.connections);
      assert.ok(lookups.length <= 2 && lookups.every((h) => h === 'receiver.test'), String(lookups));
    });

    it('pushes to an IPv6 literal ([::1]) when allow-listed', async (t) => {
      let own: Receiver;
      try {
        own = await receiver({ host: '::1' });
      } catch {
        t.skip('no IPv6 loopback on this machine');
        return;
      }
      assert.equal((await d.send(target(own.url), BODY)).ok, true);
      assert.equal(
        (await dispatcher({ allow: ['127.0.0.0/8'] }).send(target(own.url), BODY)).reason,
        'refused_address',
      );
      assert.equal(own.requests.length, 1);
    });

    it('tries the next vetted address when the first refuses the connection', async () => {
      const own = await receiver(); // listens on 127.0.0.1 only, so 127.0.0.2 refuses
      const named = dispatcher({ lookup: async () => ['10.0.0.7', '127.0.0.2', '127.0.0.1'] });
      assert.equal((await named.send(target(`https://receiver.test:${own.port}/hook`), BODY)).ok, true);
      assert.equal(own.requests.length, 1);
    });
  });

  describe('errors', () => {
    it('does not follow a redirect: a 3xx fails and the receiver sees one request', async () => {
      const own = await receiver({ reply: { status: 302, location: '/elsewhere' } });
      for (const status of [301, 302, 307, 308]) {
        own.replyOnce({ status, location: `${own.url}/elsewhere` });
        const outcome = await d.send(target(own.url), BODY);
        assert.equal(outcome.ok, false);
        assert.equal(outcome.reason, 'http_status');
        assert.equal(outcome.status, status);
      }
      assert.equal(own.requests.length, 4);
      assert.ok(own.requests.every((r) => r.path === '/hook'));
    });

    it('fails on 4xx and 5xx', async () => {
      for (const status of [400, 401, 404, 410, 500, 502, 504]) {
        rx.replyOnce({ status, body: 'nope' });
        const outcome = await d.send(target(rx.url), BODY);
        assert.deepEqual(
          { ok: outcome.ok, reason: outcome.reason, status: outcome.status },
          { ok: false, reason: 'http_status', status },
        );
        assert.equal(outcome.retryAfterSeconds, undefined);
      }
    });

    it('passes Retry-After of 429 and 503 on, as seconds or an HTTP date', async () => {
      rx.replyOnce({ status: 429, retryAfter: '30' });
      assert.equal((await d.send(target(rx.url), BODY)).retryAfterSeconds, 30);
      rx.replyOnce({ status: 503, retryAfter: new Date(clock.now() + 120_000).toUTCString() });
      const outcome = await d.send(target(rx.url), BODY);
      assert.equal(outcome.status, 503);
      assert.equal(outcome.retryAfterSeconds, 120);
      rx.replyOnce({ status: 500, retryAfter: '30' });
      assert.equal((await d.send(target(rx.url), BODY)).retryAfterSeconds, undefined);
    });

    it('aborts an attempt without response headers at the deadline', async () => {
      const silent = await receiver({ reply: { hang: true } });
      const quick = dispatcher({ timeoutMs: 300 });
      const outcome = await quick.send(target(silent.url), BODY);
      assert.deepEqual(
        { ok: outcome.ok, reason: outcome.reason, responseTimeMs: outcome.responseTimeMs },
        { ok: false, reason: 'timeout', responseTimeMs: 300 },
      );
      assert.equal(silent.requests.length, 1);
      silent.reply({});
      assert.equal((await quick.send(target(silent.url), BODY)).ok, true);
    });

    it('waiting for a free connection counts against the deadline; a stalled body is bounded', async () => {
      // A gets its headers after 100 ms, then the body stalls: A holds the only connection until ~100 + 300 ms.
      // B, sent at the same time, waits for that connection and reaches its own deadline (300 ms) first.
      const stalling = await receiver({ reply: { delayMs: 100, stallBody: true } });
      const single = dispatcher({ timeoutMs: 300, connectionsPerOrigin: 1 });
      const [a, b] = await Promise.all([
        single.send(target(stalling.url), BODY),
        single.send(target(stalling.url), BODY),
      ]);
      assert.deepEqual({ ok: a!.ok, reason: a!.reason, status: a!.status }, { ok: true, reason: 'ack', status: 200 });
      assert.deepEqual(
        { ok: b!.ok, reason: b!.reason, responseTimeMs: b!.responseTimeMs },
        { ok: false, reason: 'timeout', responseTimeMs: 300 },
      );
      assert.match(b!.message, /no free connection/);
      assert.equal(stalling.requests.length, 1);
    });

    it('the default deadline is 10 s', async () => {
      const { DEFAULT_TIMEOUT_MS } = await import('../../src/delivery/dispatcher.ts');
      assert.equal(DEFAULT_TIMEOUT_MS, 10_000);
    });

    it('a dropped connection or a closed port is a connection failure', async () => {
      const own = await receiver({ reply: { destroy: true } });
      const dropped = await d.send(target(own.url), BODY);
      assert.equal(dropped.ok, false);
      assert.equal(dropped.reason, 'connection');
      const refused = await d.send(target(`https://127.0.0.1:${await closedPort()}/hook`), BODY);
      assert.equal(refused.reason, 'connection');
      assert.match(refused.message, /ECONNREFUSED/);
    });

    it('an unresolvable host is a connection failure', async () => {
      const named = dispatcher({
        lookup: async () => {
          throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' });
        },
      });
      const outcome = await named.send(target('https://nowhere.test/hook'), BODY);
      assert.equal(outcome.reason, 'connection');
      assert.match(outcome.message, /ENOTFOUND/);
    });

    it('never throws: unusable URLs and a closed dispatcher are outcomes', async () => {
      assert.equal((await d.send(target('http://127.0.0.1/hook'), BODY)).reason, 'refused_address');
      assert.equal((await d.send(target('not a url'), BODY)).reason, 'connection');
      const closing = dispatcher();
      await closing.close();
      assert.equal((await closing.send(target(rx.url), BODY)).ok, false);
    });
  });

  describe('security', () => {
    it('refuses an untrusted self-signed certificate', async () => {
      const own = await receiver({ cert: 'self-signed' });
      const outcome = await d.send(target(own.url), BODY);
      assert.equal(outcome.reason, 'tls');
      assert.equal(own.requests.length, 0);
    });

    it('refuses a certificate for another host name', async () => {
      const own = await receiver({ cert: 'wrong-host' });
      const outcome = await d.send(target(own.url), BODY);
      assert.equal(outcome.reason, 'tls');
      assert.match(outcome.message, /ERR_TLS_CERT_ALTNAME_INVALID/);
      assert.equal(own.requests.length, 0);
    });

    it('does not trust the test CA unless it is configured', async () => {
      const strict = dispatcher({ caFile: null });
      const outcome = await strict.send(target(rx.url), BODY);
      assert.equal(outcome.reason, 'tls');
    });

    it('trusts the test CA through NODE_EXTRA_CA_CERTS too', async () => {
      const extra = dispatcher({ caFile: null, extraCaFile: testTls().caFile });
      assert.equal((await extra.send(target(rx.url), BODY)).ok, true);
    });

    it('refuses loopback without the allow-list, before any connection', async () => {
      const own = await receiver();
      const guarded = dispatcher({ allow: [] });
      for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '127.1', '[::ffff:127.0.0.1]']) {
        const outcome = await guarded.send(target(`https://${host}:${own.port}/hook`), BODY);
        assert.equal(outcome.reason, 'refused_address', host);
        assert.equal(outcome.ok, false);
      }
      assert.equal(own.connections, 0);
    });

    it('refuses a host name that resolves to a refused address (localhost)', async () => {
      const own = await receiver();
      const guarded = dispatcher({ allow: [] });
      const outcome = await guarded.send(target(`https://localhost:${own.port}/hook`), BODY);
      assert.equal(outcome.reason, 'refused_address');
      assert.match(outcome.message, /localhost resolves to/);
      assert.equal(own.connections, 0);
    });

    it('refuses a host name that resolves to cloud metadata even with loopback allowed', async () => {
      const own = await receiver();
      const named = dispatcher({ lookup: async () => ['169.254.169.254'] });
      const outcome = await named.send(target(`https://receiver.test:${own.port}/hook`), BODY);
      assert.equal(outcome.reason, 'refused_address');
      assert.equal(own.connections, 0);
    });

    it('never puts the signature secret into an outcome message', async () => {
      const secret = 'super-secret-value';
      const own = await receiver({ cert: 'self-signed' });
      const outcomes = [
        await d.send(target(own.url, { signatureSecret: secret }), BODY),
        await dispatcher({ allow: [] }).send(target(rx.url, { signatureSecret: secret }), BODY),
      ];
      rx.replyOnce({ status: 500, body: secret });
      outcomes.push(await d.send(target(rx.url, { signatureSecret: secret }), BODY));
      for (const outcome of outcomes) assert.ok(!outcome.message.includes(secret), outcome.message);
    });
  });
  describe('delivery log (§X1): the class of each attempt and the start of the answer', () => {
    /** Only the fields the delivery log adds, for comparing whole. */
    const logged = (o: { outcome?: string; responseBody?: Buffer; responseBodyTruncated?: boolean }) => ({
      outcome: o.outcome,
      responseBody: o.responseBody === undefined ? undefined : o.responseBody.toString('utf8'),
      responseBodyTruncated: o.responseBodyTruncated,
    });

    it('SUCCESS: a 2xx with its body; an empty body gives no snippet and no flag at all', async () => {
      rx.replyOnce({ status: 201, body: '{"accepted":1}' });
      const withBody = await d.send(target(rx.url), BODY);
      assert.deepEqual(logged(withBody), {
        outcome: 'SUCCESS',
        responseBody: '{"accepted":1}',
        responseBodyTruncated: undefined,
      });
      assert.equal(withBody.message, 'HTTP 201');
      rx.replyOnce({ status: 204 });
      const empty = await d.send(target(rx.url), BODY);
      assert.equal(empty.outcome, 'SUCCESS');
      assert.equal('responseBody' in empty, false);
      assert.equal('responseBodyTruncated' in empty, false);
    });

    it('HTTP_ERROR: the status and the body, which stays out of the message', async () => {
      rx.replyOnce({ status: 500, body: 'database on fire: secret-marker' });
      const outcome = await d.send(target(rx.url), BODY);
      assert.deepEqual(logged(outcome), {
        outcome: 'HTTP_ERROR',
        responseBody: 'database on fire: secret-marker',
        responseBodyTruncated: undefined,
      });
      assert.equal(outcome.status, 500);
      assert.equal(outcome.message, 'HTTP 500');
      rx.replyOnce({ status: 302, location: '/elsewhere', body: 'moved' });
      assert.deepEqual(logged(await d.send(target(rx.url), BODY)), {
        outcome: 'HTTP_ERROR',
        responseBody: 'moved',
        responseBodyTruncated: undefined,
      });
    });

    it('a 5 KiB answer gives its first 1,024 bytes, truncated, in a buffer of their own', async () => {
      const body = Buffer.from(Array.from({ length: 5 * 1024 }, (_, i) => 97 + (i % 26)));
      for (const status of [200, 503]) {
        rx.replyOnce({ status, body });
        const outcome = await d.send(target(rx.url), BODY);
        assert.equal(outcome.status, status);
        assert.equal(outcome.responseBody!.length, 1024);
        assert.ok(outcome.responseBody!.equals(body.subarray(0, 1024)));
        assert.equal(outcome.responseBody!.buffer.byteLength, 1024, 'no view of a larger buffer');
        assert.equal(outcome.responseBodyTruncated, true);
      }
      // Exactly 1,024 bytes is the whole answer: not truncated.
      rx.replyOnce({ body: body.subarray(0, 1024) });
      const exact = await d.send(target(rx.url), BODY);
      assert.equal(exact.responseBody!.length, 1024);
      assert.equal('responseBodyTruncated' in exact, false);
    });

    it('a body over 64 KiB is still cut off with its connection, its first 1,024 bytes kept', async () => {
      const own = await receiver({ reply: { status: 400, body: 'y'.repeat(100 * 1024) } });
      const outcome = await d.send(target(own.url), BODY);
      assert.deepEqual(
        [outcome.ok, outcome.reason, outcome.outcome, outcome.status],
        [false, 'http_status', 'HTTP_ERROR', 400],
      );
      assert.equal(outcome.responseBody!.toString(), 'y'.repeat(1024));
      assert.equal(outcome.responseBodyTruncated, true);
    });

    it('a multi-byte UTF-8 character cut at byte 1,024 decodes to U+FFFD', async () => {
      // 1,023 ASCII bytes, then '€' (E2 82 AC): byte 1,024 is its first byte only.
      rx.replyOnce({ status: 422, body: `${'a'.repeat(1023)}€ and the rest` });
      const outcome = await d.send(target(rx.url), BODY);
      assert.equal(outcome.responseBody!.length, 1024);
      assert.equal(outcome.responseBody![1023], 0xe2);
      assert.equal(outcome.responseBodyTruncated, true);
      assert.equal(decodeResponseBody(outcome.responseBody), `${'a'.repeat(1023)}\uFFFD`);
      rx.replyOnce({ status: 200, body: 'Grüße ✓' });
      assert.equal(decodeResponseBody((await d.send(target(rx.url), BODY)).responseBody), 'Grüße ✓');
    });

    it('a body that stalls: what arrived by the deadline, truncated; the attempt settles when it did before', async () => {
      const stalling = await receiver({ reply: { status: 200, stallBody: true, body: 'partial' } });
      const quick = dispatcher({ timeoutMs: 300 });
      const started = performance.now();
      const outcome = await quick.send(target(stalling.url), BODY);
      const took = performance.now() - started;
      assert.deepEqual(logged(outcome), { outcome: 'SUCCESS', responseBody: 'partial', responseBodyTruncated: true });
      assert.equal(outcome.ok, true);
      // The headers' answer, then the body's one more deadline (onHeaders refreshes it), as before.
      assert.ok(took >= 250 && took < 2000, `settled after ${Math.round(took)} ms`);
    });

    it('answers with bodies keep reusing keep-alive connections', async () => {
      const own = await receiver({ reply: { body: 'z'.repeat(5 * 1024) } });
      for (let i = 0; i < 6; i++) assert.equal((await d.send(target(own.url), BODY)).responseBodyTruncated, true);
      assert.ok(own.connections <= 2, `connections: ${own.connections}`);
    });

    it('TIMEOUT: no headers within the deadline, no snippet', async () => {
      const silent = await receiver({ reply: { hang: true } });
      const outcome = await dispatcher({ timeoutMs: 300 }).send(target(silent.url), BODY);
      assert.deepEqual([outcome.reason, outcome.outcome, outcome.status], ['timeout', 'TIMEOUT', undefined]);
      assert.equal('responseBody' in outcome, false);
      assert.equal('responseBodyTruncated' in outcome, false);
    });

    it('CONNECTION_REFUSED: a closed port', async () => {
      const outcome = await d.send(target(`https://127.0.0.1:${await closedPort()}/hook`), BODY);
      assert.deepEqual([outcome.reason, outcome.outcome], ['connection', 'CONNECTION_REFUSED']);
      assert.equal('responseBody' in outcome, false);
    });

    it('CONNECTION_RESET: the receiver drops the connection without answering', async () => {
      const own = await receiver({ reply: { destroy: true } });
      const outcome = await d.send(target(own.url), BODY);
      assert.deepEqual([outcome.reason, outcome.outcome], ['connection', 'CONNECTION_RESET'], outcome.message);
    });

    it('DNS_ERROR: a host name that does not resolve', async () => {
      const named = dispatcher({
        lookup: async () => {
          throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), {
            code: 'ENOTFOUND',
            syscall: 'getaddrinfo',
          });
        },
      });
      const outcome = await named.send(target('https://nowhere.test/hook'), BODY);
      assert.deepEqual([outcome.reason, outcome.outcome], ['connection', 'DNS_ERROR']);
    });

    it('TLS_ERROR: a receiver whose CA is not trusted, a self-signed one, one for another host', async () => {
      const untrusted = await dispatcher({ caFile: null }).send(target(rx.url), BODY);
      assert.deepEqual([untrusted.reason, untrusted.outcome], ['tls', 'TLS_ERROR'], untrusted.message);
      for (const cert of ['self-signed', 'wrong-host'] as const) {
        const own = await receiver({ cert });
        const outcome = await d.send(target(own.url), BODY);
        assert.deepEqual([outcome.reason, outcome.outcome], ['tls', 'TLS_ERROR'], cert);
        assert.equal('responseBody' in outcome, false);
        assert.equal(own.requests.length, 0);
      }
    });

    it('BLOCKED_ADDRESS: the SSRF guard refuses, no connection, no snippet', async () => {
      const own = await receiver({ reply: { status: 200, body: 'never read' } });
      const guarded = dispatcher({ allow: [] });
      for (const url of [own.url, `https://localhost:${own.port}/hook`]) {
        const outcome = await guarded.send(target(url), BODY);
        assert.deepEqual([outcome.reason, outcome.outcome], ['refused_address', 'BLOCKED_ADDRESS'], url);
        assert.equal('responseBody' in outcome, false);
        assert.equal('responseBodyTruncated' in outcome, false);
      }
      assert.equal(own.connections, 0);
      assert.equal((await d.send(target('http://127.0.0.1/hook'), BODY)).outcome, 'BLOCKED_ADDRESS');
    });

    it('outcomes that never reached a receiver are classed too', async () => {
      assert.equal((await d.send(target('not a url'), BODY)).outcome, 'OTHER');
      const closing = dispatcher();
      await closing.close();
      assert.equal((await closing.send(target(rx.url), BODY)).outcome, 'OTHER');
      // No free connection within the deadline: a timeout.
      const stalling = await receiver({ reply: { delayMs: 100, stallBody: true } });
      const single = dispatcher({ timeoutMs: 300, connectionsPerOrigin: 1 });
      const [, waited] = await Promise.all([
        single.send(target(stalling.url), BODY),
        single.send(target(stalling.url), BODY),
      ]);
      assert.deepEqual([waited!.reason, waited!.outcome], ['timeout', 'TIMEOUT']);
      assert.match(waited!.message, /no free connection/);
    });
  });
});
