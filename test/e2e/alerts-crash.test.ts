// Alerts across a crash: the real service (`sensorcloud serve`) is SIGKILLed while a rule's trigger delay runs, and
// again while its alert waits to escalate, and restarted on the same data dir each time. The timers are rows in the
// store: the alert still triggers when its delay is over, escalates when its time comes, and each notification
// reaches the webhook receiver once, signed, with its transition.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startReceiver, type ReceivedRequest } from '../helpers/receiver.ts';
import { freePort, serve } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { sleep, until } from '../helpers/until.ts';

describe('happy', () => {
  it('a SIGKILL during a trigger delay and during an escalation loses no transition and sends none twice', {
    timeout: 120_000,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-alerts-crash-'));
    const received: ReceivedRequest[] = [];
    const receiver = await startReceiver({
      reply: (req) => {
        received.push(req);
        return { status: 200 };
      },
    });
    const transitions = () => received.map((r) => r.headers['x-sensorcloud-alert-transition']);
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
      const kill = async () => {
        child.kill('SIGKILL');
        await once(child, 'exit');
      };

      const device = await call('POST', `/${boot.project}/devices`, { type: 'temperature' });
      await call('POST', `/${boot.project}/rules`, {
        displayName: 'Freezer',
        trigger: { field: 'temperature', range: { upper: -18, type: 'OUTSIDE' } },
        triggerDelay: '4s',
        escalationLevels: [
          {
            displayName: 'staff',
            actions: [
              {
                type: 'WEBHOOK',
                webhook: { url: `${receiver.url.replace(/\/hook$/, '')}/alerts`, signatureSecret: 's' },
              },
            ],
            escalateAfter: '4s',
          },
          {
            displayName: 'manager',
            actions: [{ type: 'WEBHOOK', webhook: { url: `${receiver.url.replace(/\/hook$/, '')}/alerts` } }],
          },
        ],
      });
      await call('POST', `/${device.name}:publish`, { temperature: { value: -5 } });
      // Killed 1 s into the 4 s delay: nothing was sent yet.
      await sleep(1000);
      await kill();
      assert.deepEqual(transitions(), []);
      child = await serve(env);
      await until('the TRIGGERED webhook after the delay', () => transitions().length >= 1, 20_000);
      assert.deepEqual(transitions(), ['TRIGGERED']);
      assert.ok(received[0]!.headers['x-service-signature'], 'signed');
      const body = JSON.parse(received[0]!.body.toString('utf8'));
      assert.equal(body.alert.state, 'TRIGGERED');
      assert.equal(body.alert.targetName, device.name);
      // Killed while the alert waits 4 s to escalate.
      await sleep(1000);
      await kill();
      child = await serve(env);
      await until('the ESCALATED webhook', () => transitions().length >= 2, 20_000);
      // Time for anything sent twice to show.
      await sleep(3000);
      assert.deepEqual(transitions(), ['TRIGGERED', 'ESCALATED']);
      const [alert] = (await call('GET', `/${boot.project}/alerts`)).alerts;
      assert.equal(alert.escalationLevel, 1);
      assert.deepEqual(
        alert.notifications.map((n: any) => [n.level, n.outcome]),
        [
          [0, 'SENT'],
          [1, 'SENT'],
        ],
      );
      child.kill('SIGTERM');
      await once(child, 'exit');
    } finally {
      await receiver.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
