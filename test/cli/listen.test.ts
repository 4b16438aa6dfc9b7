// `sensorcloud listen` forwards each event exactly as a data connector pushes it: a local receiver verifies every
// forward with the receiver kit, and its bodies are byte for byte the bodies the service's delivery engine pushed
// for the same events to an HTTPS receiver (a real connector with the same label keys), with the same headers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { verifySignature } from '../../src/receiver/index.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { ROOT } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { cliCommand, envCredentials, startService, waitFor, type Service } from './harness.ts';

let s: Service;
let engineReceiver: Receiver;

let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    s = await startService({
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
    });
    engineReceiver = await startReceiver();
  })());

interface Forwarded {
  headers: IncomingHttpHeaders;
  body: Buffer;
  verified: boolean;
  reason?: string;
}

after(async () => {
  await engineReceiver?.close();
});

describe('happy', () => {
  before(ready);

  it("forwards with the engine's body and headers, signed with a generated secret the receiver kit verifies", {
    timeout: 60_000,
  }, async () => {
    // A real connector to an HTTPS receiver, for the engine's pushes of the same events.
    const connector = await s.api('POST', `${s.boot.project}/dataconnectors`, {
      type: 'HTTP_PUSH',
      labels: ['name'],
      httpConfig: { url: engineReceiver.url, headers: { 'X-Api-Key': 'k3y' }, signatureSecret: 'engine-secret' },
    });
    assert.equal(connector.status, 200, JSON.stringify(connector.body));

    // The local receiver: verifies each forward with the kit, answers 200 (or 400 with the reason).
    let secret = '';
    const forwarded: Forwarded[] = [];
    const local = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        verifySignature(body, req.headers, secret).then(
          () => {
            forwarded.push({ headers: req.headers, body, verified: true });
            res.writeHead(200).end();
          },
          (err) => {
            forwarded.push({ headers: req.headers, body, verified: false, reason: err.reason });
            res.writeHead(400).end();
          },
        );
      });
    });
    local.listen(0, '127.0.0.1');
    await once(local, 'listening');
    const port = (local.address() as AddressInfo).port;

    const listen = spawn(
      cliCommand()[0]!,
      [
        ...cliCommand().slice(1),
        'listen',
        '--forward-to',
        `http://127.0.0.1:${port}/hook`,
        '--label-keys',
        'name',
        '--header',
        'X-Api-Key: k3y',
        '--count',
        '3',
        '--json',
      ],
      { cwd: ROOT, env: { ...s.cliEnv, ...envCredentials(s) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    listen.stdout.on('data', (d: Buffer) => (out += d.toString()));
    listen.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number>((resolve) => listen.once('close', (code) => resolve(code ?? -1)));
    try {
      await waitFor('listen to open the stream', () => (/forwarding events of/.test(err) ? true : undefined));
      secret = /signature secret: ([0-9a-f]{64})\n/.exec(err)?.[1] ?? '';
      assert.notEqual(secret, '', `the generated secret is printed once on stderr: ${err}`);

      const device = await s.api('POST', `${s.boot.project}/devices`, {
        type: 'temperature',
        labels: { name: 'Room 4' },
      });
      // Each step after the previous forward, so the labels each body should carry are known.
      assert.equal((await s.api('POST', `${device.body.name}:publish`, { temperature: { value: 21.5 } })).status, 200);
      await waitFor('the first forward', () => (forwarded.length >= 1 ? true : undefined));
      assert.equal((await s.api('POST', `${device.body.name}/labels`, { key: 'room', value: '4' })).status, 200);
      await waitFor('the second forward', () => (forwarded.length >= 2 ? true : undefined));
      assert.equal((await s.api('PATCH', `${device.body.name}/labels/name`, { value: 'Kitchen' })).status, 200);
      assert.equal(await exited, 0, err);
    } finally {
      listen.kill('SIGKILL');
      local.close();
    }

    // One NDJSON line per forward: 200 and a latency.
    const lines = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => [l.eventType, l.status]),
      [
        ['temperature', 200],
        ['labelsChanged', 200],
        ['labelsChanged', 200],
      ],
    );
    for (const l of lines) assert.equal(typeof l.latencyMs, 'number');
    assert.deepEqual(
      forwarded.map((f) => f.verified),
      [true, true, true],
    );
    assert.equal(err.split(secret).length - 1, 1, 'the generated secret is printed exactly once');

    // The engine pushed the same three events: the same bytes (labels as after each change), the same headers.
    const pushes = await engineReceiver.waitFor(3, 15_000);
    const byEvent = new Map(pushes.map((p) => [JSON.parse(p.body.toString()).event.eventId as string, p]));
    for (const f of forwarded) {
      const eventId = JSON.parse(f.body.toString()).event.eventId as string;
      const push = byEvent.get(eventId);
      assert.ok(push, `the engine pushed ${eventId} too`);
      assert.equal(f.body.toString('utf8'), push.body.toString('utf8'));
      for (const name of ['content-type', 'user-agent', 'x-api-key', 'content-length'])
        assert.equal(f.headers[name], push.headers[name], name);
    }
    const labels = forwarded.map((f) => JSON.parse(f.body.toString()).labels);
    assert.deepEqual(labels, [{ name: 'Room 4' }, { name: 'Room 4' }, { name: 'Kitchen' }]);
  });
});

describe('errors', () => {
  before(ready);

  it('an endpoint that refuses is reported per event, and a wrong secret fails verification', {
    timeout: 60_000,
  }, async () => {
    const seen: string[] = [];
    const local = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        verifySignature(Buffer.concat(chunks), req.headers, 'the receiver expects another secret').then(
          () => res.writeHead(200).end(),
          (e) => {
            seen.push(e.reason);
            res.writeHead(400).end();
          },
        );
      });
    });
    local.listen(0, '127.0.0.1');
    await once(local, 'listening');
    const port = (local.address() as AddressInfo).port;
    const listen = spawn(
      cliCommand()[0]!,
      [
        ...cliCommand().slice(1),
        'listen',
        '--forward-to',
        `http://127.0.0.1:${port}/hook`,
        '--secret',
        'listen-secret',
        '--events',
        'touch',
        '--count',
        '1',
      ],
      { cwd: ROOT, env: { ...s.cliEnv, ...envCredentials(s) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    listen.stdout.on('data', (d: Buffer) => (out += d.toString()));
    listen.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number>((resolve) => listen.once('close', (code) => resolve(code ?? -1)));
    try {
      await waitFor('listen to open the stream', () => (/forwarding events of/.test(err) ? true : undefined));
      const device = await s.api('POST', `${s.boot.project}/devices`, { type: 'touch' });
      // Filtered out by --events: not forwarded, not counted.
      await s.api('POST', `${device.body.name}:publish`, { batteryStatus: { percentage: 50 } });
      await s.api('POST', `${device.body.name}:publish`, { touch: {} });
      assert.equal(await exited, 0, err);
    } finally {
      listen.kill('SIGKILL');
      local.close();
    }
    assert.deepEqual(seen, ['signature']);
    assert.match(out, /^\S+\s+touch\s+emu[0-9a-v]{20}\s+→ 400\s+\d+ ms\n$/);
    assert.ok(!err.includes('listen-secret') && !out.includes('listen-secret'), 'a given secret is never printed');
  });
});
