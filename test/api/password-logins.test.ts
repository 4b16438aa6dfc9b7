// Password logins under attack and under load (docs/authentication.md, "Password grant"), over HTTP: every attempt
// is counted before its password is checked, so attempts sent at once cannot all be checked; the checks running at
// once are bounded, the excess refused at once (503, or 429 for a client that has its share running) while API
// requests that check no password go on; and the lock is per client address and email, so a guesser locks itself
// out and not the owner, with a bound per email over all addresses. Each 400 `invalid_grant` is a check that ran.
import assert from 'node:assert/strict';
import { randomBytes, scrypt } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createTestContext, type TestContext, type TestResponse } from '../helpers/context.ts';

const T0 = 1_750_000_000_000;

/** A scrypt hash in the stored format with the cost given: cheap ones keep many checks quick, dear ones hold a slot. */
async function hashWithCost(password: string, n: number, p: number): Promise<string> {
  const salt = randomBytes(16);
  const key = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password, salt, 32, { N: n, r: 8, p, maxmem: 256 * n * 8 }, (err, k) => (err ? reject(err) : resolve(k))),
  );
  return `scrypt$${n}$8$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

async function createUser(t: TestContext, email: string, passwordHash: string): Promise<void> {
  const now = t.clock.now() * 1000;
  await t.deps.store.users.create({
    id: t.deps.ids.next(),
    email,
    displayName: 'U',
    passwordHash,
    active: true,
    createTime: now,
    updateTime: now,
  });
}

const login = (t: TestContext, username: string, password: string, remoteAddress = '127.0.0.1') =>
  t.request('POST', '/oauth2/token', {
    auth: null,
    remoteAddress,
    rawBody: new URLSearchParams({ grant_type: 'password', username, password }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

const statuses = (responses: TestResponse[]) => {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
};

describe('password logins sent at once', () => {
  let t: TestContext;
  // Slots for every attempt, so that the throttle alone decides which are checked. The thread pool named is only
  // what the configuration is checked against: the checks beyond the real one's 4 threads wait there.
  before(async () => {
    t = await createTestContext({
      clock: new FakeClock(T0),
      env: {
        SENSORCLOUD_PASSWORD_CHECKS: '64',
        SENSORCLOUD_PASSWORD_CHECKS_PER_CLIENT: '64',
        UV_THREADPOOL_SIZE: '65',
      },
    });
  });
  after(() => t.close());

  it('30 wrong passwords for one email from one address: 10 are checked, 20 refused with 429', async () => {
    await createUser(t, 'raced@example.org', await hashWithCost('the-right-password', 1024, 1));
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => login(t, 'raced@example.org', `wrong-${i}`)),
    );
    assert.deepEqual(statuses(answers), { 400: 10, 429: 20 });
    for (const r of answers.filter((a) => a.status === 429)) assert.equal(r.headers['retry-after'], String(15 * 60));
    assert.equal(
      (await login(t, 'raced@example.org', 'the-right-password')).status,
      429,
      'this address is locked out for the email',
    );
    assert.equal(
      (await login(t, 'raced@example.org', 'the-right-password', '127.0.0.2')).status,
      200,
      'another is not',
    );
  });

  it('64 wrong passwords for one email from 8 addresses: 50 are checked, the bound of the email', async () => {
    await createUser(t, 'spread@example.org', await hashWithCost('the-right-password', 1024, 1));
    const answers = await Promise.all(
      Array.from({ length: 64 }, (_, i) => login(t, 'spread@example.org', `wrong-${i}`, `10.0.0.${i % 8}`)),
    );
    assert.deepEqual(statuses(answers), { 400: 50, 429: 14 });
    assert.match(answers.find((a) => a.status === 429)!.body.error, /too many failed logins for this email/);
  });
});

describe('password checks running at once', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext({ clock: new FakeClock(T0) }); // the defaults: 2 at once, 1 per client address
  });
  after(() => t.close());

  it('over the bound a login is refused at once with Retry-After, 429 for its client or 503 for the server, and a Basic-auth read answers', async () => {
    const held = [t.deps.logins.slots.take('192.0.2.1')];
    assert.equal(typeof held[0], 'function');
    const mine = await login(t, t.boot.user.email, t.boot.user.password, '192.0.2.1');
    assert.equal(mine.status, 429, mine.text);
    assert.equal(mine.headers['retry-after'], '1');
    held.push(t.deps.logins.slots.take('192.0.2.2'));
    const anyone = await login(t, t.boot.user.email, t.boot.user.password, '192.0.2.3');
    assert.equal(anyone.status, 503, anyone.text);
    assert.equal(anyone.headers['retry-after'], '1');
    assert.equal((await t.request('GET', `/v2/projects/${t.projectId}`)).status, 200, 'Basic auth checks no password');
    for (const release of held) (release as () => void)();
    assert.equal(
      (await login(t, t.boot.user.email, t.boot.user.password, '192.0.2.3')).status,
      200,
      'the slots were given back',
    );
    assert.equal(
      (await login(t, t.boot.user.email, 'wrong password!', '192.0.2.1')).status,
      400,
      'and the refusals counted no failure',
    );
  });

  it('a client whose password was wrong within 15 minutes does not get the last free slot; one that has not failed does', async () => {
    await createUser(t, 'mine@example.org', await hashWithCost('the-right-password', 1024, 1));
    assert.equal((await login(t, 'mine@example.org', 'wrong password', '192.0.2.50')).status, 400);
    const held = t.deps.logins.slots.take('192.0.2.60') as () => void;
    const failing = await login(t, 'mine@example.org', 'the-right-password', '192.0.2.50');
    assert.equal(failing.status, 503, failing.text);
    assert.equal(failing.headers['retry-after'], '1');
    assert.equal(
      (await login(t, 'mine@example.org', 'the-right-password', '192.0.2.51')).status,
      200,
      'a client that has not failed',
    );
    t.clock.advance(15 * 60_000);
    assert.equal(
      (await login(t, 'mine@example.org', 'the-right-password', '192.0.2.50')).status,
      200,
      'the wrong password has left the window',
    );
    held();
  });

  it('six slow checks sent at once: two run, the others are refused before either ends, and a read answers meanwhile', async () => {
    // About 8 times the cost of a stored password, so the two checks that run hold their slots a while.
    await createUser(t, 'slow@example.org', await hashWithCost('the-right-password', 1 << 14, 16));
    const done: string[] = [];
    const logins = Array.from({ length: 6 }, (_, i) =>
      login(t, 'slow@example.org', 'wrong password', `198.51.100.${i}`).then((r) => {
        done.push(`login ${r.status}`);
        return r;
      }),
    );
    const read = t.request('GET', `/v2/projects/${t.projectId}`).then((r) => {
      done.push(`read ${r.status}`);
      return r;
    });
    const answers = await Promise.all(logins);
    await read;
    assert.deepEqual(statuses(answers), { 400: 2, 503: 4 });
    for (const r of answers.filter((a) => a.status === 503)) assert.equal(r.headers['retry-after'], '1');
    assert.deepEqual(
      done.slice(-2),
      ['login 400', 'login 400'],
      `the refusals and the read came first: ${done.join(', ')}`,
    );
    assert.ok(done.includes('read 200'));
  });
});

describe('lockout per client address', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext({ clock: new FakeClock(T0) });
  });
  after(() => t.close());

  it("a guesser at one address locks itself out, not the owner at another; a success forgets the owner's typos", async () => {
    const owner = { email: 'owner@example.org', password: 'the-right-password' };
    await createUser(t, owner.email, await hashWithCost(owner.password, 1024, 1));
    for (let i = 0; i < 10; i++) {
      t.clock.advance(1000);
      assert.equal((await login(t, owner.email, `guess-${i}`, '203.0.113.66')).status, 400);
    }
    const locked = await login(t, owner.email, owner.password, '203.0.113.66');
    assert.equal(locked.status, 429);
    assert.match(locked.body.error, /from this address/);
    for (let i = 0; i < 9; i++) assert.equal((await login(t, owner.email, `typo-${i}`, '192.0.2.10')).status, 400);
    assert.equal(
      (await login(t, owner.email, owner.password, '192.0.2.10')).status,
      200,
      'the owner logs in from its own address',
    );
    for (let i = 0; i < 9; i++)
      assert.equal((await login(t, owner.email, `typo-${i}`, '192.0.2.10')).status, 400, 'its typos were forgiven');
    assert.equal((await login(t, owner.email, owner.password, '192.0.2.10')).status, 200);
  });

  it('guesses spread over addresses are bounded per email: 50 in 15 minutes, then 429 everywhere until they leave the window', async () => {
    await createUser(t, 'target@example.org', await hashWithCost('the-right-password', 1024, 1));
    t.clock.advance(60_000);
    for (let i = 0; i < 50; i++)
      assert.equal((await login(t, 'target@example.org', `guess-${i}`, `10.1.${i % 5}.1`)).status, 400);
    const fresh = await login(t, 'target@example.org', 'guess-new', '10.2.0.1');
    assert.equal(fresh.status, 429);
    assert.equal(fresh.headers['retry-after'], String(15 * 60));
    assert.match(fresh.body.error, /too many failed logins for this email;/);
    assert.equal(
      (await login(t, 'target@example.org', 'the-right-password', '192.0.2.20')).status,
      429,
      'the owner too: the price of the bound',
    );
    t.clock.advance(15 * 60_000);
    assert.equal((await login(t, 'target@example.org', 'the-right-password', '192.0.2.20')).status, 200);
  });
});
