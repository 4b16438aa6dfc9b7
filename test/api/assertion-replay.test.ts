// JWT-bearer assertions are taken once (jwt-bearer.ts check 12, docs/authentication.md): an assertion with a `jti`
// exchanged again, in this process or another sharing the database, is 400 invalid_grant for as long as it could
// pass the expiry check, and the jti is forgotten by the retention job after that. Assertions without a jti (what
// the documented jose call and older clients send) keep working as before, bounded by their exp only.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { pruneAssertionIds } from '../../src/auth/assertion-ids.ts';
import { startRetention } from '../../src/events/retention.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createTestContext, type Account, type TestContext, type TestResponse } from '../helpers/context.ts';
import { openSecondProcess } from '../helpers/second-process.ts';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const grant = (assertion: string) => new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString();

let t: TestContext;
let sa: Account;
before(async () => {
  t = await createTestContext();
  sa = await t.createServiceAccount({ roles: ['roles/project.user'], enableBasicAuth: false });
});
after(() => t.close());

const nowSeconds = () => Math.floor(t.clock.now() / 1000);
let jtis = 0;
/** As the reference SDK signs them (exp = iat + 3600), with a new jti unless told; `jti: undefined` leaves it out. */
async function assertion(
  o: { jti?: string | number; secret?: string; account?: Account; iat?: number } = { jti: `jti-${++jtis}` },
): Promise<string> {
  const account = o.account ?? sa;
  const iat = o.iat ?? nowSeconds();
  const claims: Record<string, unknown> = {
    iss: account.email,
    aud: `${t.deps.config.publicUrl}/oauth2/token`,
    iat,
    exp: iat + 3600,
  };
  if (o.jti !== undefined) claims.jti = o.jti;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', kid: account.keyId, typ: 'JWT' })
    .sign(new TextEncoder().encode(o.secret ?? account.secret));
}
const exchange = (a: string) => t.request('POST', '/oauth2/token', { auth: null, headers: FORM, rawBody: grant(a) });

function assertInvalidGrant(res: TestResponse, description: RegExp): void {
  assert.equal(res.status, 400, res.text);
  assert.deepEqual(Object.keys(res.body), ['error', 'error_description', 'code', 'help']);
  assert.equal(res.body.error, 'invalid_grant');
  assert.equal(res.body.code, 400);
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.match(res.body.error_description, description);
}

describe('happy', () => {
  it('a fresh assertion works, and the next one with a new jti too', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await exchange(await assertion());
      assert.equal(res.status, 200, res.text);
      assert.equal(
        (await t.request('GET', `/v2/projects/${t.projectId}`, { auth: { bearer: res.body.access_token } })).status,
        200,
      );
    }
  });

  it('an assertion without a jti is taken as before, again and again within its exp (existing clients)', async () => {
    const plain = await assertion({ jti: undefined });
    for (let i = 0; i < 3; i++) assert.equal((await exchange(plain)).status, 200);
  });

  it('the same jti under another key is another assertion', async () => {
    const other = await t.createServiceAccount({ roles: ['roles/project.user'] });
    assert.equal((await exchange(await assertion({ jti: 'shared' }))).status, 200);
    assert.equal((await exchange(await assertion({ jti: 'shared', account: other }))).status, 200);
  });
});

describe('replay', () => {
  it('is 400 invalid_grant with the OAuth error shape, for as long as its exp (plus the skew) lets it pass', async () => {
    const once = await assertion({ jti: 'replayed' });
    assert.equal((await exchange(once)).status, 200);
    assertInvalidGrant(await exchange(once), /jti was used already/);
    // 50 minutes later: the finding's case.
    t.clock.advance(50 * 60_000);
    assertInvalidGrant(await exchange(once), /jti was used already/);
    // Past exp but within the 60 s skew: still remembered.
    t.clock.advance(10 * 60_000 + 30_000);
    assertInvalidGrant(await exchange(once), /jti was used already/);
    // Past the skew: the expiry check refuses it, the jti is no longer needed.
    t.clock.advance(31_000);
    assertInvalidGrant(await exchange(once), /expired/);
    assert.equal((await exchange(await assertion())).status, 200, 'a fresh one works');
  });

  it('of the same assertion sent twice at once exactly one gets a token', async () => {
    const a = await assertion();
    const answers = await Promise.all([exchange(a), exchange(a), exchange(a)]);
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 400, 400]);
  });

  it('a failed assertion does not use up its jti: the genuine one with that jti still works', async () => {
    assertInvalidGrant(await exchange(await assertion({ jti: 'not-burnt', secret: 'f'.repeat(32) })), /signature/);
    assertInvalidGrant(await exchange(await assertion({ jti: 'not-burnt', iat: nowSeconds() - 7200 })), /expired/);
    assert.equal((await exchange(await assertion({ jti: 'not-burnt' }))).status, 200);
  });

  it('a jti that is not a string is refused', async () => {
    assertInvalidGrant(await exchange(await assertion({ jti: 42 })), /jti must be a string/);
  });

  it('is refused by another process sharing the database (PostgreSQL)', async (ctx) => {
    if (t.deps.store.exclusive) {
      ctx.skip('one process owns a SQLite store');
      return;
    }
    const other = await openSecondProcess(t);
    try {
      const a = await assertion();
      assert.equal((await exchange(a)).status, 200);
      const res = await other.request('POST', '/oauth2/token', FORM, grant(a));
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'invalid_grant');
      assert.equal((await other.request('POST', '/oauth2/token', FORM, grant(await assertion()))).status, 200);
    } finally {
      await other.close();
    }
  });
});

describe('pruning', () => {
  it('forgets the jtis past their time, not before; the retention job does it', async () => {
    // What the tests above left behind goes first.
    t.clock.advance(2 * 3600_000);
    await pruneAssertionIds(t.deps);
    for (let i = 0; i < 3; i++) assert.equal((await exchange(await assertion())).status, 200);
    const kept = await assertion({ jti: 'kept' });
    assert.equal((await exchange(kept)).status, 200);
    assert.equal(await pruneAssertionIds(t.deps), 0, 'none is past its time yet');
    assertInvalidGrant(await exchange(kept), /used already/);
    t.clock.advance(3660_000 + 1000);
    assert.equal(await pruneAssertionIds(t.deps), 4);

    assert.equal((await exchange(await assertion())).status, 200);
    t.clock.advance(3660_000 + 1000);
    const timer = startRetention(t.deps, { intervalMs: 60_000 }); // a pass at once
    await timer.stop();
    assert.equal(await t.deps.store.assertionIds.deleteExpired(nowMicros(t.deps), 10), 0, 'the retention pass took it');
  });
});
