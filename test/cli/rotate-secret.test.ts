// `connectors rotate-secret` (extensions §X3) against a real service pushing to a real HTTPS receiver: a secret the
// service made is printed once with the overlap's end, and it is the one that signs the next push while the
// previous secret signs X-Service-Signature-Previous; `get` and `list` show the overlap's end; --secret, --overlap
// (0 included), --json and --quiet; a PATCH of the secret ends the overlap; usage errors before anything is sent, a
// 403 for a project user; and no secret given by the user in any output.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { durationText, parseDuration } from '../../src/cli/arguments.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';
import { startService, type Service } from './harness.ts';

let s: Service;
let receiver: Receiver;
let button = '';
/** The connector under test: created with FIRST_SECRET, pushing touches to the receiver. */
let dc = '';
let dcId = '';

const FIRST_SECRET = 'first-signing-secret-0123456789';
const GIVEN_SECRET = 'given-signing-secret-9876543210';
const PATCHED_SECRET = 'patched-signing-secret-5555555555';
/** Secrets the service made, each printed by the one command that made it. */
const generated: string[] = [];

/** True when `jwt` (an X-Service-Signature value) is signed with `secret`: the HMAC over its first two parts. */
function signedWith(jwt: unknown, secret: string): boolean {
  if (typeof jwt !== 'string') return false;
  const [header, claims, signature] = jwt.split('.');
  return createHmac('sha256', secret).update(`${header}.${claims}`).digest('base64url') === signature;
}

/** The connector as the service has it (Basic Auth): the real secret, the overlap's end. */
async function stored(): Promise<any> {
  const res = await s.api('GET', dc);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** Publishes a touch and resolves to its push. */
async function nextPush(): Promise<ReceivedRequest> {
  const n = receiver.requests.length;
  assert.equal((await s.run(['events', 'publish', button, 'touch'])).code, 0);
  return (await receiver.waitFor(n + 1, 20_000))[n]!;
}

/** `t` lies `seconds` from now, within a minute (the CLI and the service ran in between). */
function assertFromNow(t: string, seconds: number): void {
  const off = Date.parse(t) - (Date.now() + seconds * 1000);
  assert.ok(Math.abs(off) < 60_000, `${t} is not ${seconds} s from now`);
}

let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    receiver = await startReceiver();
    s = await startService({
      SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
      SENSORCLOUD_CA_FILE: testTls().caFile,
    });
    const login = await s.run(['login', '--from', `${s.dataDir}/bootstrap.json`]);
    assert.equal(login.code, 0, login.stderr);
    button = (await s.json(['devices', 'create', '--type', 'touch'])).name;
    dc = (await s.json(['connectors', 'create', '--url', receiver.url, '--events', 'touch', '--secret', FIRST_SECRET]))
      .name;
    dcId = dc.split('/').pop()!;
  })());

after(async () => {
  await receiver?.close();
});

