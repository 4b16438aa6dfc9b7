// `sensorcloud admin reset-password` and `admin create-key` on PostgreSQL while the cluster serves: the change is a
// write like any other, and every process takes it at its next request (the authentication cache checks the version
// the write moves), so no process has to stop. Only rotate-master-key waits for them (rotation.test.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestDatabase } from '../helpers/postgres.ts';
import { passwordGrant } from '../helpers/serve-process.ts';
import { cleanEnv, runCli } from '../operator/cli-process.ts';
import { basic, call, startCluster } from './helpers.ts';

describe('admin commands on a running cluster', () => {
  it('a new password and a new key work at every process at once, none of them stopped', {
    timeout: 180_000,
  }, async () => {
    const db = await createTestDatabase();
    const cluster = await startCluster(db.url, 2);
    // The operator's own data dir: the processes' are locked by them.
    const adminDir = mkdtempSync(join(tmpdir(), 'sensorcloud-admin-live-'));
    try {
      const boot = JSON.parse(readFileSync(join(cluster.nodes[0]!.dataDir, 'bootstrap.json'), 'utf8')) as {
        project: string;
        user: { email: string; password: string };
        serviceAccount: { email: string };
      };
      const env = cleanEnv({
        SENSORCLOUD_DATA_DIR: adminDir,
        SENSORCLOUD_DATABASE_URL: db.url,
        SENSORCLOUD_MASTER_KEY_FILE: cluster.keyFile,
        LOG_LEVEL: 'error',
      });
      const [a, b] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
      // The password the first start made works at both before.
      for (const node of [a, b]) assert.equal(await passwordGrant(node.base, boot.user.email, boot.user.password), 200);

      const chosen = 'a password chosen while it runs';
      const reset = await runCli(['admin', 'reset-password', boot.user.email, '--password-stdin'], env, {
        input: `${chosen}\n`,
      });
      assert.equal(reset.code, 0, reset.stderr);
      for (const node of [a, b]) {
        assert.equal(await passwordGrant(node.base, boot.user.email, chosen), 200, node.describe());
        assert.equal(
          await passwordGrant(node.base, boot.user.email, boot.user.password),
          400,
          'the old password is refused at once',
        );
      }

      const created = await runCli(
        ['admin', 'create-key', '--service-account', boot.serviceAccount.email, '--quiet'],
        env,
      );
      assert.equal(created.code, 0, created.stderr);
      const [keyId, secret] = created.stdout.trim().split('\t') as [string, string];
      for (const node of [a, b])
        assert.equal(
          (await call(node.base, basic(keyId, secret), 'GET', `/${boot.project}`)).status,
          200,
          node.describe(),
        );
      for (const node of cluster.nodes) assert.equal(node.child.exitCode, null, 'no process stopped');
    } finally {
      await cluster.close();
      await db.drop();
      rmSync(adminDir, { recursive: true, force: true });
    }
  });
});
