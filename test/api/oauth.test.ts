// POST /oauth2/token (contract §2.3-2.5): JWT-bearer checks in order, password logins and their throttle,
// token lifetime, and tokens on /v2. Assertions are built here with jose, independently of server code.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { hashPassword } from '../../src/auth/passwords.ts';
import { createMemoryLoginFailures } from '../../src/auth/login-failures-memory.ts';
import { createLoginThrottle, type LoginThrottle } from '../../src/auth/login-throttle.ts';
import { ApiError } from '../../src/domain/errors.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createTestContext, type TestContext, type TestResponse } from '../helpers/context.ts';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const T0 = 1748779200; // 2025-06-01T12:00:00Z, the worked example's iat
const PROJECT = 'cvq2b1b0l4l9s3f2a9g0';
const SA = 'cvq2b1r0l4l9s3f2a9l0';
const KEY = 'cvq2b1r0l4l9s3f2a9k0';
const SECRET = '0123456789abcdef0123456789abcdef';
const EMAIL = 'cvq2b1r0l4l9s3f2a9l0@cvq2b1b0l4l9s3f2a9g0.serviceaccount.sensorcloud.local';
const AUD = 'http://127.0.0.1:8080/oauth2/token';
const WORKED_ASSERTION =
  'eyJhbGciOiJIUzI1NiIsImtpZCI6ImN2cTJiMXIwbDRsOXMzZjJhOWswIiwidHlwIjoiSldUIn0.eyJpYXQiOjE3NDg3NzkyMDAsImV4cCI6MTc0ODc4MjgwMCwiYXVkIjoiaHR0cDovLzEyNy4wLjAuMTo4MDgwL29hdXRoMi90b2tlbiIsImlzcyI6ImN2cTJiMXIwbDRsOXMzZjJhOWwwQGN2cTJiMWIwbDRsOXMzZjJhOWcwLnNlcnZpY2VhY2NvdW50LnNlbnNvcmNsb3VkLmxvY2FsIn0.rMsmn6JfFGBcSnCJJDLqJ1C0UV1lCXhI3cCGOVr_S-Q';

interface AssertionOptions {
  alg?: string;
  kid?: string | null;
  typ?: string | null;
  secret?: string;
  claims?: Record<string, unknown>;
}

