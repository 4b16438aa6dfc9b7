// The receiver examples, run as their users run them. The Node ones (node:http, fastify, express) import the kit
// as `sensorcloud/receiver` (resolved to the sources through the package's `sensorcloud-source` export condition)
// and get pushes made by the delivery engine's own body and header code; the Python (PyJWT, Debian's python3-jwt)
// and Go (standard library) ones get real pushes from a running service's delivery engine over HTTPS. Each runs as
// a receiver rolling its secret over (PREVIOUS_SIGNATURE_SECRET, extensions §X3) and takes every push of a rotation.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildPushHeaders, pushUserAgent } from '../../src/delivery/push-headers.ts';
import { buildPushBody } from '../../src/delivery/push-body.ts';
import { signBody } from '../../src/delivery/signing.ts';
import { PREVIOUS_SIGNATURE_HEADER } from '../../src/receiver/index.ts';
import { startService, waitFor, type Service } from '../cli/harness.ts';
import { ROOT } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';

const SECRET = 'example-receiver-secret';
/** The receivers roll from RETIRED to SECRET: they hold both. ROTATED is a secret after SECRET, unknown to them. */
const RETIRED = 'example-receiver-secret-retired';
const ROTATED = 'example-receiver-secret-rotated';
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

interface Example {
  url: string;
  output(): string;
}

/** Starts an example receiver on a free port; resolves with its URL once it says where it listens. */
async function startExample(command: string, args: string[], env: Record<string, string> = {}): Promise<Example> {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', SIGNATURE_SECRET: SECRET, PREVIOUS_SIGNATURE_SECRET: RETIRED, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await waitFor(
    `${args.join(' ')} to listen`,
    () => {
      assert.equal(child.exitCode, null, `the example exited: ${out}`);
      return /listening on (\S+)/.exec(out)?.[1];
    },
    30_000,
  );
  return { url, output: () => out };
}

const EVENT = {
  eventId: 'cvq2b1r0l4l9s3f2a9i0',
  targetName: 'projects/cvq2b1b0l4l9s3f2a9g0/devices/emucvq2b1b0l4l9s3f2a9h0',
  eventType: 'touch',
  data: { touch: { updateTime: '2025-06-01T12:00:00.250000Z' } },
  timestamp: '2025-06-01T12:00:00.250000Z',
};
const DEVICE = {
  id: 'emucvq2b1b0l4l9s3f2a9h0',
  projectId: 'cvq2b1b0l4l9s3f2a9g0',
  type: 'touch',
  productNumber: '100110',
  labels: { name: 'Door' },
};

/**
 * A push exactly as the engine makes it (its body and header code), signed now with `secret`, and during a
 * rotation's overlap also with the `previous` secret in X-Service-Signature-Previous (the same iat and jti).
 */
function enginePush(secret = SECRET, previous?: string): { body: Buffer; headers: Record<string, string> } {
  const body = buildPushBody(JSON.stringify(EVENT), DEVICE, ['name']);
  const iat = Math.floor(Date.now() / 1000);
  const jti = 'cvq2b1r0l4l9s3f2a9j0';
  const headers = buildPushHeaders({ headers: {}, signatureSecret: secret }, body, pushUserAgent(), iat, () => jti);
  if (previous !== undefined) headers[PREVIOUS_SIGNATURE_HEADER] = signBody(body, previous, iat, jti);
  return { body, headers };
}

/** What a receiver holding [SECRET, RETIRED] answers to each push of a rotation, and to the next one it lacks. */
async function checkRotation(
  send: (body: Buffer, headers: Record<string, string>) => Promise<{ status: number; text: string }>,
) {
  const overlap = enginePush(ROTATED, SECRET);
  // Each is a push of the same event, so an accepted one is answered 200 as a duplicate, once verified.
  for (const [what, push] of [
    ['signed with the retired secret (before the connector was rotated)', enginePush(RETIRED)],
    ['during the overlap of the rotation RETIRED → SECRET', enginePush(SECRET, RETIRED)],
    ['during the overlap of the next rotation SECRET → ROTATED (X-Service-Signature-Previous verifies)', overlap],
  ] as const)
    assert.equal((await send(push.body, push.headers)).status, 200, what);
  const changed = Buffer.from(overlap.body);
  changed[changed.length - 3] ^= 1;
  assert.deepEqual(await send(changed, overlap.headers), { status: 400, text: 'checksum_mismatch' });
  const afterOverlap = enginePush(ROTATED);
  assert.deepEqual(await send(afterOverlap.body, afterOverlap.headers), { status: 400, text: 'signature' });
}

async function post(
  url: string,
  body: Buffer | string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  return { status: res.status, text: (await res.text()).trim() };
}

const NODE_EXAMPLES = ['node-http-receiver.mjs', 'fastify-receiver.mjs', 'express-receiver.mjs'];

