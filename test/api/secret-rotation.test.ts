// :rotateSecret (extensions §X3) through the API, on the test store (SQLite, or PostgreSQL with
// SENSORCLOUD_TEST_STORE=postgres): the answer and the connector's previousSignatureSecretExpireTime; a generated or
// given secret, the overlap's default and bounds, "0s"; a rotation during an overlap; a PATCH of the secret ending it;
// the roles. Then pushes to a real HTTPS receiver through the running engine: during the overlap a receiver that
// knows only the old secret (X-Service-Signature-Previous) and one that knows only the new secret
// (X-Service-Signature) both accept every push, live and :test alike; after it, the previous header is gone.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createSecretBox } from '../../src/auth/secret-box.ts';
import { createDispatcher } from '../../src/delivery/dispatcher.ts';
import { createDeliveryEngine, type DeliveryEngine } from '../../src/delivery/engine.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { verifySignature } from '../../src/receiver/verify-signature.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { resealSecrets } from '../../src/services/admin-recovery.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type Account, type Auth, type TestContext } from '../helpers/context.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receiver.ts';
import { testTls } from '../helpers/tls.ts';
import { until } from '../helpers/until.ts';

let t: TestContext;
let base: string;
before(async () => {
  // Receivers on loopback are allowed and the test CA trusted, for the pushes at the end.
  t = await createTestContext({
    env: { SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8', SENSORCLOUD_CA_FILE: testTls().caFile },
  });
  base = `/v2/projects/${t.projectId}/dataconnectors`;
});
after(() => t.close());

interface Connector {
  name: string;
  updateTime: string;
  httpConfig: { url: string; signatureSecret: string; previousSignatureSecretExpireTime: string };
}
const HEX32 = /^[0-9a-f]{32}$/;
const idOf = (c: { name: string }) => c.name.split('/')[3]!;

async function create(httpConfig: Record<string, unknown> = {}, project = t.projectId): Promise<Connector> {
  const res = await t.request('POST', `/v2/projects/${project}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/hook', ...httpConfig } },
  });
  assert.equal(res.status, 200, res.text);
  return res.body;
}
const rotate = (c: Connector, body: unknown = {}, auth?: Auth) =>
  t.request('POST', `/v2/${c.name}:rotateSecret`, { body, auth });
async function rotated(
  c: Connector,
  body: unknown = {},
): Promise<{ dataConnector: Connector; signatureSecret: string }> {
  const res = await rotate(c, body);
  assert.equal(res.status, 200, res.text);
  return res.body;
}
const get = async (c: Connector): Promise<Connector> => (await t.request('GET', `/v2/${c.name}`)).body;
const patch = (c: Connector, body: unknown, query = '') => t.request('PATCH', `/v2/${c.name}${query}`, { body });
/** The end of an overlap of `seconds` from now, as the API shows it. */
const endIn = (seconds: number) => formatTimestamp(nowMicros(t.deps) + seconds * 1_000_000);
/** The connector's secrets as the store holds them, opened, and the overlap's end (micros). */
async function stored(c: Connector) {
  const r = (await t.deps.store.dataConnectors.get(idOf(c)))!;
  const open = (sealed: string) => (sealed === '' ? '' : t.deps.secretBox.open(sealed));
  return {
    current: open(r.signatureSecretSealed),
    previous: open(r.previousSignatureSecretSealed ?? ''),
    until: r.previousSignatureSecretExpireTime,
  };
}

describe('rotation through the API', () => {
  it('generates a secret of 32 hex characters; the current one signs alongside for 24 h by default', async () => {
    const c = await create({ signatureSecret: 'old-secret' });
    assert.equal(c.httpConfig.previousSignatureSecretExpireTime, '', 'none before a rotation');
    t.clock.advance(1000);
    const res = await rotate(c);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body), ['dataConnector', 'signatureSecret']);
    const { dataConnector, signatureSecret } = res.body;
    assert.match(signatureSecret, HEX32);
    assert.deepEqual(dataConnector.httpConfig, {
      url: 'https://example.org/hook',
      signatureSecret,
      headers: {},
      previousSignatureSecretExpireTime: endIn(86_400),
    });
    assert.notEqual(dataConnector.updateTime, c.updateTime);
    assert.deepEqual(
      { ...dataConnector, httpConfig: undefined, updateTime: undefined },
      {
        ...c,
        httpConfig: undefined,
        updateTime: undefined,
      },
    );
    assert.deepEqual(await get(c), dataConnector);
    assert.deepEqual(await stored(c), {
      current: signatureSecret,
      previous: 'old-secret',
      until: nowMicros(t.deps) + 86_400_000_000,
    });
    const listed = (await t.request('GET', base)).body.dataConnectors.find((x: Connector) => x.name === c.name);
    assert.deepEqual(listed, dataConnector);
  });

  it('takes a given secret and overlap; "0s" keeps no previous secret; 7 days is the longest', async () => {
    const c = await create({ signatureSecret: 'old-secret' });
    const given = await rotated(c, { signatureSecret: 'given-secret', overlap: '3600s' });
    assert.equal(given.signatureSecret, 'given-secret');
    assert.equal(given.dataConnector.httpConfig.signatureSecret, 'given-secret');
    assert.equal(given.dataConnector.httpConfig.previousSignatureSecretExpireTime, endIn(3600));

    const none = await rotated(c, { signatureSecret: 'third-secret', overlap: '0s' });
    assert.equal(none.dataConnector.httpConfig.previousSignatureSecretExpireTime, '');
    assert.deepEqual(await stored(c), { current: 'third-secret', previous: '', until: null });

    const longest = await rotated(c, { overlap: '604800s' });
    assert.equal(longest.dataConnector.httpConfig.previousSignatureSecretExpireTime, endIn(604_800));
    const fraction = await rotated(c, { signatureSecret: 'x'.repeat(256), overlap: '1.5s' });
    assert.equal(fraction.dataConnector.httpConfig.previousSignatureSecretExpireTime, endIn(1.5));
    assert.deepEqual(await stored(c), {
      current: 'x'.repeat(256),
      previous: longest.signatureSecret,
      until: nowMicros(t.deps) + 1_500_000,
    });
  });

  it('rotating a connector without a secret sets one, with no previous secret', async () => {
    const c = await create();
    const r = await rotated(c, { overlap: '86400s' });
    assert.match(r.signatureSecret, HEX32);
    assert.equal(r.dataConnector.httpConfig.signatureSecret, r.signatureSecret);
    assert.equal(r.dataConnector.httpConfig.previousSignatureSecretExpireTime, '');
    assert.deepEqual(await stored(c), { current: r.signatureSecret, previous: '', until: null });
  });

  it('rotating during an overlap makes the current secret the previous one, until now + the new overlap', async () => {
    const c = await create({ signatureSecret: 'first' });
    await rotated(c, { signatureSecret: 'second', overlap: '7200s' });
    t.clock.advance(60_000);
    const r = await rotated(c, { signatureSecret: 'third' });
    assert.equal(r.dataConnector.httpConfig.previousSignatureSecretExpireTime, endIn(86_400));
    assert.deepEqual(await stored(c), {
      current: 'third',
      previous: 'second',
      until: nowMicros(t.deps) + 86_400_000_000,
    });
  });

  it('the secret the connector has already changes nothing (a retried call): the overlap stays as it was', async () => {
    const c = await create({ signatureSecret: 'first' });
    const first = await rotated(c, { signatureSecret: 'second', overlap: '3600s' });
    t.clock.advance(1000);
    assert.deepEqual(await rotated(c, { signatureSecret: 'second', overlap: '0s' }), first);
    assert.deepEqual((await stored(c)).previous, 'first');
  });

  it('the overlap ends by itself: the connector shows "" once its end has come', async () => {
    const c = await create({ signatureSecret: 'first' });
    const r = await rotated(c, { overlap: '60s' });
    const end = r.dataConnector.httpConfig.previousSignatureSecretExpireTime;
    assert.equal(end, endIn(60));
    t.clock.advance(59_999);
    assert.equal((await get(c)).httpConfig.previousSignatureSecretExpireTime, end);
    t.clock.advance(1);
    assert.equal((await get(c)).httpConfig.previousSignatureSecretExpireTime, '');
    const listed = (await t.request('GET', base)).body.dataConnectors.find((x: Connector) => x.name === c.name);
    assert.equal(listed.httpConfig.previousSignatureSecretExpireTime, '');
  });

  it('a PATCH of another secret switches at once and ends the overlap; other PATCHes leave it running', async () => {
    const c = await create({ signatureSecret: 'first' });
    const r = await rotated(c, { signatureSecret: 'second' });
    const end = r.dataConnector.httpConfig.previousSignatureSecretExpireTime;
    // The current secret repeated (a form sending the whole httpConfig back) switches nothing.
    let p = await patch(c, { displayName: 'renamed', httpConfig: { signatureSecret: 'second' } });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.httpConfig.previousSignatureSecretExpireTime, end);
    // An IaC tool PATCHing back the whole object it read, the read-only field in the body and in the mask.
    p = await patch(
      c,
      { ...p.body, displayName: 'again' },
      '?update_mask=displayName,httpConfig.previousSignatureSecretExpireTime',
    );
    assert.equal(p.status, 200, p.text);
    assert.deepEqual([p.body.displayName, p.body.httpConfig.previousSignatureSecretExpireTime], ['again', end]);
    assert.deepEqual(await stored(c), {
      current: 'second',
      previous: 'first',
      until: (await t.deps.store.dataConnectors.get(idOf(c)))!.previousSignatureSecretExpireTime,
    });

    p = await patch(c, { httpConfig: { signatureSecret: 'third' } });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(
      [p.body.httpConfig.signatureSecret, p.body.httpConfig.previousSignatureSecretExpireTime],
      ['third', ''],
    );
    assert.deepEqual(await stored(c), { current: 'third', previous: '', until: null });

    // Stopping signing ends it too.
    await rotated(c, { signatureSecret: 'fourth' });
    p = await patch(c, { httpConfig: { signatureSecret: '' } }, '?update_mask=httpConfig.signatureSecret');
    assert.deepEqual(
      [p.body.httpConfig.signatureSecret, p.body.httpConfig.previousSignatureSecretExpireTime],
      ['', ''],
    );
    assert.deepEqual(await stored(c), { current: '', previous: '', until: null });
  });

  it('refuses a bad overlap or secret with 400, changing nothing', async () => {
    const c = await create({ signatureSecret: 'first' });
    const before = await t.deps.store.dataConnectors.get(idOf(c));
    const cases: Array<[unknown, RegExp]> = [
      [
        { overlap: '604801s' },
        /^overlap must be a duration of 0 to 604800 seconds \(7 days\) such as "86400s", got "604801s"$/,
      ],
      [{ overlap: '86400' }, /^overlap must be a duration/],
      [{ overlap: '-1s' }, /^overlap must be a duration/],
      [{ overlap: '1d' }, /^overlap must be a duration/],
      [{ overlap: '24h' }, /^overlap must be a duration/],
      [{ overlap: ' 60s' }, /^overlap must be a duration/],
      [{ overlap: '' }, /^overlap must be a duration/],
      [{ overlap: 86_400 }, /overlap/],
      [{ signatureSecret: '' }, /^signatureSecret must not be empty/],
      [{ signatureSecret: 'x'.repeat(257) }, /^signatureSecret must be at most 256 characters$/],
      [{ signatureSecret: 42 }, /signatureSecret/],
      [{ signatureSecret: 'fine', overlap: '8d' }, /^overlap/],
      [[], /./],
    ];
    for (const [body, error] of cases) {
      const res = await rotate(c, body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(res.body.error, error, JSON.stringify(body));
    }
    const malformed = await t.request('POST', `/v2/${c.name}:rotateSecret`, {
      rawBody: '{"overlap":',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(malformed.status, 400);
    assert.deepEqual(await t.deps.store.dataConnectors.get(idOf(c)), before);
  });

  it('takes no body as {}, the colon encoded; 404 for an unknown connector', async () => {
    const c = await create({ signatureSecret: 'first' });
    const res = await t.request('POST', `/v2/${c.name}%3ArotateSecret`);
    assert.equal(res.status, 200, res.text);
    assert.match(res.body.signatureSecret, HEX32);
    assert.equal(res.body.dataConnector.httpConfig.previousSignatureSecretExpireTime, endIn(86_400));
    const unknown = await t.request('POST', `${base}/cvq2b1b0l4l9s3f2a9g0:rotateSecret`, { body: {} });
    assert.equal(unknown.status, 404, unknown.text);
  });

  it('refuses X-Service-Signature-Previous as a custom header, in any case', async () => {
    for (const name of ['X-Service-Signature-Previous', 'x-service-signature-previous']) {
      const res = await t.request('POST', base, {
        body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/hook', headers: { [name]: 'forged' } } },
      });
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error, /reserved/);
    }
    const c = await create();
    const res = await patch(c, { httpConfig: { headers: { 'X-Service-Signature-Previous': 'forged' } } });
    assert.equal(res.status, 400, res.text);
  });

  it('never stores the previous secret in plain text', async () => {
    const c = await create({ signatureSecret: 'plain-old-secret' });
    await rotated(c);
    const row = (await t.deps.store.dataConnectors.get(idOf(c)))!;
    assert.ok(row.previousSignatureSecretSealed && !row.previousSignatureSecretSealed.includes('plain-old-secret'));
  });
});

describe('rotation and the master key', () => {
  it("admin rotate-master-key seals a rotation's previous secret again too, counted with the signature secrets", async () => {
    // A context of its own: its secrets end sealed under another key than its deps open.
    const own = await createTestContext();
    try {
      const res = await own.request('POST', `/v2/projects/${own.projectId}/dataconnectors`, {
        body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.org/hook', signatureSecret: 'old-secret' } },
      });
      assert.equal(res.status, 200, res.text);
      const rotation = await own.request('POST', `/v2/${res.body.name}:rotateSecret`, { body: {} });
      assert.equal(rotation.status, 200, rotation.text);
      const next = createSecretBox(randomBytes(32), own.deps.random);
      assert.deepEqual(await resealSecrets(own.deps, next), { keys: 1, connectors: 2, settings: 0 });
      const row = (await own.deps.store.dataConnectors.get(idOf(res.body)))!;
      assert.equal(next.open(row.signatureSecretSealed), rotation.body.signatureSecret);
      assert.equal(next.open(row.previousSignatureSecretSealed!), 'old-secret');
    } finally {
      await own.close();
    }
  });
});

describe('rotation and roles', () => {
  let user: Account;
  let developer: Account;
  let stranger: Account;
  before(async () => {
    user = await t.createServiceAccount({ roles: ['roles/project.user'] });
    developer = await t.createServiceAccount({ roles: ['roles/project.developer'] });
    stranger = await t.createServiceAccount({ projectId: await t.createProject('stranger') });
  });

  it('project.developer rotates; project.user gets 403 and reads the end of the overlap, never a secret', async () => {
    const c = await create({ signatureSecret: 'first' });
    const refused = await rotate(c, {}, user.auth);
    assert.equal(refused.status, 403, refused.text);
    assert.equal((await stored(c)).current, 'first', 'nothing changed');
    const res = await rotate(c, { overlap: '600s' }, developer.auth);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.dataConnector.httpConfig.signatureSecret, res.body.signatureSecret);
    const read = await t.request('GET', `/v2/${c.name}`, { auth: user.auth });
    assert.deepEqual(read.body.httpConfig, {
      url: 'https://example.org/hook',
      signatureSecret: '',
      headers: {},
      previousSignatureSecretExpireTime: endIn(600),
    });
    assert.equal((await rotate(c, {}, stranger.auth)).status, 404);
    assert.equal((await rotate(c, {}, null)).status, 401);
  });
});

describe('pushes during and after the overlap', () => {
  let receiver: Receiver;
  let dispatcher: Dispatcher;
  let engine: DeliveryEngine;
  // A project of its own: the connectors of the tests above (example.org) get none of these events.
  let project: string;
  before(async () => {
    project = await t.createProject('pushes');
    receiver = await startReceiver();
    // In process, on the test's clock: a signature's iat is the fake clock's, as verifySignature is told below.
    dispatcher = createDispatcher({
      config: t.deps.config,
      clock: t.deps.clock,
      ids: t.deps.ids,
      logger: t.deps.logger,
      timeoutMs: 2000,
    });
    engine = createDeliveryEngine(t.deps, dispatcher);
    // Live pushes start at their event's commit; a test push needs the running engine.
    engine.start();
  });
  after(async () => {
    await engine.stop();
    await dispatcher.close();
    await receiver.close();
  });

  const publish = (device: DeviceRecord) =>
    t.deps.events.transaction((_tx, emit) =>
      emit(device, 'touch', { touch: { updateTime: formatTimestamp(nowMicros(t.deps)) } }, nowMicros(t.deps)),
    );
  const testPush = async (c: Connector) => {
    const res = await t.request('POST', `/v2/${c.name}:test`, { body: {} });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.delivery.state, 'DELIVERED', res.text);
  };
  const at = (path: string) => receiver.requests.filter((r) => r.path === path);
  const arrived = (path: string, n: number) => until(`${n} pushes at ${path}`, () => at(path).length >= n, 5000);
  const header = (req: ReceivedRequest, name: string) => req.headers[name] as string | undefined;
  /** A receiver that knows only `secret` and reads one header: the claims, or the reason it refuses the push. */
  const verify = (req: ReceivedRequest, name: string, secret: string) =>
    verifySignature(req.body, header(req, name), secret, { now: t.clock.now() / 1000 }).catch(
      (err: { reason: string }) => err.reason,
    );

  it('signs every push with both secrets, the same claims, one request each; after the overlap the new one only', async () => {
    const path = '/hook/rotating';
    const c = await create({ url: `${receiver.url}/rotating`, signatureSecret: 'old-secret' }, project);
    const device = await t.createDevice({ projectId: project });

    await publish(device);
    await arrived(path, 1);
    assert.equal(header(at(path)[0]!, 'x-service-signature-previous'), undefined, 'no overlap before a rotation');

    const { signatureSecret: fresh } = await rotated(c, { overlap: '3600s' });
    await publish(device);
    await publish(device);
    await testPush(c);
    await arrived(path, 4);
    const during = at(path).slice(1, 4);
    for (const req of during) {
      const byOld = await verify(req, 'x-service-signature-previous', 'old-secret');
      const byNew = await verify(req, 'x-service-signature', fresh);
      assert.equal(typeof byOld, 'object', `the old secret's receiver accepts: ${byOld}`);
      assert.equal(typeof byNew, 'object', `the new secret's receiver accepts: ${byNew}`);
      assert.deepEqual(byOld, byNew, 'the same claims: one iat, one jti, one checksum');
      // Each header is signed with its own secret only.
      assert.equal(await verify(req, 'x-service-signature', 'old-secret'), 'signature');
      assert.equal(await verify(req, 'x-service-signature-previous', fresh), 'signature');
    }
    assert.equal(
      during.filter((r) => header(r, 'x-sensorcloud-delivery-trigger') === 'TEST').length,
      1,
      'the test push signs the same way',
    );
    assert.equal(new Set(during.map((r) => JSON.parse(r.body.toString()).event.eventId)).size, 3, 'no second delivery');

    // The overlap's end: the previous header is gone, from the next attempt on. The clock jumps only once every
    // outcome is written: a push that arrived but is still claimed would outlive its lease by the jump and be sent
    // again (at least once is the contract; this test counts exactly).
    await until('every outcome written', async () => (await t.deps.store.deliveries.count()) === 0, 5000);
    t.clock.advance(3_600_000);
    assert.equal((await get(c)).httpConfig.previousSignatureSecretExpireTime, '');
    await publish(device);
    await testPush(c);
    await arrived(path, 6);
    for (const req of at(path).slice(4)) {
      assert.equal(header(req, 'x-service-signature-previous'), undefined);
      assert.equal(typeof (await verify(req, 'x-service-signature', fresh)), 'object');
      assert.equal(await verify(req, 'x-service-signature', 'old-secret'), 'signature');
    }
    assert.equal(at(path).length, 6);
  });

  it('"0s" and a PATCH of the secret leave no previous header from the next push on', async () => {
    const path = '/hook/switched';
    const c = await create({ url: `${receiver.url}/switched`, signatureSecret: 'one' }, project);
    const device = await t.createDevice({ projectId: project });
    await rotated(c, { signatureSecret: 'two', overlap: '0s' });
    await publish(device);
    await arrived(path, 1);
    await rotated(c, { signatureSecret: 'three' });
    await publish(device);
    await arrived(path, 2);
    await patch(c, { httpConfig: { signatureSecret: 'four' } });
    await publish(device);
    await arrived(path, 3);
    const [zero, overlapping, patched] = at(path);
    assert.equal(header(zero!, 'x-service-signature-previous'), undefined);
    assert.equal(typeof (await verify(zero!, 'x-service-signature', 'two')), 'object');
    assert.equal(typeof (await verify(overlapping!, 'x-service-signature-previous', 'two')), 'object');
    assert.equal(typeof (await verify(overlapping!, 'x-service-signature', 'three')), 'object');
    assert.equal(header(patched!, 'x-service-signature-previous'), undefined);
    assert.equal(typeof (await verify(patched!, 'x-service-signature', 'four')), 'object');
  });
});
