// Sessions that end (docs/authentication.md, Bearer tokens): sign-out (POST /oauth2/revoke) and a password reset
// move the user's token generation, and every token minted under an older one is 401 at once, in every process
// sharing the database (PostgreSQL), while a new login works. A service account's tokens end with its key.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SESSION_COOKIE } from '../../src/api/console-session.ts';
import { resetPassword } from '../../src/services/admin-recovery.ts';
import { createTestContext, type Auth, type TestContext } from '../helpers/context.ts';
import { openSecondProcess } from '../helpers/second-process.ts';

const CONSOLE = { 'x-requested-with': 'sensorcloud-console' };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

let t: TestContext;
/** The admin user's password: the bootstrap one until the reset below. */
let password = '';
before(async () => {
  t = await createTestContext();
  password = t.boot.user.password;
});
after(() => t.close());

/** The admin user's password grant: a Bearer token as API clients get it. */
async function login(): Promise<Auth> {
  const res = await t.request('POST', '/oauth2/token', {
    auth: null,
    headers: FORM,
    rawBody: form({ grant_type: 'password', username: t.boot.user.email, password }),
  });
  assert.equal(res.status, 200, res.text);
  return { bearer: res.body.access_token };
}
/** The console's login: the token in the session cookie; answers the Cookie header to send. */
async function consoleLogin(): Promise<string> {
  const res = await t.request('POST', '/oauth2/token', {
    auth: null,
    headers: { ...FORM, ...CONSOLE },
    rawBody: form({ grant_type: 'password', username: t.boot.user.email, password, session: 'cookie' }),
  });
  assert.equal(res.status, 200, res.text);
  return String(res.headers['set-cookie']).split(';')[0]!;
}
const projects = (auth: Auth, headers: Record<string, string> = {}) =>
  t.request('GET', '/v2/projects', { auth, headers });
const withCookie = (cookie: string) => projects(null, { cookie });
const signOut = (headers: Record<string, string>) =>
  t.request('POST', '/oauth2/revoke', { auth: null, headers: { ...CONSOLE, ...headers } });

describe('sign-out', () => {
  it('a user token minted before token generations existed works until the next sign-out', async () => {
    const user = (await t.deps.store.users.getByEmail(t.boot.user.email))!;
    assert.equal(user.tokenGeneration, 0);
    const now = Math.floor(t.clock.now() / 1000);
    const legacy = t.deps.tokens.sign({ sub: `user:${user.id}`, kid: '', iat: now, exp: now + 3600 });
    assert.equal((await projects({ bearer: legacy })).status, 200);
    await signOut({ cookie: await consoleLogin() });
    assert.equal((await projects({ bearer: legacy })).status, 401);
  });

  it("ends the session's token at once, and every other session of the user; a new login works", async () => {
    const cookie = await consoleLogin();
    const api = await login();
    for (let i = 0; i < 2; i++) {
      // Twice each: the second answer comes from the authentication cache.
      assert.equal((await withCookie(cookie)).status, 200);
      assert.equal((await projects(api)).status, 200);
    }
    const res = await signOut({ cookie });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {});
    assert.match(String(res.headers['set-cookie']), new RegExp(`^${SESSION_COOKIE}=; Path=/; Max-Age=0;`));
    const refused = await withCookie(cookie);
    assert.equal(refused.status, 401, 'the signed-out token, replayed by hand');
    assert.match(refused.body.error, /session has ended/);
    assert.equal((await projects(api)).status, 401, "the user's other token");
    const again = await consoleLogin();
    assert.equal((await withCookie(again)).status, 200);
    assert.equal((await projects(await login())).status, 200);
  });

  it('takes the token from the Authorization header too', async () => {
    const api = await login();
    assert.equal((await signOut({ authorization: `Bearer ${(api as { bearer: string }).bearer}` })).status, 200);
    assert.equal((await projects(api)).status, 401);
  });

  it('with a token that no longer works ends nothing more: the newer sessions stay', async () => {
    const old = await consoleLogin();
    assert.equal((await signOut({ cookie: old })).status, 200);
    const current = await consoleLogin();
    const attempts: Array<Record<string, string>> = [
      { cookie: old },
      { cookie: `${SESSION_COOKIE}=forged.token.x` },
      { authorization: 'Basic eDp5' },
      {},
    ];
    for (const headers of attempts) {
      assert.equal((await signOut(headers)).status, 200, JSON.stringify(headers));
    }
    assert.equal((await withCookie(current)).status, 200);
  });

  it('a service account token is left alone; without the console header nothing ends', async () => {
    const sa = await t.createServiceAccount({ roles: ['roles/project.user'] });
    const token = (
      await t.request('POST', '/oauth2/token', {
        auth: null,
        headers: FORM,
        rawBody: form({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: await assertionFor(sa) }),
      })
    ).body.access_token as string;
    assert.equal((await signOut({ authorization: `Bearer ${token}` })).status, 200);
    assert.equal((await projects({ bearer: token })).status, 200);
    const cookie = await consoleLogin();
    assert.equal((await t.request('POST', '/oauth2/revoke', { auth: null, headers: { cookie } })).status, 403);
    assert.equal((await withCookie(cookie)).status, 200);
  });
});

describe('password reset', () => {
  it('ends the tokens signed in with the old password; a login with the new one works', async () => {
    const api = await login();
    const cookie = await consoleLogin();
    assert.equal((await projects(api)).status, 200);
    ({ password } = await resetPassword(t.deps, t.boot.user.email, 'a new password after a leak'));
    assert.equal((await projects(api)).status, 401);
    assert.equal((await withCookie(cookie)).status, 401);
    assert.equal((await projects(await login())).status, 200);
  });
});

describe('another process on the same database', () => {
  it('a sign-out made through one process is refused at the other on its very next request', async (ctx) => {
    if (t.deps.store.exclusive) {
      ctx.skip('one process owns a SQLite store: there is no other process (auth-cache.test.ts covers the TTL)');
      return;
    }
    const other = await openSecondProcess(t);
    try {
      const atOther = async (cookie: string) => (await other.request('GET', '/v2/projects', { cookie })).status;
      const cookie = await consoleLogin();
      assert.equal(await atOther(cookie), 200);
      assert.equal(await atOther(cookie), 200, 'cached there now');
      assert.equal((await signOut({ cookie })).status, 200);
      assert.equal(await atOther(cookie), 401);
      assert.equal(await atOther(await consoleLogin()), 200);
    } finally {
      await other.close();
    }
  });
});

/** An HS256 JWT-bearer assertion for the account, with a fresh jti. */
async function assertionFor(sa: { keyId: string; secret: string; email: string }): Promise<string> {
  const { SignJWT } = await import('jose');
  const iat = Math.floor(t.clock.now() / 1000);
  return new SignJWT({
    iss: sa.email,
    aud: `${t.deps.config.publicUrl}/oauth2/token`,
    iat,
    exp: iat + 3600,
    jti: t.deps.ids.next(),
  })
    .setProtectedHeader({ alg: 'HS256', kid: sa.keyId })
    .sign(new TextEncoder().encode(sa.secret));
}
