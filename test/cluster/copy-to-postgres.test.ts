// `sensorcloud admin copy-to-postgres`: an installation that started on SQLite (the default) moves to PostgreSQL
// when one machine is no longer enough. Everything it holds is served by the PostgreSQL process as it was: the
// same credentials, devices, history and connectors, and the events still queued for an endpoint that was down are
// pushed once it answers.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestDatabase } from '../helpers/postgres.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { freePort, passwordGrant, serve } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { cleanEnv, runCli } from '../operator/cli-process.ts';
import { basic, call, until } from './helpers.ts';

const eventIdOf = (body: Buffer) => (JSON.parse(body.toString()) as { event: { eventId: string } }).event.eventId;

describe('copy-to-postgres', () => {
  it('a SQLite installation copied into a new database is served by PostgreSQL as it was, its queue pushed', {
    timeout: 180_000,
  }, async () => {
    const db = await createTestDatabase();
    const root = mkdtempSync(join(tmpdir(), 'sensorcloud-copy-'));
    const dataDir = join(root, 'sqlite');
    // An endpoint that is down while the installation runs on SQLite: the events wait in its queue.
    const receiver = await startReceiver({ reply: { status: 503, retryAfter: '1' } });
    const port = await freePort();
    const { SENSORCLOUD_DATABASE_URL: _none, ...inherited } = process.env;
    const env = {
      ...inherited,
      PORT: String(port),
      HOST: '127.0.0.1',
      SENSORCLOUD_DATA_DIR: dataDir,
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
      SENSORCLOUD_RATE_LIMIT: 'off',
      SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
      LOG_LEVEL: 'warn',
    };
    const base = `http://127.0.0.1:${port}`;
    let running = await serve(env);
    try {
      const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')) as {
        project: string;
        user: { email: string; password: string };
        serviceAccount: { name: string; keyId: string; secret: string };
      };
      const admin = basic(boot.serviceAccount.keyId, boot.serviceAccount.secret);
      const ok = async (method: string, path: string, body?: unknown) => {
        const res = await call(base, admin, method, path, body);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body;
      };
      const connector = await ok('POST', `/${boot.project}/dataconnectors`, {
        type: 'HTTP_PUSH',
        displayName: 'moved',
        httpConfig: { url: receiver.url, signatureSecret: 'moved along' },
      });
      const device = await ok('POST', `/${boot.project}/devices`, { type: 'temperature', labels: { room: '4' } });
      // The first push is taken (the connector's metrics then hold a response time), the rest wait in the queue.
      receiver.replyOnce({ status: 200 });
      for (let i = 0; i < 5; i++) await ok('POST', `/${device.name}:publish`, { temperature: { value: 20 + i } });
      const key = await ok('POST', `/${boot.serviceAccount.name}/keys`, {});
      await receiver.waitFor(5, 20_000);
      const before = {
        devices: await ok('GET', `/${boot.project}/devices`),
        history: await ok('GET', `/${device.name}/events`),
        connector: await ok('GET', `/${connector.name}`),
      };
      const published = new Set<string>((before.history.events as Array<{ eventId: string }>).map((e) => e.eventId));
      published.delete(eventIdOf(receiver.requests[0]!.body));
      running.kill('SIGTERM');
      await once(running, 'exit');
      const failures = receiver.requests.length - 1;

      const adminEnv = cleanEnv({ SENSORCLOUD_DATA_DIR: dataDir, LOG_LEVEL: 'error' });
      const copied = await runCli(['admin', 'copy-to-postgres', '--database-url', db.url], adminEnv);
      assert.equal(copied.code, 0, copied.stderr);
      assert.match(
        copied.stdout,
        /^Copied \d+ rows into the PostgreSQL database, in one transaction: 1 organizations, 1 devices, \d+ events, 1 data connectors, [1-9]\d* queued pushes\.\n$/,
      );
      assert.match(copied.stderr, /^events: \d+ rows$/m, 'each table is reported');
      const again = await runCli(['admin', 'copy-to-postgres', '--database-url', db.url], adminEnv);
      assert.equal(again.code, 2);
      assert.match(
        again.stderr,
        /^error: the database already holds an installation \(1 organizations\): copy into a new, empty database/,
      );

      // The cluster's first process: the installation's key, a data dir of its own.
      const failedBefore = receiver.requests.length;
      receiver.reply({ status: 200 });
      const clusterEnv = {
        ...env,
        SENSORCLOUD_DATABASE_URL: db.url,
        SENSORCLOUD_MASTER_KEY_FILE: join(dataDir, 'master.key'),
        SENSORCLOUD_DATA_DIR: join(root, 'node-0'),
      };
      running = await serve(clusterEnv);
      assert.deepEqual(await ok('GET', `/${boot.project}/devices`), before.devices);
      assert.deepEqual(await ok('GET', `/${device.name}/events`), before.history);
      // The connector as it was, but for its update time: recording the failed pushes (its failing-since time) may
      // move it after the snapshot, before the SQLite service stopped.
      const { updateTime, ...moved } = await ok('GET', `/${connector.name}`);
      const { updateTime: updatedBefore, ...was } = before.connector;
      assert.deepEqual(moved, was, 'the signature secret opens under the same key');
      assert.ok(updateTime >= updatedBefore, `${updateTime} >= ${updatedBefore}`);
      // The connector's metrics as the SQLite service recorded them: one push taken, every other answered 503.
      const { metrics } = await ok('GET', `/${connector.name}:metrics`);
      assert.equal(metrics.successCount, 1, JSON.stringify(metrics));
      assert.equal(metrics.errorCount, failures, JSON.stringify(metrics));
      assert.notEqual(metrics.latency99p, '0.000s', 'the response time of the push taken');
      assert.equal(
        (await call(base, basic(String(key.key.name).split('/').pop()!, key.secret), 'GET', `/${boot.project}`)).status,
        200,
        'a key made on SQLite',
      );
      assert.equal(await passwordGrant(base, boot.user.email, boot.user.password), 200, 'the console password');
      // Every queued event is pushed now that the endpoint answers, signed with the same secret.
      const acked = () => new Set(receiver.requests.slice(failedBefore).map((r) => eventIdOf(r.body)));
      await until('every queued event pushed again', () => [...published].every((id) => acked().has(id)), 30_000);
      // And the cluster goes on: a new event is stored and pushed.
      await ok('POST', `/${device.name}:publish`, { temperature: { value: 30 } });
      await until(
        'the new event pushed',
        () =>
          receiver.requests.length > 0 &&
          JSON.parse(receiver.requests.at(-1)!.body.toString()).event.data.temperature.value === 30,
        30_000,
      );
      running.kill('SIGTERM');
      await once(running, 'exit');

      // A process given another key refuses to start: the copy sealed the cluster's key check with the installation's.
      const otherKey = join(root, 'other.key');
      writeFileSync(otherKey, randomBytes(32).toString('hex'), { mode: 0o600 });
      const refused = await runCli(
        ['serve'],
        cleanEnv({ ...clusterEnv, SENSORCLOUD_MASTER_KEY_FILE: otherKey, PORT: '0' }),
      );
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, /is not the one this database's secrets are sealed with/);
    } finally {
      if (running.exitCode === null) running.kill('SIGKILL');
      await receiver.close();
      await db.drop();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
