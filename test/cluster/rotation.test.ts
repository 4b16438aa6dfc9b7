// `sensorcloud admin rotate-master-key` on PostgreSQL: refused while a serve process is connected; afterwards every
// secret opens under the new key (a key's, a connector's, a rule's webhook's and a queued webhook notification's), and
// a process still given the old key refuses to start.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { verifySignature } from '../../src/receiver/verify-signature.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { cleanEnv, runCli } from '../operator/cli-process.ts';
import { basic, call, startCluster, until } from './helpers.ts';

describe('master key rotation on PostgreSQL', () => {
  it('waits for every serve process to stop, then seals every secret again; the old key no longer starts a process', {
    timeout: 180_000,
  }, async () => {
    const db = await createTestDatabase();
    const cluster = await startCluster(db.url, 1);
    // A rule's signed webhook, whose first notification is refused: it stays queued across the rotation.
    const receiver = await startReceiver({ reply: { status: 200 } });
    receiver.replyOnce({ status: 503 });
    const ruleSecret = 'rule webhook secret kept across rotation';
    try {
      const { project, serviceAccount } = cluster.boot;
      const admin = basic(serviceAccount.keyId, serviceAccount.secret);
      const ok = async (method: string, path: string, body?: unknown) => {
        const res = await call(cluster.nodes[0]!.base, admin, method, path, body);
        assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(res.body)}`);
        return res.body;
      };
      const created = await call(cluster.nodes[0]!.base, admin, 'POST', `/${project}/dataconnectors`, {
        type: 'HTTP_PUSH',
        httpConfig: { url: 'https://receiver.example/hook', signatureSecret: 'kept across rotation' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const rule = await ok('POST', `/${project}/rules`, {
        displayName: 'rotation',
        trigger: { field: 'touch' },
        escalationLevels: [
          { actions: [{ type: 'WEBHOOK', webhook: { url: receiver.url, signatureSecret: ruleSecret } }] },
        ],
      });
      const device = await ok('POST', `/${project}/devices`, { type: 'touch' });
      await ok('POST', `/${device.name}:publish`, { touch: {} });
      const [firstTry] = await receiver.waitFor(1, 20_000);
      await verifySignature(firstTry!.body, firstTry!.headers, ruleSecret);
      // Recorded before the process stops (stopped mid-attempt, the row would stay leased for a minute).
      await until('the refused notification to be recorded', async () => {
        const [alert] = (await ok('GET', `/${project}/alerts`)).alerts;
        return alert?.notifications[0]?.outcome === 'RETRYING' && alert.notifications[0].error !== '';
      });
      const dataDir = cluster.nodes[0]!.dataDir;
      const next = join(dataDir, 'next.key');
      const nextHex = randomBytes(32).toString('hex');
      writeFileSync(next, `${nextHex}\n`, { mode: 0o600 });
      const env = (keyFile = cluster.keyFile) =>
        cleanEnv({
          SENSORCLOUD_DATA_DIR: dataDir,
          SENSORCLOUD_DATABASE_URL: db.url,
          SENSORCLOUD_MASTER_KEY_FILE: keyFile,
          LOG_LEVEL: 'error',
        });

      const refused = await runCli(['admin', 'rotate-master-key', '--new-key-file', next], env());
      assert.equal(refused.code, 2);
      assert.match(
        refused.stderr,
        /^error: serve processes are connected to the database \(\d+ connections\): stop every one of them first\n$/,
      );

      await cluster.kill(0, 'SIGTERM');
      const rotated = await runCli(['admin', 'rotate-master-key', '--new-key-file', next], env());
      assert.equal(rotated.code, 0, rotated.stderr);
      // The connector's, the rule's webhook's and the queued notification's.
      assert.match(rotated.stdout, /3 signature secrets, the cluster's master key check\./);
      assert.equal(readFileSync(cluster.keyFile, 'utf8'), `${nextHex}\n`);

      // A machine that was not given the new key: its process refuses to start, naming the key file.
      const stale = await runCli(['serve'], { ...env(`${cluster.keyFile}.previous`), PORT: '0', HOST: '127.0.0.1' });
      assert.equal(stale.code, 2, stale.stderr);
      assert.match(stale.stderr, /is not the one this database's secrets are sealed with/);

      const node = await cluster.start(0);
      assert.equal(
        (await call(node.base, admin, 'GET', `/${project}`)).status,
        200,
        'the key secret opens under the new key',
      );
      const connector = await call(node.base, admin, 'GET', `/${created.body.name}`);
      assert.equal(connector.body.httpConfig.signatureSecret, 'kept across rotation');
      const read = await call(node.base, admin, 'GET', `/${rule.name}`);
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.equal(read.body.escalationLevels[0].actions[0].webhook.signatureSecret, ruleSecret);
      // The queued notification is sent again, signed with the secret it was queued with.
      const [, sent] = await receiver.waitFor(2, 30_000);
      assert.deepEqual(sent!.body, firstTry!.body, 'the notification queued before the rotation');
      await verifySignature(sent!.body, sent!.headers, ruleSecret);
    } finally {
      await receiver.close();
      await cluster.close();
      await db.drop();
    }
  });
});
