// Crash safety: the real service (`sensorcloud serve`) is SIGKILLed while pushes are in flight and restarted on
// the same data dir; every stored event still reaches the receiver with a 2xx (at least once), in bounded time.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startReceiver } from '../helpers/receiver.ts';
import { freePort, serve } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { until } from '../helpers/until.ts';

const EVENTS = 60;

describe('happy', () => {
  it('delivers every event at least once across a SIGKILL and restart', { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-crash-'));
    const acked = new Set<string>();
    let phase: 'before' | 'after' = 'before';
    // Before the crash every other request hangs, so attempts are certainly in flight when the process dies.
    const receiver = await startReceiver({
      reply: (req, index) => {
        if (phase === 'before' && index % 2 === 1) return { hang: true };
        acked.add(JSON.parse(req.body.toString('utf8')).event.eventId);
        return { status: 200 };
      },
    });
    try {
      const port = await freePort();
      const env = {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        SENSORCLOUD_DATA_DIR: dataDir,
        SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
        SENSORCLOUD_CA_FILE: testTls().caFile,
        SENSORCLOUD_RATE_LIMIT: 'off',
        SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
        // On PostgreSQL a dead process's rows come back when their lease ends (60 s by default), not at the restart:
        // the shortest lease keeps that well inside the wait below. SQLite releases them at the next start.
        SENSORCLOUD_DELIVERY_LEASE: '15s',
        LOG_LEVEL: 'error',
      };
      let child = await serve(env);
      const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
      const base = `http://127.0.0.1:${port}/v2`;
      const auth = `Basic ${Buffer.from(`${boot.serviceAccount.keyId}:${boot.serviceAccount.secret}`).toString('base64')}`;
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: { authorization: auth, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const json = await res.json();
        assert.equal(res.status, 200, JSON.stringify(json));
        return json as any;
      };

      await call('POST', `/${boot.project}/dataconnectors`, { type: 'HTTP_PUSH', httpConfig: { url: receiver.url } });
      const device = await call('POST', `/${boot.project}/devices`, { type: 'touch' });
      for (let i = 0; i < EVENTS; i++) await call('POST', `/${device.name}:publish`, { touch: {} });
      await until('attempts in flight', () => receiver.requests.length >= 10, 30_000);
      child.kill('SIGKILL');
      await once(child, 'exit');
      assert.ok(acked.size < EVENTS, 'some events were still unacknowledged at the crash');

      phase = 'after';
      child = await serve(env);
      const history = await call('GET', `/${device.name}/events?pageSize=1000`);
      const stored: string[] = history.events.map((e: any) => e.eventId);
      assert.equal(stored.length, EVENTS);
      // In-flight attempts of the dead process were leased: released at the restart (SQLite) or when the lease ends.
      await until('every event acknowledged', () => stored.every((id) => acked.has(id)), 60_000);
      child.kill('SIGTERM');
      await once(child, 'exit');
    } finally {
      await receiver.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