/** An assertion with the worked example's claims by default; `claims` entries override (undefined removes). */
async function makeAssertion(o: AssertionOptions = {}): Promise<string> {
  const claims: Record<string, unknown> = { iss: EMAIL, aud: AUD, iat: T0, exp: T0 + 3600, ...o.claims };
  for (const k of Object.keys(claims)) if (claims[k] === undefined) delete claims[k];
  const header: Record<string, unknown> = { alg: o.alg ?? 'HS256' };
  if (o.kid !== null) header.kid = o.kid ?? KEY;
  if (o.typ !== null) header.typ = o.typ ?? 'JWT';
  return new SignJWT(claims)
    .setProtectedHeader(header as { alg: string })
    .sign(new TextEncoder().encode(o.secret ?? SECRET));
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** Hand-built JWT for shapes jose refuses to produce (alg none, odd headers). */
function rawJwt(header: unknown, claims: unknown, secret: string | null = SECRET): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${secret === null ? '' : createHmac('sha256', secret).update(input).digest('base64url')}`;
}

describe('oauth2 token endpoint', () => {
  let t: TestContext;

  const form = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    t.request('POST', '/oauth2/token', {
      auth: null,
      rawBody: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    });
  const exchange = (assertion: string, headers: Record<string, string> = {}) =>
    form({ grant_type: JWT_BEARER, assertion }, headers);

  function assertOAuthError(res: TestResponse, error: string, description?: RegExp): void {
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(Object.keys(res.body), ['error', 'error_description', 'code', 'help']);
    assert.equal(res.body.error, error);
    assert.equal(res.body.code, 400);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.ok(!res.text.includes(SECRET), 'no secret in the error');
    if (description) assert.match(res.body.error_description, description);
  }

  before(async () => {
    t = await createTestContext({
      clock: new FakeClock(T0 * 1000),
      env: { SENSORCLOUD_PUBLIC_URL: 'http://127.0.0.1:8080' },
    });
    const { store } = t.deps;
    const now = T0 * 1_000_000;
    await store.projects.create({
      id: PROJECT,
      organizationId: t.organizationId,
      displayName: 'Worked example',
      location: { latitude: null, longitude: null, timeLocation: '' },
      labels: {},
      createTime: now,
      updateTime: now,
    });
    // enableBasicAuth false: it plays no part in the JWT-bearer grant.
    await store.serviceAccounts.create({
      id: SA,
      projectId: PROJECT,
      email: EMAIL,
      displayName: 'worked',
      enableBasicAuth: false,
      createTime: now,
      updateTime: now,
    });
    await store.keys.create({
      id: KEY,
      serviceAccountId: SA,
      secretEnc: t.deps.secretBox.seal(SECRET),
      createTime: now,
    });
    await store.memberships.create({
      scopeType: 'project',
      scopeId: PROJECT,
      memberId: SA,
      accountType: 'SERVICE_ACCOUNT',
      roles: ['roles/project.admin'],
      status: 'ACCEPTED',
      createTime: now,
    });
  });
  beforeEach(() => t.clock.set(T0 * 1000));
  after(() => t.close());

  describe('happy', () => {
    it('exchanges the worked assertion of the contract, verbatim', async () => {
      const res = await exchange(WORKED_ASSERTION);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body), ['access_token', 'token_type', 'expires_in']);
      assert.equal(res.body.token_type, 'Bearer');
      assert.equal(res.body.expires_in, 3600);
      assert.equal(typeof res.body.access_token, 'string');
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.match(String(res.headers['content-type']), /^application\/json/);
    });

    it('accepts jose-built assertions with and without typ, and aud as an array', async () => {
      for (const o of [
        {},
        { typ: null },
        { typ: 'at+jwt' },
        { claims: { aud: [AUD] } },
        { claims: { aud: ['https://other.example/x', AUD] } },
      ] as AssertionOptions[]) {
        const res = await exchange(await makeAssertion(o));
        assert.equal(res.status, 200, `${JSON.stringify(o)}: ${res.text}`);
      }
    });

    it('accepts a JSON body, also with extra whitespace and fields', async () => {
      const assertion = await makeAssertion();
      const json = await t.request('POST', '/oauth2/token', {
        auth: null,
        body: { grant_type: JWT_BEARER, assertion, scope: 'ignored' },
      });
      assert.equal(json.status, 200, json.text);
      const spaced = await t.request('POST', '/oauth2/token', {
        auth: null,
        rawBody: `  ${JSON.stringify({ grant_type: JWT_BEARER, assertion })}`,
      });
      assert.equal(spaced.status, 200, spaced.text);
    });

    it('normalises audiences and accepts the request Host as an audience', async () => {
      for (const aud of ['HTTP://127.0.0.1:8080/oauth2/token/', 'http://127.0.0.1:8080/oauth2/token']) {
        assert.equal((await exchange(await makeAssertion({ claims: { aud } }))).status, 200, aud);
      }
      const viaHost = await makeAssertion({ claims: { aud: 'http://sensors.example:9000/oauth2/token' } });
      assert.equal((await exchange(viaHost, { host: 'sensors.example:9000' })).status, 200);
      assert.equal((await exchange(viaHost, { host: 'other.example:9000' })).status, 400);
      const defaultPort = await makeAssertion({ claims: { aud: 'http://Sensors.Example:80/oauth2/token' } });
      assert.equal((await exchange(defaultPort, { host: 'sensors.example' })).status, 200);
    });

    it('accepts the boundaries of the time checks', async () => {
      const now = T0;
      const cases: Record<string, unknown>[] = [
        { iat: now + 60, exp: now + 60 + 3600 },
        { iat: now - 3600 - 59, exp: now - 59 },
        { iat: now, exp: now + 3660 },
        { iat: now, exp: now + 1 },
        { nbf: now + 60 },
        { iat: now + 0.5, exp: now + 3600.5 },
      ];
      for (const claims of cases)
        assert.equal((await exchange(await makeAssertion({ claims }))).status, 200, JSON.stringify(claims));
    });

    it('issues a Bearer token that works on /v2 with the account memberships', async () => {
      const token = (await exchange(WORKED_ASSERTION)).body.access_token;
      const roles = await t.request('GET', '/v2/roles', { auth: { bearer: token } });
      assert.equal(roles.status, 200);
      const list = await t.request('GET', `/v2/projects/${PROJECT}/serviceaccounts`, { auth: { bearer: token } });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.serviceAccounts[0].email, EMAIL);
      assert.equal(list.body.serviceAccounts[0].enableBasicAuth, false);
      // The same key cannot use Basic: enableBasicAuth is false.
      assert.equal((await t.request('GET', '/v2/roles', { auth: { basic: [KEY, SECRET] } })).status, 401);
      // No rights where it holds no membership.
      assert.equal(
        (await t.request('GET', `/v2/projects/${t.projectId}/serviceaccounts`, { auth: { bearer: token } })).status,
        404,
      );
    });

    it('a token lives 3600 s plus 30 s of grace', async () => {
      const token = (await exchange(WORKED_ASSERTION)).body.access_token;
      t.clock.advance(3600_000);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer: token } })).status, 200);
      t.clock.advance(30_000);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer: token } })).status, 200);
      t.clock.advance(1000);
      const expired = await t.request('GET', '/v2/roles', { auth: { bearer: token } });
      assert.equal(expired.status, 401);
      assert.equal(expired.body.code, 401);
    });

    it('logs a console user in with the password grant (form and JSON)', async () => {
      const { email, password } = t.boot.user;
      const res = await form({ grant_type: 'password', username: email.toUpperCase(), password });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.token_type, 'Bearer');
      assert.equal(res.body.expires_in, 3600);
      assert.equal(res.headers['cache-control'], 'no-store');
      const orgs = await t.request('GET', '/v2/organizations', { auth: { bearer: res.body.access_token } });
      assert.equal(orgs.status, 200);
      assert.equal(orgs.body.organizations.length, 1);
      const json = await t.request('POST', '/oauth2/token', {
        auth: null,
        body: { grant_type: 'password', username: email, password },
      });
      assert.equal(json.status, 200, json.text);
    });
  });

  describe('errors', () => {
    it('each assertion check fails with invalid_grant, in the order of the contract', async () => {
      const header = { alg: 'HS256', kid: KEY };
      const claims = { iss: EMAIL, aud: AUD, iat: T0, exp: T0 + 3600 };
      const cases: [string, string | Promise<string>, RegExp][] = [
        ['two segments', 'abc.def', /three base64url segments/],
        ['four segments', `${WORKED_ASSERTION}.x`, /three base64url segments/],
        ['non-base64url characters', 'a+b.c/d.e=f', /three base64url segments/],
        ['header not JSON', `${b64('nope')}.${b64(claims)}.sig`, /JSON objects/],
        ['payload an array', rawJwt(header, [1, 2]), /JSON objects/],
        ['alg none without signature', rawJwt({ alg: 'none', kid: KEY }, claims, null), /alg must be HS256/],
        ['alg none with a valid HMAC', rawJwt({ alg: 'none', kid: KEY }, claims), /alg must be HS256/],
        ['alg hs256 (case)', rawJwt({ alg: 'hs256', kid: KEY }, claims), /alg must be HS256/],
        ['alg HS512', makeAssertion({ alg: 'HS512' }), /alg must be HS256/],
        ['no kid', makeAssertion({ kid: null }), /kid/],
        ['unknown kid', makeAssertion({ kid: 'cvq2b1r0l4l9s3f2a9zz' }), /kid does not name an existing key/],
        ['wrong signature', makeAssertion({ secret: 'ffffffffffffffffffffffffffffffff' }), /signature/],
        ['empty signature', rawJwt(header, claims, null), /signature/],
        ['wrong iss', makeAssertion({ claims: { iss: 'someone@else.example' } }), /iss/],
        ['missing iss', makeAssertion({ claims: { iss: undefined } }), /iss/],
        ['wrong aud', makeAssertion({ claims: { aud: 'http://127.0.0.1:8080/oauth2/other' } }), /aud/],
        ['aud array without a match', makeAssertion({ claims: { aud: ['http://evil.example/oauth2/token'] } }), /aud/],
        [
          'aud array with a non-string',
          makeAssertion({ claims: { aud: [AUD, 5] } }),
          /aud must be a string or an array/,
        ],
        ['aud empty array', makeAssertion({ claims: { aud: [] } }), /aud/],
        ['aud missing', makeAssertion({ claims: { aud: undefined } }), /aud/],
        ['iat not a number', makeAssertion({ claims: { iat: String(T0) } }), /iat and exp must be numbers/],
        ['exp missing', makeAssertion({ claims: { exp: undefined } }), /iat and exp must be numbers/],
        ['exp equal to iat', makeAssertion({ claims: { exp: T0 } }), /exp must be after iat/],
        ['exp before iat', makeAssertion({ claims: { exp: T0 - 1 } }), /exp must be after iat/],
        [
          'iat more than 60 s in the future',
          makeAssertion({ claims: { iat: T0 + 61, exp: T0 + 61 + 3600 } }),
          /iat is in the future/,
        ],
        ['expired beyond the skew', makeAssertion({ claims: { iat: T0 - 3660, exp: T0 - 60 } }), /expired/],
        ['exp - iat over 3660 s', makeAssertion({ claims: { exp: T0 + 3661 } }), /at most 3660/],
        ['nbf more than 60 s in the future', makeAssertion({ claims: { nbf: T0 + 61 } }), /nbf/],
        ['nbf not a number', makeAssertion({ claims: { nbf: 'soon' } }), /nbf/],
      ];
      for (const [label, assertion, description] of cases) {
        const res = await exchange(await assertion);
        assert.equal(res.status, 400, label);
        assertOAuthError(res, 'invalid_grant', description);
      }
    });

    it('checks the signature before the claims: a forged token with bad claims says "signature"', async () => {
      const forged = await makeAssertion({ secret: 'wrong', claims: { iss: 'x', aud: 'y', exp: 0 } });
      assertOAuthError(await exchange(forged), 'invalid_grant', /signature/);
    });

    it('the worked assertion is refused once the clock has moved past its expiry', async () => {
      t.clock.set((T0 + 3600 + 60) * 1000);
      assertOAuthError(await exchange(WORKED_ASSERTION), 'invalid_grant', /expired/);
      t.clock.set((T0 - 61) * 1000);
      assertOAuthError(await exchange(WORKED_ASSERTION), 'invalid_grant', /iat is in the future/);
    });

    it('missing fields and unreadable bodies are invalid_request', async () => {
      assertOAuthError(await t.request('POST', '/oauth2/token', { auth: null }), 'invalid_request', /grant_type/);
      assertOAuthError(await form({ assertion: WORKED_ASSERTION }), 'invalid_request', /grant_type/);
      assertOAuthError(await form({ grant_type: JWT_BEARER }), 'invalid_request', /assertion/);
      assertOAuthError(await form({ grant_type: JWT_BEARER, assertion: '' }), 'invalid_request', /assertion/);
      assertOAuthError(await form({ grant_type: 'password', username: 'a@b.c' }), 'invalid_request', /password/);
      assertOAuthError(await form({ grant_type: 'password', password: 'x' }), 'invalid_request', /username/);
      assertOAuthError(
        await t.request('POST', '/oauth2/token', { auth: null, rawBody: '{"grant_type":' }),
        'invalid_request',
        /neither a form nor a JSON/,
      );
      assertOAuthError(
        await t.request('POST', '/oauth2/token', { auth: null, body: { grant_type: JWT_BEARER, assertion: 5 } }),
        'invalid_request',
        /assertion/,
      );
      const repeated = await t.request('POST', '/oauth2/token', {
        auth: null,
        rawBody: `grant_type=${JWT_BEARER}&grant_type=password`,
      });
      assertOAuthError(repeated, 'invalid_request', /repeated/);
    });

    it('other grant types are unsupported_grant_type', async () => {
      for (const grant_type of [
        'client_credentials',
        'refresh_token',
        'authorization_code',
        'urn:ietf:params:oauth:grant-type:saml2-bearer',
      ]) {
        assertOAuthError(await form({ grant_type, assertion: WORKED_ASSERTION }), 'unsupported_grant_type');
      }
    });

    it('wrong passwords, unknown and pending users are invalid_grant', async () => {
      const now = T0 * 1_000_000;
      const pendingId = t.deps.ids.next();
      await t.deps.store.users.create({
        id: pendingId,
        email: 'pending@example.org',
        displayName: '',
        passwordHash: await hashPassword('pending-password-1', t.deps.random),
        active: false,
        createTime: now,
        updateTime: now,
      });
      for (const [username, password] of [
        [t.boot.user.email, 'wrong-password-123'],
        ['nobody@example.org', 'whatever-123456'],
        ['pending@example.org', 'pending-password-1'],
      ]) {
        const res = await form({ grant_type: 'password', username: username!, password: password! });
        assertOAuthError(res, 'invalid_grant', /invalid email or password/);
        assert.ok(!res.text.includes(password!));
      }
    });
  });

  describe('security', () => {
    it('never answers 401, even with a wrong Authorization header', async () => {
      const res = await t.request('POST', '/oauth2/token', {
        auth: { raw: 'Basic bm9wZTpub3Bl' },
        rawBody: new URLSearchParams({ grant_type: JWT_BEARER, assertion: WORKED_ASSERTION }).toString(),
      });
      assert.equal(res.status, 200, res.text);
    });

    it('a token dies when its key is deleted; a token of another key lives on', async () => {
      const created = await t.request('POST', `/v2/projects/${PROJECT}/serviceaccounts/${SA}/keys`);
      assert.equal(created.status, 200);
      const second = (await exchange(await makeAssertion({ kid: created.body.key.id, secret: created.body.secret })))
        .body.access_token;
      const first = (await exchange(WORKED_ASSERTION)).body.access_token;
      assert.equal(
        (await t.request('GET', `/v2/projects/${PROJECT}`.concat('/serviceaccounts'), { auth: { bearer: second } }))
          .status,
        200,
      );
      assert.equal((await t.request('DELETE', `/v2/${created.body.key.name}`)).status, 200);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer: second } })).status, 401);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer: first } })).status, 200);
      // And the deleted key can no longer mint tokens.
      assertOAuthError(
        await exchange(await makeAssertion({ kid: created.body.key.id, secret: created.body.secret })),
        'invalid_grant',
        /kid/,
      );
    });

    it('a forged or tampered access token is 401', async () => {
      const token: string = (await exchange(WORKED_ASSERTION)).body.access_token;
      const [h, p, s] = token.split('.');
      const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
      const tampered = `${h}.${b64({ ...claims, exp: claims.exp + 86400 })}.${s}`;
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer: tampered } })).status, 401);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer: WORKED_ASSERTION } })).status, 401);
    });

    it('10 failed logins for one email within 15 min give 429 until the window has passed', async () => {
      const now = T0 * 1_000_000;
      const email = 'throttled@example.org';
      const password = 'correct-horse-battery';
      await t.deps.store.users.create({
        id: t.deps.ids.next(),
        email,
        displayName: 'T',
        passwordHash: await hashPassword(password, t.deps.random),
        active: true,
        createTime: now,
        updateTime: now,
      });
      for (let i = 0; i < 10; i++) {
        t.clock.advance(60_000); // spread over 10 minutes: all still inside the window
        assertOAuthError(
          await form({ grant_type: 'password', username: email, password: `wrong-${i}` }),
          'invalid_grant',
        );
      }
      const limited = await form({ grant_type: 'password', username: email, password });
      assert.equal(limited.status, 429, limited.text);
      assert.deepEqual(Object.keys(limited.body), ['error', 'code', 'help']);
      assert.ok(Number(limited.headers['retry-after']) >= 1);
      // Another email is not affected.
      assert.equal(
        (await form({ grant_type: 'password', username: t.boot.user.email, password: t.boot.user.password })).status,
        200,
      );
      // Case does not get around it.
      assert.equal((await form({ grant_type: 'password', username: email.toUpperCase(), password })).status, 429);
      // Once the first failure leaves the 15-minute window, the correct password works again.
      t.clock.advance(6 * 60_000);
      assert.equal((await form({ grant_type: 'password', username: email, password })).status, 200);
    });

    it('the token endpoint is rate limited by client IP', async () => {
      const limited = await createTestContext({ env: { SENSORCLOUD_RATE_LIMIT: '2/10s' } });
      try {
        const send = () => limited.request('POST', '/oauth2/token', { auth: null, rawBody: 'grant_type=password' });
        assert.equal((await send()).status, 400);
        assert.equal((await send()).status, 400);
        const res = await send();
        assert.equal(res.status, 429);
        assert.ok(res.headers['retry-after']);
      } finally {
        await limited.close();
      }
    });
  });
});

// The throttle of one process (memory) and of a cluster (the database, shared by its processes): the same rules.
describe('login throttle', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | null = null;
  let store: PostgresStore | null = null;
  after(async () => {
    await store?.close();
    await db?.drop();
  });
  const shared = async (clock: FakeClock): Promise<LoginThrottle> => {
    db ??= await createTestDatabase();
    store ??= await createPostgresStore(db.url, { poolSize: 2 });
    return createLoginThrottle(clock, store.cluster!.loginFailures);
  };
  const kinds: Array<[string, (clock: FakeClock) => Promise<LoginThrottle>]> = [
    ['in memory', async (clock) => createLoginThrottle(clock, createMemoryLoginFailures())],
    ['shared in PostgreSQL', shared],
  ];
  /** The seconds of the 429 a login is refused with, or 0 when it is counted. */
  const refusal = async (attempt: Promise<unknown>): Promise<number> => {
    try {
      await attempt;
      return 0;
    } catch (err) {
      assert.ok(err instanceof ApiError && err.status === 429, String(err));
      return err.extra.retryAfterSeconds!;
    }
  };
  for (const [kind, make] of kinds) {
    it(`${kind}: refuses a client at its 10th failure for an email within 15 min, and slides`, async () => {
      const clock = new FakeClock(0);
      const throttle = await make(clock);
      for (let i = 0; i < 9; i++) await throttle.begin('a@b.c', '192.0.2.1');
      clock.advance(60_000);
      await throttle.begin('A@B.C', '192.0.2.1');
      assert.equal(await refusal(throttle.begin('a@b.c', '192.0.2.1')), 14 * 60);
      assert.equal(
        await refusal(throttle.begin('a@b.c', '192.0.2.2')),
        0,
        'another client of the email is not held back',
      );
      assert.equal(
        await refusal(throttle.begin('other@b.c', '192.0.2.1')),
        0,
        'another email of the client is not held back',
      );
      clock.advance(14 * 60_000 - 1);
      assert.equal(await refusal(throttle.begin('a@b.c', '192.0.2.1')), 1);
      clock.advance(1);
      assert.equal(await refusal(throttle.begin('a@b.c', '192.0.2.1')), 0);
    });

    it(`${kind}: a success forgets the client's earlier failures, and is no failure itself`, async () => {
      const throttle = await make(new FakeClock(0));
      for (let i = 0; i < 9; i++) await throttle.begin('s@b.c', '192.0.2.1');
      await (await throttle.begin('s@b.c', '192.0.2.1')).succeeded();
      for (let i = 0; i < 9; i++) await throttle.begin('s@b.c', '192.0.2.1');
      assert.equal(await refusal(throttle.begin('s@b.c', '192.0.2.1')), 0);
    });

    it(`${kind}: 50 failures for an email from any number of clients refuse it everywhere`, async () => {
      const clock = new FakeClock(0);
      const throttle = await make(clock);
      for (let i = 0; i < 50; i++) await throttle.begin('spread@b.c', `198.51.100.${i}`);
      assert.equal(await refusal(throttle.begin('spread@b.c', '203.0.113.1')), 15 * 60);
      assert.equal(await refusal(throttle.begin('other@b.c', '198.51.100.1')), 0);
    });

    it(`${kind}: an IPv6 client is its /64`, async () => {
      const throttle = await make(new FakeClock(0));
      for (let i = 0; i < 10; i++) await throttle.begin('v6@b.c', `2001:db8:0:1::${i + 1}`);
      assert.equal(await refusal(throttle.begin('v6@b.c', '2001:db8:0:1:ffff::9')), 15 * 60);
      assert.equal(await refusal(throttle.begin('v6@b.c', '2001:db8:0:2::1')), 0);
    });
  }

  it('shared in PostgreSQL: failures counted by one process count at another, and racing ones are counted one by one', async () => {
    const clock = new FakeClock(0);
    const first = await shared(clock);
    const otherProcess = await createPostgresStore(db!.url, { poolSize: 4 });
    after(() => otherProcess.close());
    const second = createLoginThrottle(clock, otherProcess.cluster!.loginFailures);
    for (let i = 0; i < 5; i++) await first.begin('spread@x.c', '192.0.2.1');
    for (let i = 0; i < 5; i++) await second.begin('spread@x.c', '192.0.2.1');
    assert.equal(await refusal(first.begin('spread@x.c', '192.0.2.1')), 15 * 60);
    assert.equal(await refusal(second.begin('spread@x.c', '192.0.2.1')), 15 * 60);
    // Both processes at once, 20 attempts each: 10 are counted between them.
    const raced = await Promise.all(
      Array.from({ length: 40 }, (_, i) => refusal((i % 2 ? first : second).begin('race@x.c', '192.0.2.7'))),
    );
    assert.equal(raced.filter((wait) => wait === 0).length, 10);
  });
});