describe('happy', () => {
  for (const file of NODE_EXAMPLES) {
    it(`${file}: verifies a push, acknowledges a duplicate, rejects a changed byte and a missing signature; rolls its secret over`, {
      timeout: 60_000,
    }, async () => {
      const example = await startExample(process.execPath, [
        '--conditions=sensorcloud-source',
        '--import',
        'tsx',
        `examples/${file}`,
      ]);
      const push = enginePush();
      assert.deepEqual(await post(example.url, push.body, push.headers), { status: 200, text: '' });
      assert.equal((await post(example.url, push.body, push.headers)).status, 200);
      const changed = Buffer.from(push.body);
      changed[changed.length - 3] ^= 1;
      assert.deepEqual(await post(example.url, changed, push.headers), { status: 400, text: 'checksum_mismatch' });
      assert.deepEqual(await post(example.url, push.body, { 'Content-Type': 'application/json' }), {
        status: 400,
        text: 'missing_header',
      });
      await waitFor('the example to log', () => (/rejected: missing_header/.test(example.output()) ? true : undefined));
      assert.match(
        example.output(),
        new RegExp(
          `verified ${EVENT.eventId} touch from ${DEVICE.id} \\{"name":"Door"\\}\\nduplicate ${EVENT.eventId}\\nrejected: checksum_mismatch`,
        ),
      );
      await checkRotation((body, headers) => post(example.url, body, headers));
    });
  }
});

describe('happy: Python and Go receivers get real pushes from the delivery engine', () => {
  let s: Service;
  const examples: Record<string, Example> = {};
  before(async () => {
    const tls = testTls();
    s = await startService({ SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8', SENSORCLOUD_CA_FILE: tls.caFile });
    const certs = { CERT_FILE: join(tls.dir, 'server.crt'), KEY_FILE: join(tls.dir, 'server.key') };
    // Debian's python3 (with python3-jwt), not a python3 earlier on PATH without PyJWT.
    examples.python = await startExample('/usr/bin/python3', ['examples/python/receiver.py'], certs);
    const binary = join(mkdtempSync(join(tmpdir(), 'sensorcloud-go-')), 'receiver');
    execFileSync('go', ['build', '-o', binary, 'examples/go/receiver.go'], {
      cwd: ROOT,
      env: { ...process.env, GOCACHE: join(tmpdir(), 'sensorcloud-go-cache') },
      stdio: 'pipe',
    });
    examples.go = await startExample(binary, [], certs);
  });

  for (const language of ['python', 'go']) {
    it(`${language}: a push from the engine verifies; a changed byte is refused with 400; it rolls its secret over`, {
      timeout: 60_000,
    }, async () => {
      const example = examples[language]!;
      assert.match(example.url, /^https:\/\/127\.0\.0\.1:\d+\/hook$/);
      const connector = await s.api('POST', `${s.boot.project}/dataconnectors`, {
        type: 'HTTP_PUSH',
        labels: ['name'],
        httpConfig: { url: example.url, signatureSecret: SECRET },
      });
      assert.equal(connector.status, 200, JSON.stringify(connector.body));
      const device = await s.api('POST', `${s.boot.project}/devices`, { type: 'touch', labels: { name: language } });
      assert.equal((await s.api('POST', `${device.body.name}:publish`, { touch: {} })).status, 200);
      const history = await s.api('GET', `${device.body.name}/events`);
      const eventId = history.body.events[0].eventId as string;
      await waitFor(`the ${language} receiver to verify ${eventId}`, () =>
        example
          .output()
          .includes(`verified ${eventId} touch from ${device.body.name.split('/').pop()} {"name":"${language}"}`)
          ? true
          : undefined,
      );
      const metrics = await waitFor('the acknowledged push in the metrics', async () => {
        const m = (await s.api('GET', `${connector.body.name}:metrics`)).body.metrics;
        return m.successCount >= 1 ? m : undefined;
      });
      assert.equal(metrics.errorCount, 0);

      // The same kind of request with one byte changed, straight to the receiver.
      const push = enginePush();
      const changed = Buffer.from(push.body);
      changed[changed.length - 3] ^= 1;
      const send = (body: Buffer, headers: Record<string, string>) =>
        new Promise<{ status: number; text: string }>((resolve, reject) => {
          const req = httpsRequest(example.url, { method: 'POST', headers, ca: testTls().caCert }, (res) => {
            let text = '';
            res.on('data', (d: Buffer) => (text += d.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text: text.trim() }));
          });
          req.on('error', reject);
          req.end(body);
        });
      assert.deepEqual(await send(changed, push.headers), { status: 400, text: 'checksum_mismatch' });
      await checkRotation(send);
      assert.equal((await s.api('DELETE', connector.body.name)).status, 200);
    });
  }
});
