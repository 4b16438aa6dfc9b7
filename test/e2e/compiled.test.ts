// Production runs the JavaScript that `npm run build` (npm's `prepare`) compiles into dist/: this test starts
// `bin/sensorcloud.js serve` from that build, as `npm start` does, and sees an event published over the API
// pushed, signed, to an HTTPS receiver by the compiled delivery engine and its dispatcher thread, and serves the
// built web console.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startReceiver } from '../helpers/receiver.ts';
import { CLI_COMMAND, ROOT, assertServiceBuilt, freePort } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { until } from '../helpers/until.ts';

describe('happy', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-compiled-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('the compiled service starts without tsx and pushes a published event', { timeout: 120_000 }, async () => {
    assertServiceBuilt();
    const receiver = await startReceiver();
    const port = await freePort();
    const env = {
      ...process.env,
      PORT: String(port),
      SENSORCLOUD_DATA_DIR: dataDir,
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
      SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
      LOG_LEVEL: 'error',
    };
    // No --import: nothing but node and the compiled files, and the environment of the test run.
    const child = spawn(CLI_COMMAND[0]!, [...CLI_COMMAND.slice(1), 'serve'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      await until(
        'the compiled service to start',
        () => {
          assert.equal(child.exitCode, null, `the compiled service did not start: ${out}`);
          return /listening on/.test(out);
        },
        30_000,
      );
      const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
      const auth = `Basic ${Buffer.from(`${boot.serviceAccount.keyId}:${boot.serviceAccount.secret}`).toString('base64')}`;
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`http://127.0.0.1:${port}/v2/${path}`, {
          method,
          headers: { authorization: auth },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const json = (await res.json()) as any;
        assert.equal(res.status, 200, JSON.stringify(json));
        return json;
      };
      await call('POST', `${boot.project}/dataconnectors`, {
        type: 'HTTP_PUSH',
        httpConfig: { url: receiver.url, signatureSecret: 's3cret' },
      });
      const device = await call('POST', `${boot.project}/devices`, { type: 'touch' });
      await call('POST', `${device.name}:publish`, { touch: {} });
      await until('a push to arrive', () => receiver.requests.length > 0, 30_000);
      const push = receiver.requests[0]!;
      assert.equal(JSON.parse(push.body.toString()).event.targetName, device.name);
      assert.ok(push.headers['x-service-signature'], 'the push is signed');
      // The compiled service serves the console that `npm run build` made, deep links included.
      const page = await fetch(`http://127.0.0.1:${port}/projects/x/devices`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js"><\/script>/);
      assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
      await receiver.close();
    }
  });
});
