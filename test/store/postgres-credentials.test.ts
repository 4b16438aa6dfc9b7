// PostgreSQL only: the service's password changed on the server while a process runs, as in a password rotation.
// The open connections keep working; new ones are refused until the process has the new password. Requests that
// need a new one answer 503 (they answered 500, with a stack logged for each), the operator is told once, and the
// password file, read at each new connection, gives the new password without a restart.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres-server.ts';
import { organization } from './contract/fixtures.ts';

describe('postgres: the password changed on the server while a process runs', () => {
  // A server of its own, which asks every connection for the password.
  let server: PostgresServer;
  let admin: pg.Client;
  let store: PostgresStore | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-pgpass-'));
  const passFile = join(dir, 'pgpass');
  const { logger, lines } = capturedLog(['warn']);
  before(async () => {
    server = await startPostgresServer({ password: 'first-secret' });
    admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE DATABASE rotated');
  });
  after(async () => {
    await store?.close();
    await admin?.end();
    server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const passwordIs = (password: string) =>
    writeFileSync(passFile, `127.0.0.1:${server.port}:rotated:postgres:${password}\n`, { mode: 0o600 });
  const refusedCredentials = (err: unknown) =>
    (err as { status?: number }).status === 503 && /refused a new connection/.test((err as Error).message);

  it('answers 503 while new connections are refused, tells the operator once, and takes the new password from the password file', async () => {
    passwordIs('first-secret');
    process.env.PGPASSFILE = passFile;
    store = await createPostgresStore(`postgres://postgres@127.0.0.1:${server.port}/rotated`, { poolSize: 2, logger });
    const s = store;
    await s.organizations.create(organization());

    await admin.query("ALTER ROLE postgres PASSWORD 'second-secret'");
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'rotated'");
    // A pooled session ended before the pool heard of it answers 'the database is unreachable' (503) meanwhile.
    for (const deadline = Date.now() + 10_000; ; ) {
      const err = await s.organizations.create(organization()).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err !== null, 'a write passed with the old password');
      assert.equal((err as { status?: number }).status, 503, String(err));
      if (refusedCredentials(err)) break;
      assert.ok(Date.now() < deadline, 'no refusal of the credentials within 10 s');
    }
    for (let i = 0; i < 3; i++) await assert.rejects(s.organizations.create(organization()), refusedCredentials);
    await assert.rejects(s.ping());

    passwordIs('second-secret');
    await s.organizations.create(organization());
    await s.ping();
    assert.equal(await s.organizations.count(), 2);

    const told = lines.filter((l) => /refused the credentials/.test(l.message));
    assert.equal(told.length, 1, JSON.stringify(lines));
    assert.match(String(told[0]!.fields.reason), /password authentication failed/);
  });
});