describe('happy', () => {
  before(ready);

  it('a secret made by the service is printed once with the end of the overlap (24 h by default); the next push is signed with both', async () => {
    const r = await s.run(['connectors', 'rotate-secret', dcId]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^warning: the new signature secret is shown only this once/);
    const secret = /^signatureSecret\s+([0-9a-f]{32})$/m.exec(r.stdout)?.[1];
    assert.ok(secret, r.stdout);
    generated.push(secret);
    assert.equal(r.stdout.split(secret).length - 1, 1, 'the secret is printed once');
    const c = await stored();
    assert.equal(c.httpConfig.signatureSecret, secret);
    const until = c.httpConfig.previousSignatureSecretExpireTime;
    assertFromNow(until, 86_400);
    assert.match(r.stdout, new RegExp(`^name\\s+${dc}$`, 'm'));
    assert.match(
      r.stdout,
      new RegExp(
        `^previousSecret\\s+also signs every push \\(X-Service-Signature-Previous\\) until ${until}, 24h from now$`,
        'm',
      ),
    );

    const push = await nextPush();
    assert.ok(signedWith(push.headers['x-service-signature'], secret), 'X-Service-Signature: the new secret');
    assert.ok(
      signedWith(push.headers['x-service-signature-previous'], FIRST_SECRET),
      'X-Service-Signature-Previous: the previous secret',
    );
  });

  it('get and list show the end of the overlap, the secret still redacted', async () => {
    const until = (await stored()).httpConfig.previousSignatureSecretExpireTime;
    assert.notEqual(until, '');
    const [got, table, list, listTable] = await Promise.all([
      s.json(['connectors', 'get', dcId]),
      s.run(['connectors', 'get', dcId]),
      s.json(['connectors', 'list']),
      s.run(['connectors', 'list']),
    ]);
    assert.deepEqual(
      [got.httpConfig.signatureSecret, got.httpConfig.previousSignatureSecretExpireTime],
      ['<redacted>', until],
    );
    assert.match(table.stdout, new RegExp(`^previousSecretUntil\\s+${until}$`, 'm'));
    assert.equal(list[0].httpConfig.previousSignatureSecretExpireTime, until);
    const [header, row] = listTable.stdout.trimEnd().split('\n');
    assert.match(header!, /STATUS\s+EVENTS\s+PREVIOUS SECRET UNTIL\s+URL/);
    assert.ok(row!.includes(until), row);
  });

  it('--secret with --overlap 1h, --json: the API answer, the given secret redacted; rotating again makes the current secret the previous one', async () => {
    const before = (await stored()).httpConfig.signatureSecret;
    const res = await s.json(['connectors', 'rotate-secret', dc, '--secret', GIVEN_SECRET, '--overlap', '1h']);
    assert.deepEqual(Object.keys(res).sort(), ['dataConnector', 'signatureSecret']);
    assert.equal(res.signatureSecret, '<redacted>');
    assert.equal(res.dataConnector.name, dc);
    assert.equal(res.dataConnector.httpConfig.signatureSecret, '<redacted>');
    assertFromNow(res.dataConnector.httpConfig.previousSignatureSecretExpireTime, 3600);
    assert.equal((await stored()).httpConfig.signatureSecret, GIVEN_SECRET);

    const push = await nextPush();
    assert.ok(signedWith(push.headers['x-service-signature'], GIVEN_SECRET));
    assert.ok(signedWith(push.headers['x-service-signature-previous'], before), 'the secret rotated away just now');
  });

  it('--generate --overlap 0 --json: the new secret in the answer, no previous secret, one header on the next push', async () => {
    const r = await s.run(['connectors', 'rotate-secret', dcId, '--generate', '--overlap', '0', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /shown only this once/);
    const res = JSON.parse(r.stdout);
    assert.match(res.signatureSecret, /^[0-9a-f]{32}$/);
    generated.push(res.signatureSecret);
    assert.equal(res.dataConnector.httpConfig.previousSignatureSecretExpireTime, '');
    assert.equal((await stored()).httpConfig.signatureSecret, res.signatureSecret);
    const push = await nextPush();
    assert.ok(signedWith(push.headers['x-service-signature'], res.signatureSecret));
    assert.equal(push.headers['x-service-signature-previous'], undefined);
  });

  it('--quiet prints the name and the new secret; without an overlap the text says so', async () => {
    const quiet = await s.run(['connectors', 'rotate-secret', dcId, '--overlap', '0s', '--quiet']);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(quiet.stderr, '');
    const [name, secret] = quiet.stdout.trimEnd().split('\t');
    assert.equal(name, dc);
    assert.match(secret!, /^[0-9a-f]{32}$/);
    generated.push(secret!);

    const plain = await s.run(['connectors', 'rotate-secret', dcId, '--secret', GIVEN_SECRET, '--overlap', '0']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stderr, '', 'no warning: the secret was given, not made');
    assert.match(plain.stdout, /^signatureSecret\s+\(the one given with --secret\)$/m);
    assert.match(plain.stdout, /^previousSecret\s+none: every push from now on is signed with the new secret only$/m);
    const table = await s.run(['connectors', 'get', dcId]);
    assert.doesNotMatch(table.stdout, /previousSecretUntil/);
  });

  it('a new secret through update ends the overlap at once', async () => {
    await s.json(['connectors', 'rotate-secret', dcId, '--secret', FIRST_SECRET, '--overlap', '7d']);
    assertFromNow((await stored()).httpConfig.previousSignatureSecretExpireTime, 7 * 86_400);
    const updated = await s.json(['connectors', 'update', dcId, '--secret', PATCHED_SECRET]);
    assert.equal(updated.httpConfig.previousSignatureSecretExpireTime, '');
    const push = await nextPush();
    assert.ok(signedWith(push.headers['x-service-signature'], PATCHED_SECRET));
    assert.equal(push.headers['x-service-signature-previous'], undefined);
  });
});

describe('durations', () => {
  it('--overlap takes 0, s, m, h, d and w, as whole seconds up to the bound; people read them back', () => {
    assert.deepEqual(
      ['0', '0s', '90s', '15m', '1.5h', '24h', '7d', '1w', ' 86400s '].map((v) =>
        parseDuration(v, '--overlap', 604_800),
      ),
      [0, 0, 90, 900, 5400, 86_400, 604_800, 604_800, 86_400],
    );
    for (const bad of ['', '1', '-1h', '1h30m', '24 h', 'PT1H', '0.5s', '8d'])
      assert.throws(() => parseDuration(bad, '--overlap', 604_800), /--overlap must/, bad);
    assert.deepEqual([0, 45, 90, 5400, 3600, 86_400, 172_800, 604_800, 90_000].map(durationText), [
      '0s',
      '45s',
      '90s',
      '90m',
      '1h',
      '24h',
      '2d',
      '7d',
      '25h',
    ]);
  });
});

describe('errors', () => {
  before(ready);

  it('exit 2 for usage errors, before anything is sent', async () => {
    const updateTime = (await stored()).updateTime;
    const runs = await Promise.all([
      s.run(['connectors', 'rotate-secret', dcId, '--secret', 'x', '--generate']),
      s.run(['connectors', 'rotate-secret', dcId, '--overlap', '8d']),
      s.run(['connectors', 'rotate-secret', dcId, '--overlap', 'tomorrow']),
      s.run(['connectors', 'rotate-secret', dcId, '--overlap', '1.5s']),
      s.run(['connectors', 'rotate-secret', dcId, '--secret', '']),
      s.run(['connectors', 'rotate-secret']),
    ]);
    assert.deepEqual(
      runs.map((r) => r.code),
      [2, 2, 2, 2, 2, 2],
    );
    assert.match(runs[0]!.stderr, /give --secret or --generate, not both/);
    assert.match(runs[1]!.stderr, /--overlap must be at most 7d, got "8d"/);
    assert.match(runs[2]!.stderr, /--overlap must be a duration such as 0, 90s, 30m, 24h or 7d/);
    assert.match(runs[3]!.stderr, /--overlap must be whole seconds/);
    assert.match(runs[4]!.stderr, /--secret must not be empty/);
    assert.equal((await stored()).updateTime, updateTime, 'nothing was sent');
  });

  it('exit 1 with the API message for a project user (dataconnector.update) and for an unknown connector', async () => {
    const sa = (await s.api('POST', `projects/${s.projectId}/serviceaccounts`, { displayName: 'viewer' })).body;
    const key = (await s.api('POST', `${sa.name}/keys`, {})).body;
    const member = await s.api('POST', `projects/${s.projectId}/members`, {
      email: sa.email,
      roles: ['roles/project.user'],
    });
    assert.equal(member.status, 200, JSON.stringify(member.body));
    const asUser = {
      SENSORCLOUD_URL: s.url,
      SENSORCLOUD_KEY_ID: key.key.id,
      SENSORCLOUD_KEY_SECRET: key.secret,
      SENSORCLOUD_SERVICE_ACCOUNT: sa.email,
      SENSORCLOUD_PROJECT: s.projectId,
    };
    const updateTime = (await stored()).updateTime;
    const forbidden = await s.run(['connectors', 'rotate-secret', dcId], { env: asUser });
    assert.equal(forbidden.code, 1, forbidden.stderr);
    assert.match(forbidden.stderr, /^error: .*permission/im);
    assert.equal(forbidden.stdout, '');
    assert.equal((await stored()).updateTime, updateTime);

    const missing = await s.run(['connectors', 'rotate-secret', 'cvq2b1r0l4l9s3f2a9m0']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not found/);
  });

  it('no secret the user gave appears in any output; each one the service made, once', () => {
    const all = s.transcript.join('\n');
    for (const secret of [FIRST_SECRET, GIVEN_SECRET, PATCHED_SECRET]) assert.ok(!all.includes(secret), secret);
    assert.equal(generated.length, 3);
    for (const secret of generated) assert.equal(all.split(secret).length - 1, 1, secret);
  });
});
