// Recovery commands (issue 22): `sensorcloud admin reset-password`, `admin create-key` and `admin rotate-master-key`
// work on the data dir with the server stopped, refuse (one line, exit 2) while a server holds it, and never create
// an installation; `sensorcloud --version`.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { verifySignature } from '../../src/receiver/verify-signature.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { ROOT, freePort, passwordGrant, serve } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { until } from '../helpers/until.ts';
import { cleanEnv, runCli } from './cli-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-admin-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));
const env = (extra: Record<string, string> = {}) =>
  cleanEnv({ SENSORCLOUD_DATA_DIR: dataDir, LOG_LEVEL: 'error', ...extra });

/** Runs `fn` against a server on the data dir, stopped afterwards; it pushes to loopback receivers of the test CA. */
async function withServer(fn: (url: string) => Promise<void>): Promise<void> {
  const port = await freePort();
  const child = await serve(
    env({
      PORT: String(port),
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
    }),
  );
  try {
    await fn(`http://127.0.0.1:${port}`);
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
  }
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

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

  it('create-key gives the bootstrap service account a new key, printed once; it works once the server is back', {
    timeout: 120_000,
  }, async () => {
    const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
    const result = await runCli(['admin', 'create-key', '--json'], env());
    assert.equal(result.code, 0, result.stderr);
    const key = JSON.parse(result.stdout) as {
      name: string;
      keyId: string;
      secret: string;
      serviceAccount: string;
      email: string;
    };
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
      assert.equal(
        (await fetch(`${url}/v2/projects`, { headers: { authorization: basic(id!, secret!) } })).status,
        200,
      );
    });
  });

  it('reset-password prints a new password once, or reads one; the console login takes it once the server is back', {
    timeout: 120_000,
  }, async () => {
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

describe('master key rotation', () => {
  const keyFile = join(dataDir, 'master.key');
  const newKey = (name: string, hex = randomBytes(32).toString('hex')) => {
    const file = join(dataDir, name);
    writeFileSync(file, `${hex}\n`, { mode: 0o600 });
    return { file, hex };
  };

  it('rotate-master-key seals every secret again under the new key and installs it; keys and signature secrets keep working', {
    timeout: 120_000,
  }, async (t) => {
    const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
    const auth = basic(boot.serviceAccount.keyId, boot.serviceAccount.secret);
    const ok = async (url: string, method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}/v2/${path}`, {
        method,
        headers: { authorization: auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      assert.equal(res.status, 200, `${method} ${path}: ${text}`);
      return JSON.parse(text);
    };
    // A rule's signed webhook (its secret is sealed in the rule's settings, and again in each notification queued):
    // the first notification is refused, so it stays queued across the rotation, due again 8 s later.
    const ruleSecret = 'rule webhook secret kept across rotation';
    const receiver = await startReceiver({ reply: { status: 200 } });
    t.after(() => receiver.close());
    receiver.replyOnce({ status: 503 });
    let connector = '';
    let rule = '';
    await withServer(async (url) => {
      connector = (
        await ok(url, 'POST', `${boot.project}/dataconnectors`, {
          type: 'HTTP_PUSH',
          displayName: 'rotation',
          httpConfig: { url: 'https://receiver.example/hook', signatureSecret: 'kept across rotation' },
        })
      ).name;
      rule = (
        await ok(url, 'POST', `${boot.project}/rules`, {
          displayName: 'rotation',
          trigger: { field: 'touch' },
          escalationLevels: [
            { actions: [{ type: 'WEBHOOK', webhook: { url: receiver.url, signatureSecret: ruleSecret } }] },
          ],
        })
      ).name;
      const device = await ok(url, 'POST', `${boot.project}/devices`, { type: 'touch' });
      await ok(url, 'POST', `${device.name}:publish`, { touch: {} });
      const [refused] = await receiver.waitFor(1, 20_000);
      await verifySignature(refused!.body, refused!.headers, ruleSecret);
      // Recorded (stopping mid-attempt would leave the row leased for a minute).
      await until('the refused notification to be recorded', async () => {
        const [alert] = (await ok(url, 'GET', `${boot.project}/alerts`)).alerts;
        return alert?.notifications[0]?.outcome === 'RETRYING' && alert.notifications[0].error !== '';
      });
    });
    const old = readFileSync(keyFile, 'utf8');
    const next = newKey('next.key');
    const result = await runCli(['admin', 'rotate-master-key', '--new-key-file', next.file], env());
    assert.equal(result.code, 0, result.stderr);
    // The connector's, the rule's webhook's and the queued notification's.
    assert.match(result.stdout, /^Sealed again under the new key: \d+ key secrets, 3 signature secrets\./);
    assert.match(result.stderr, /Delete .*master\.key\.previous/);
    assert.equal(readFileSync(keyFile, 'utf8'), `${next.hex}\n`, 'the new key is installed');
    assert.equal(readFileSync(`${keyFile}.previous`, 'utf8'), old, 'the old one is kept beside it');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    await withServer(async (url) => {
      assert.equal(
        (await fetch(`${url}/v2/projects`, { headers: { authorization: auth } })).status,
        200,
        'the key secret opens under the new key',
      );
      assert.equal((await ok(url, 'GET', connector)).httpConfig.signatureSecret, 'kept across rotation');
      assert.equal(
        (await ok(url, 'GET', rule)).escalationLevels[0].actions[0].webhook.signatureSecret,
        ruleSecret,
        "the rule's webhook secret opens under the new key",
      );
      // The queued notification is sent again, signed with the secret it was queued with.
      const [refused, sent] = await receiver.waitFor(2, 30_000);
      assert.deepEqual(sent!.body, refused!.body, 'the notification queued before the rotation');
      await verifySignature(sent!.body, sent!.headers, ruleSecret);
    });
  });

  it('refuses a missing or malformed new key, or the key in use, and changes nothing', {
    timeout: 60_000,
  }, async () => {
    const before = readFileSync(keyFile, 'utf8');
    const missing = await runCli(['admin', 'rotate-master-key', '--new-key-file', join(dataDir, 'nope.key')], env());
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /^error: --new-key-file .*nope\.key does not exist: make one with: openssl rand -hex 32 > /,
    );
    const malformed = await runCli(
      ['admin', 'rotate-master-key', '--new-key-file', newKey('short.key', 'abcd').file],
      env(),
    );
    assert.equal(malformed.code, 2);
    assert.match(malformed.stderr, /does not hold a key of 64 hex characters/);
    const same = await runCli(
      ['admin', 'rotate-master-key', '--new-key-file', newKey('same.key', before.trim()).file],
      env(),
    );
    assert.equal(same.code, 2);
    assert.match(same.stderr, /holds the key already in use/);
    assert.equal(readFileSync(keyFile, 'utf8'), before);
  });
});

describe('sad', () => {
  it('refuses while a server holds the data dir: one line, exit 2, nothing changed', { timeout: 120_000 }, async () => {
    await withServer(async () => {
      const fresh = join(dataDir, 'while-running.key');
      writeFileSync(fresh, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
      for (const args of [
        ['admin', 'create-key'],
        ['admin', 'reset-password', 'admin@sensorcloud.local'],
        ['admin', 'rotate-master-key', '--new-key-file', fresh],
      ]) {
        const result = await runCli(args, env());
        assert.equal(result.code, 2, args.join(' '));
        assert.equal(result.stdout, '');
        assert.equal(
          result.stderr,
          `error: another Sensor Cloud process (a server or an admin command) is using the data dir ${dataDir}: stop it first, or point SENSORCLOUD_DATA_DIR at another directory\n`,
        );
      }
    });
  });

  it('refuses a data dir that holds no installation, and creates nothing there', { timeout: 60_000 }, async () => {
    const empty = join(dataDir, 'not-an-installation');
    const result = await runCli(['admin', 'create-key', '--data-dir', empty], cleanEnv());
    assert.equal(result.code, 2);
    assert.equal(
      result.stderr,
      `error: no Sensor Cloud installation in ${empty} (no sensorcloud.db and master.key): point --data-dir at its data dir\n`,
    );
    assert.ok(!existsSync(empty));
  });

  it('an unknown email, a short password or an unknown service account: one line, exit 2', {
    timeout: 60_000,
  }, async () => {
    const unknown = await runCli(['admin', 'reset-password', 'nobody@example.org'], env());
    assert.equal(unknown.code, 2);
    assert.equal(unknown.stderr, 'error: no console user has the email nobody@example.org\n');
    const short = await runCli(['admin', 'reset-password', 'admin@sensorcloud.local', '--password-stdin'], env(), {
      input: 'short\n',
    });
    assert.equal(short.code, 2);
    assert.match(short.stderr, /error: a password has at least 12 characters\n$/);
    const account = await runCli(['admin', 'create-key', '--service-account', 'nobody@example.org'], env());
    assert.equal(account.code, 2);
    assert.equal(account.stderr, 'error: no service account has the email nobody@example.org\n');
  });
});
