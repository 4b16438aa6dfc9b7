// Profiles and the environment: `login` by prompts (answers piped in) and from bootstrap.json, the files' modes
// (0600 in a 0700 folder), XDG_CONFIG_HOME and its ~/.config fallback, --profile, `profiles use`, `logout`, the
// SENSORCLOUD_* variables overriding a profile (CI without login), and the default project.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { startService, type Service } from './harness.ts';

let s: Service;
let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    s = await startService();
  })());

const modeOf = (path: string) => statSync(path).mode & 0o777;
const freshConfig = () => mkdtempSync(join(s.dataDir, 'config-'));

describe('happy', () => {
  before(ready);

  it('login asks for URL, key id and secret, finds the service account email, saves 0600 in 0700', async () => {
    const config = freshConfig();
    const { keyId, secret, email } = s.boot.serviceAccount;
    const r = await s.run(['login'], { env: { XDG_CONFIG_HOME: config }, input: `${s.url}/v2\n${keyId}\n${secret}\n` });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Server URL.*Key id.*Key secret/s);
    assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), 'the secret is not echoed');
    const dir = join(config, 'sensorcloud');
    const file = join(dir, 'profiles.json');
    assert.equal(modeOf(dir), 0o700);
    assert.equal(modeOf(file), 0o600);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(saved, {
      current: 'default',
      profiles: { default: { url: s.url, keyId, secret, email, project: s.projectId } },
    });
    // A command with the profile: a token was exchanged and cached, also 0600.
    const list = await s.run(['projects', 'list', '--json'], { env: { XDG_CONFIG_HOME: config } });
    assert.equal(list.code, 0, list.stderr);
    assert.equal(modeOf(join(dir, 'tokens.json')), 0o600);
  });

  it('several profiles: --profile, profiles list/use, logout', async () => {
    const config = freshConfig();
    const env = { XDG_CONFIG_HOME: config };
    assert.equal((await s.run(['login', '--from', join(s.dataDir, 'bootstrap.json')], { env })).code, 0);
    // A second profile whose server is unreachable: selecting it must make commands fail, not fall back.
    const second = await s.run(['login', '--profile', 'other', '--from', join(s.dataDir, 'bootstrap.json')], { env });
    assert.equal(second.code, 0, second.stderr);
    const file = join(config, 'sensorcloud', 'profiles.json');
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    saved.profiles.other.url = 'http://127.0.0.1:9';
    writeFileSync(file, JSON.stringify(saved));
    const listed = await s.json(['profiles', 'list'], { env });
    assert.deepEqual(
      listed.map((p: any) => [p.name, p.current]),
      [
        ['default', false],
        ['other', true],
      ],
    );
    assert.ok(!JSON.stringify(listed).includes(s.boot.serviceAccount.secret));
    const unreachable = await s.run(['projects', 'list'], { env });
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /cannot reach http:\/\/127\.0\.0\.1:9/);
    assert.equal(
      (await s.run(['--profile', 'default', 'projects', 'list'], { env })).code,
      0,
      'global option before the command',
    );
    assert.equal((await s.run(['profiles', 'use', 'default'], { env })).code, 0);
    assert.equal((await s.run(['projects', 'list'], { env })).code, 0);
    assert.equal((await s.run(['logout', '--profile', 'other'], { env })).code, 0);
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(file, 'utf8')).profiles), ['default']);
    assert.equal(modeOf(file), 0o600);
  });

  it('without XDG_CONFIG_HOME the profile goes to ~/.config/sensorcloud', async () => {
    const home = freshConfig();
    const r = await s.run(['login', '--from', join(s.dataDir, 'bootstrap.json')], {
      env: { XDG_CONFIG_HOME: undefined, HOME: home },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(modeOf(join(home, '.config', 'sensorcloud', 'profiles.json')), 0o600);
  });

  it('SENSORCLOUD_URL (with /v2), _KEY_ID and _KEY_SECRET need no login and override a profile', async () => {
    const { keyId, secret, email } = s.boot.serviceAccount;
    const ci = {
      XDG_CONFIG_HOME: freshConfig(),
      SENSORCLOUD_URL: `${s.url}/v2/`,
      SENSORCLOUD_KEY_ID: keyId,
      SENSORCLOUD_KEY_SECRET: secret,
    };
    const basic = await s.json(['projects', 'list'], { env: ci });
    assert.deepEqual(
      basic.map((p: any) => p.name),
      [s.boot.project],
    );
    const oauth = await s.json(['projects', 'list'], { env: { ...ci, SENSORCLOUD_SERVICE_ACCOUNT: email } });
    assert.deepEqual(
      oauth.map((p: any) => p.name),
      [s.boot.project],
    );
    assert.ok(!existsSync(join(ci.XDG_CONFIG_HOME, 'sensorcloud')), 'environment credentials leave nothing on disk');

    // A profile pointing elsewhere loses to the environment.
    const config = freshConfig();
    mkdirSync(join(config, 'sensorcloud'), { recursive: true, mode: 0o700 });
    writeFileSync(
      join(config, 'sensorcloud', 'profiles.json'),
      JSON.stringify({
        current: 'default',
        profiles: { default: { url: 'http://127.0.0.1:9', keyId: 'x', secret: 'y' } },
      }),
      { mode: 0o600 },
    );
    const overridden = await s.run(['projects', 'list', '--quiet'], { env: { ...ci, XDG_CONFIG_HOME: config } });
    assert.equal(overridden.code, 0, overridden.stderr);
    assert.equal(overridden.stdout, `${s.boot.project}\n`);
  });
});

describe('errors', () => {
  before(ready);

  it('no credentials at all: exit 2 with what to do', async () => {
    const r = await s.run(['projects', 'list'], { env: { XDG_CONFIG_HOME: freshConfig() } });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /not logged in: run `sensorcloud login`, or set SENSORCLOUD_URL, SENSORCLOUD_KEY_ID, SENSORCLOUD_KEY_SECRET/,
    );
  });

  it('login with a wrong secret: exit 3, nothing saved', async () => {
    const config = freshConfig();
    const r = await s.run(['login', '--url', s.url, '--key-id', s.boot.serviceAccount.keyId], {
      env: { XDG_CONFIG_HOME: config },
      input: `${'f'.repeat(32)}\n`,
    });
    assert.equal(r.code, 3, r.stderr);
    assert.ok(!existsSync(join(config, 'sensorcloud', 'profiles.json')));
  });

  it('several projects and no default: exit 2 asking for --project', async () => {
    const created = await s.api('POST', 'projects', { organization: s.boot.organization, displayName: 'Another' });
    assert.equal(created.status, 200);
    const { keyId, secret } = s.boot.serviceAccount;
    const env = {
      XDG_CONFIG_HOME: freshConfig(),
      SENSORCLOUD_URL: s.url,
      SENSORCLOUD_KEY_ID: keyId,
      SENSORCLOUD_KEY_SECRET: secret,
    };
    const r = await s.run(['devices', 'list'], { env });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /several projects: pass --project/);
    const chosen = await s.run(['devices', 'list', '--project', created.body.name], { env });
    assert.equal(chosen.code, 0, chosen.stderr);
  });
});
