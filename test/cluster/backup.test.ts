// A backup of a running cluster's database (pg_dump, as docs/deployment.md shows it), restored into a new database and
// served by a process given the same master key: the same devices, events and credentials, and every event the
// backup held queued for a connector is pushed once its endpoint answers.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestDatabase, runAlone, testPostgresUrl } from '../helpers/postgres.ts';
import { postgresBin } from '../helpers/postgres-server.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { freePort, serve } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { basic, call, connectorAndDevices, startCluster, storedEventIds, until } from './helpers.ts';

describe('a PostgreSQL backup restored into a new database', () => {
  it('serves the same data with the same key, and pushes what was queued when the backup was made', {
    timeout: 180_000,
  }, async () => {
    const source = await createTestDatabase();
    // Restored as the docs show it: by the service's own user (no superuser), into a database it owns.
    const target = await createTestDatabase();
    const role = `sc_restore_${randomBytes(4).toString('hex')}`;
    await runAlone(await testPostgresUrl(), `CREATE ROLE ${role} LOGIN`);
    await runAlone(target.url, `ALTER DATABASE ${new URL(target.url).pathname.slice(1)} OWNER TO ${role}`);
    const targetUrl = new URL(target.url);
    targetUrl.username = role;
    const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-backup-'));
    // The endpoint is down (503) until the backup is restored: the events wait in the queue, retried.
    let up = false;
    const delivered = new Set<string>();
    let attempts = 0;
    const receiver = await startReceiver({
      reply: (req) => {
        attempts++;
        if (!up) return { status: 503 };
        delivered.add(JSON.parse(req.body.toString('utf8')).event.eventId);
        return { status: 200 };
      },
    });
    const cluster = await startCluster(source.url, 1);
    let restored: Awaited<ReturnType<typeof serve>> | null = null;
    try {
      const { project, serviceAccount } = cluster.boot;
      const auth = basic(serviceAccount.keyId, serviceAccount.secret);
      const node = cluster.nodes[0]!;
      const devices = await connectorAndDevices(node.base, auth, project, receiver.url, 3);
      for (let i = 0; i < 30; i++)
        assert.equal((await call(node.base, auth, 'POST', `/${devices[i % 3]}:publish`, { touch: {} })).status, 200);
      const published = await storedEventIds(node.base, auth, devices);
      assert.equal(published.size, 30);
      await until('the first attempts', () => attempts >= 30, 30_000);

      // The backup, made while the process runs, as the docs show it.
      const dump = join(dir, 'sensorcloud.dump');
      execFileSync(join(postgresBin(), 'pg_dump'), ['--format=custom', `--file=${dump}`, `--dbname=${source.url}`], {
        stdio: 'pipe',
      });
      const keyFile = join(dir, 'master.key');
      copyFileSync(cluster.keyFile, keyFile);
      await cluster.close();

      execFileSync(
        join(postgresBin(), 'pg_restore'),
        ['--no-owner', '--exit-on-error', `--dbname=${targetUrl}`, dump],
        { stdio: 'pipe' },
      );
      up = true;
      const port = await freePort();
      restored = await serve({
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        SENSORCLOUD_DATA_DIR: join(dir, 'data'),
        SENSORCLOUD_DATABASE_URL: targetUrl.toString(),
        SENSORCLOUD_MASTER_KEY_FILE: keyFile,
        SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
        SENSORCLOUD_CA_FILE: testTls().caFile,
        SENSORCLOUD_RATE_LIMIT: 'off',
        SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
        LOG_LEVEL: 'warn',
        SENSORCLOUD_DELIVERY_LEASE: '15s',
      });
      const base = `http://127.0.0.1:${port}`;
      // The same key authenticates (its secret opens under the same master key), the same events are there.
      assert.deepEqual(await storedEventIds(base, auth, devices), published);
      // Every event queued in the backup is pushed: those waiting for a retry when it is due, those whose attempt was
      // in flight when the lease of the process that made it ends.
      await until('every queued event pushed', () => delivered.size === 30, 90_000);
      assert.deepEqual(new Set(delivered), published);
      // And the service goes on: a new event is pushed too.
      assert.equal((await call(base, auth, 'POST', `/${devices[0]}:publish`, { touch: {} })).status, 200);
      await until('a new event pushed', () => delivered.size === 31, 30_000);
    } finally {
      restored?.kill('SIGTERM');
      await cluster.close();
      await receiver.close();
      await source.drop();
      await target.drop();
      await runAlone(await testPostgresUrl(), `DROP ROLE IF EXISTS ${role}`);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
