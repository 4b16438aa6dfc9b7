// Recovery commands (issue 22): `sensorcloud admin reset-password` and `admin create-key` work on the data dir with
// the server stopped, refuse (one line, exit 2) while a server holds it, and never create an installation;
// `sensorcloud --version`.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, freePort, serve } from '../helpers/serve-process.ts';
import { cleanEnv, runCli } from './cli-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-admin-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));
const env = (extra: Record<string, string> = {}) => cleanEnv({ SENSORCLOUD_DATA_DIR: dataDir, LOG_LEVEL: 'error', ...extra });

/** Runs `fn` against a server on the data dir, stopped afterwards. */
async function withServer(fn: (url: string) => Promise<void>): Promise<void> {
  const port = await freePort();
  const child = await serve(env({ PORT: String(port) }));
  try {
    await fn(`http://127.0.0.1:${port}`);
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
  }
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function passwordGrant(url: string, email: string, password: string): Promise<number> {
  const res = await fetch(`${url}/oauth2/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'password', username: email, password }) });
  await res.arrayBuffer();
  return res.status;
}

before(async () => {
  await withServer(async () => undefined); // the first start sets up the installation
});

describe('happy', () => {
  it('--version prints the version in package.json', { timeout: 60_000 }, async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const result = await runCli(['--version'], cleanEnv());
    assert.equal(result.code, 0);
    assert.equal(result.stdout, `${version}\n`);
  });

  it('create-key gives the bootstrap service account a new key, printed once; it works once the server is back', { timeout: 120_000 }, async () => {
    const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
    const result = await runCli(['admin', 'create-key', '--json'], env());
    assert.equal(result.code, 0, result.stderr);
    const key = JSON.parse(result.stdout) as { name: string; keyId: string; secret: string; serviceAccount: string; email: string };
    assert.equal(key.serviceAccount, boot.serviceAccount.name);
    assert.equal(key.email, boot.serviceAccount.email);
    assert.match(key.secret, /^[0-9a-f]{32}$/);
    assert.equal(key.name, `${boot.serviceAccount.name}/keys/${key.keyId}`);
    assert.match(result.stderr, /shown only this once/);
    // --quiet: the id and the secret, for scripts; --data-dir instead of the variable.
    const quiet = await runCli(['admin', 'create-key', '--quiet', '--data-dir', dataDir], cleanEnv());
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.match(quiet.stdout, /^[0-9a-v]{20}\t[0-9a-f]{32}\n$/);
    await withServer(async (url) => {
      const res = await fetch(`${url}/v2/projects`, { headers: { authorization: basic(key.keyId, key.secret) } });
      assert.equal(res.status, 200);
      const [id, secret] = quiet.stdout.trim().split('\t');
      assert.equal((await fetch(`${url}/v2/projects`, { headers: { authorization: basic(id!, secret!) } })).status, 200);
    });
  });

  it('reset-password prints a new password once, or reads one; the console login takes it once the server is back', { timeout: 120_000 }, async () => {
    const email = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')).user.email as string;
    const generated = await runCli(['admin', 'reset-password', email.toUpperCase(), '--json'], env());
    assert.equal(generated.code, 0, generated.stderr);
    const { password } = JSON.parse(generated.stdout) as { email: string; password: string };
    assert.ok(password.length >= 12);
    await withServer(async (url) => {
      assert.equal(await passwordGrant(url, email, password), 200);
    });
    const chosen = 'a chosen password of some length';
    const read = await runCli(['admin', 'reset-password', email, '--password-stdin'], env(), { input: `${chosen}\n` });
    assert.equal(read.code, 0, read.stderr);
    assert.equal(read.stdout, `New password set for ${email}.\n`);
    assert.ok(!read.stdout.includes(chosen) && !read.stderr.includes(chosen), 'a password read is never printed');
    await withServer(async (url) => {
      assert.equal(await passwordGrant(url, email, chosen), 200);
      assert.equal(await passwordGrant(url, email, password), 400, 'the previous password no longer works');
    });
  });
});

describe('sad', () => {
  it('refuses while a server holds the data dir: one line, exit 2, nothing changed', { timeout: 120_000 }, async () => {
    await withServer(async () => {
      for (const args of [['admin', 'create-key'], ['admin', 'reset-password', 'admin@sensorcloud.local']]) {
        const result = await runCli(args, env());
        assert.equal(result.code, 2, args.join(' '));
        assert.equal(result.stdout, '');
        assert.equal(result.stderr, `error: another Sensor Cloud process (a server or an admin command) is using the data dir ${dataDir}: stop it first, or point SENSORCLOUD_DATA_DIR at another directory\n`);
      }
    });
  });

  it('refuses a data dir that holds no installation, and creates nothing there', { timeout: 60_000 }, async () => {
    const empty = join(dataDir, 'not-an-installation');
    const result = await runCli(['admin', 'create-key', '--data-dir', empty], cleanEnv());
    assert.equal(result.code, 2);
    assert.equal(result.stderr, `error: no Sensor Cloud installation in ${empty} (no sensorcloud.db and master.key): point --data-dir at its data dir\n`);
    assert.ok(!existsSync(empty));
  });

  it('an unknown email, a short password or an unknown service account: one line, exit 2', { timeout: 60_000 }, async () => {
    const unknown = await runCli(['admin', 'reset-password', 'nobody@example.org'], env());
    assert.equal(unknown.code, 2);
    assert.equal(unknown.stderr, 'error: no console user has the email nobody@example.org\n');
    const short = await runCli(['admin', 'reset-password', 'admin@sensorcloud.local', '--password-stdin'], env(), { input: 'short\n' });
    assert.equal(short.code, 2);
    assert.match(short.stderr, /error: a password has at least 12 characters\n$/);
    const account = await runCli(['admin', 'create-key', '--service-account', 'nobody@example.org'], env());
    assert.equal(account.code, 2);
    assert.equal(account.stderr, 'error: no service account has the email nobody@example.org\n');
  });
});
