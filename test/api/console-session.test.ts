// The console's cookie session (src/api/console-session.ts, docs/console.md): the password grant with
// session=cookie sets an HttpOnly SameSite=Strict cookie and keeps the token out of the body; the cookie
// authenticates /v2 only when there is no Authorization header; unsafe requests need the console header and the
// own origin; the lean :publish path leaves cookie requests to the route; sign-out clears the cookie.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SESSION_COOKIE } from '../../src/api/console-session.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

let t: TestContext;
before(async () => {
  t = await createTestContext();
});
after(() => t.close());

const CONSOLE = { 'x-requested-with': 'sensorcloud-console' };
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

async function signIn(extraHeaders: Record<string, string> = CONSOLE) {
  return t.request('POST', '/oauth2/token', {
    auth: null,
    rawBody: form({
      grant_type: 'password',
      username: t.boot.user.email,
      password: t.boot.user.password,
      session: 'cookie',
    }),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...extraHeaders },
  });
}

async function sessionCookie(): Promise<string> {
  const res = await signIn();
  assert.equal(res.status, 200, res.text);
  const setCookie = String(res.headers['set-cookie']);
  return setCookie.split(';')[0]!;
}

describe('happy', () => {
  it('signs in with session=cookie: HttpOnly SameSite=Strict cookie for the token life, no token in the body', async () => {
    const res = await signIn();
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { token_type: 'Bearer', expires_in: 3600 });
    const cookie = String(res.headers['set-cookie']);
    assert.match(
      cookie,
      new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_.-]+; Path=/; Max-Age=3600; HttpOnly; SameSite=Strict$`),
    );
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  it('the cookie authenticates reads and, with the console header, writes', async () => {
    const cookie = await sessionCookie();
    const list = await t.request('GET', '/v2/projects', { auth: null, headers: { cookie } });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.projects.length, 1);
    const created = await t.request('POST', `/v2/projects/${t.projectId}/devices`, {
      auth: null,
      headers: { cookie, ...CONSOLE, origin: 'http://127.0.0.1:8080' },
      body: { type: 'temperature' },
    });
    assert.equal(created.status, 200, created.text);
  });

  it('a cookie-authenticated :publish goes through the route and is stored like any publish', async () => {
    const cookie = await sessionCookie();
    const device = await t.createDevice();
    const url = `/v2/projects/${t.projectId}/devices/${device.id}:publish`;
    const ok = await t.request('POST', url, {
      auth: null,
      headers: { cookie, ...CONSOLE },
      body: { temperature: { value: 20.5 } },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body, {});
    const got = await t.request('GET', `/v2/projects/${t.projectId}/devices/${device.id}`);
    assert.equal(got.body.reported.temperature.value, 20.5);
    // Without the console header the same request is refused, on the lean path's URL too.
    const forged = await t.request('POST', url, {
      auth: null,
      headers: { cookie },
      body: { temperature: { value: 99 } },
    });
    assert.equal(forged.status, 403, forged.text);
    assert.equal(forged.body.code, 403);
  });

  it('an Authorization header wins over the cookie (API clients are unaffected)', async () => {
    const cookie = await sessionCookie();
    const res = await t.request('GET', '/v2/projects', { auth: { bearer: 'not-a-token' }, headers: { cookie } });
    assert.equal(res.status, 401);
  });

  it('sign-out clears the cookie', async () => {
    const res = await t.request('POST', '/oauth2/revoke', { auth: null, headers: CONSOLE });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {});
    assert.match(
      String(res.headers['set-cookie']),
      new RegExp(`^${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict$`),
    );
  });

  it('the cookie is Secure when the public URL is https', async () => {
    const s = await createTestContext({ env: { SENSORCLOUD_PUBLIC_URL: 'https://sensors.example.org' } });
    try {
      const res = await s.request('POST', '/oauth2/token', {
        auth: null,
        rawBody: form({
          grant_type: 'password',
          username: s.boot.user.email,
          password: s.boot.user.password,
          session: 'cookie',
        }),
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...CONSOLE },
      });
      assert.equal(res.status, 200, res.text);
      assert.match(String(res.headers['set-cookie']), /; Secure$/);
    } finally {
      await s.close();
    }
  });
});

describe('sad', () => {
  it('a cookie write without the console header is 403 with the error body', async () => {
    const cookie = await sessionCookie();
    const res = await t.request('POST', `/v2/projects/${t.projectId}/devices`, {
      auth: null,
      headers: { cookie },
      body: { type: 'touch' },
    });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 403);
    assert.match(res.body.error, /x-requested-with/);
  });

  it('a cookie write from another origin is 403', async () => {
    const cookie = await sessionCookie();
    const res = await t.request('DELETE', `/v2/projects/${t.projectId}`, {
      auth: null,
      headers: { cookie, ...CONSOLE, origin: 'https://evil.example' },
    });
    assert.equal(res.status, 403);
    assert.match(res.body.error, /another origin/);
    assert.equal((await t.request('GET', `/v2/projects/${t.projectId}`)).status, 200);
  });

  it('session=cookie needs the console header and the password grant', async () => {
    const noHeader = await signIn({});
    assert.equal(noHeader.status, 400);
    assert.equal(noHeader.body.error, 'invalid_request');
    assert.equal(noHeader.headers['set-cookie'], undefined);
    const crossOrigin = await signIn({ ...CONSOLE, origin: 'https://evil.example' });
    assert.equal(crossOrigin.status, 403);
    const jwt = await t.request('POST', '/oauth2/token', {
      auth: null,
      rawBody: form({
        grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
        assertion: 'x.y.z',
        session: 'cookie',
      }),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...CONSOLE },
    });
    assert.equal(jwt.status, 400);
    assert.match(jwt.body.error_description, /only for grant_type=password/);
  });

  it('a wrong password sets no cookie, and the login throttle applies', async () => {
    const s = await createTestContext();
    try {
      const attempt = () =>
        s.request('POST', '/oauth2/token', {
          auth: null,
          rawBody: form({
            grant_type: 'password',
            username: s.boot.user.email,
            password: 'wrong password!',
            session: 'cookie',
          }),
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...CONSOLE },
        });
      const first = await attempt();
      assert.equal(first.status, 400);
      assert.equal(first.body.error, 'invalid_grant');
      assert.equal(first.headers['set-cookie'], undefined);
      for (let i = 0; i < 9; i++) await attempt();
      const throttled = await attempt();
      assert.equal(throttled.status, 429);
      assert.ok(Number(throttled.headers['retry-after']) >= 1);
    } finally {
      await s.close();
    }
  });

  it('an expired or forged cookie is 401, and no cookie at all is 401', async () => {
    const user = (await t.deps.store.users.getByEmail(t.boot.user.email))!;
    const now = Math.floor(t.clock.now() / 1000);
    // The admin's own token, an hour and a minute old: past its life and its 30 s grace.
    const expired = t.deps.tokens.sign({ sub: `user:${user.id}`, kid: '', iat: now - 3660, exp: now - 60 });
    const fresh = t.deps.tokens.sign({ sub: `user:${user.id}`, kid: '', iat: now, exp: now + 3600 });
    assert.equal(
      (await t.request('GET', '/v2/projects', { auth: null, headers: { cookie: `${SESSION_COOKIE}=${fresh}` } }))
        .status,
      200,
    );
    const res = await t.request('GET', '/v2/projects', {
      auth: null,
      headers: { cookie: `${SESSION_COOKIE}=${expired}` },
    });
    assert.equal(res.status, 401);
    assert.equal(
      (await t.request('GET', '/v2/projects', { auth: null, headers: { cookie: `${SESSION_COOKIE}=forged.token.x` } }))
        .status,
      401,
    );
    assert.equal((await t.request('GET', '/v2/projects', { auth: null, headers: { cookie: 'other=1' } })).status, 401);
  });

  it('sign-out without the console header is refused and keeps the cookie', async () => {
    const res = await t.request('POST', '/oauth2/revoke', { auth: null });
    assert.equal(res.status, 403);
    assert.equal(res.headers['set-cookie'], undefined);
  });
});
