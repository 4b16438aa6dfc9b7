// `sensorcloud admin rotate-master-key` on PostgreSQL: refused while a serve process is connected; afterwards every
// secret opens under the new key, and a process still given the old key refuses to start.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestDatabase } from '../helpers/postgres.ts';
import { cleanEnv, runCli } from '../operator/cli-process.ts';
import { basic, call, startCluster } from './helpers.ts';

describe('master key rotation on PostgreSQL', () => {
  it('waits for every serve process to stop, then seals every secret again; the old key no longer starts a process', {
    timeout: 180_000,
  }, async () => {
    const db = await createTestDatabase();
    const cluster = await startCluster(db.url, 1);
    try {
      const { project, serviceAccount } = cluster.boot;
      const admin = basic(serviceAccount.keyId, serviceAccount.secret);
      const created = await call(cluster.nodes[0]!.base, admin, 'POST', `/${project}/dataconnectors`, {
        type: 'HTTP_PUSH',
        httpConfig: { url: 'https://receiver.example/hook', signatureSecret: 'kept across rotation' },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
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
      assert.match(rotated.stdout, /1 signature secrets, the cluster's master key check\./);
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
    } finally {
      await cluster.close();
      await db.drop();
    }
  });
});
