// Data connector CRUD, validation and permissions (contract §3.9, §4.9, §6.6, §2.7, §7 #1).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestContext, type Account, type TestContext } from '../helpers/context.ts';

let t: TestContext;
let base: string;
before(async () => {
  t = await createTestContext();
  base = `/v2/projects/${t.projectId}/dataconnectors`;
});
after(() => t.close());

const minimal = (extra: Record<string, unknown> = {}) => ({
  type: 'HTTP_PUSH',
  httpConfig: { url: 'https://example.org/hook' },
  ...extra,
});

async function create(body: Record<string, unknown> = minimal()) {
  const res = await t.request('POST', base, { body });
  assert.equal(res.status, 200, res.text);
  return res.body;
}
const idOf = (c: { name: string }) => c.name.split('/')[3]!;
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

describe('happy', () => {
  it('creates with defaults and every key present', async () => {
    const res = await t.request('POST', base, { body: minimal() });
    assert.equal(res.status, 200);
    const c = res.body;
    assert.match(c.name, new RegExp(`^projects/${t.projectId}/dataconnectors/[0-9a-v]{20}$`));
    assert.deepEqual(
      { ...c, name: undefined, createTime: undefined, updateTime: undefined },
      {
        name: undefined,
        displayName: '',
        type: 'HTTP_PUSH',
        status: 'ACTIVE',
        events: [],
        labels: [],
        httpConfig: {
          url: 'https://example.org/hook',
          signatureSecret: '',
          headers: {},
          previousSignatureSecretExpireTime: '',
        },
        deliveryConfig: { maxConcurrency: 64, maxRate: 0, labelFilters: {}, paused: false },
        createTime: undefined,
        updateTime: undefined,
      },
    );
    assert.match(c.createTime, TIME);
    assert.equal(c.createTime, c.updateTime);
    const got = await t.request('GET', `${base}/${idOf(c)}`);
    assert.deepEqual(got.body, c);
  });

  it('creates with every field; duplicate events are removed; null configs and read-only keys are ignored', async () => {
    const c = await create({
      name: 'projects/x/dataconnectors/y',
      createTime: 'whenever',
      type: 'HTTP_PUSH',
      displayName: 'warehouse',
      status: 'USER_DISABLED',
      events: ['touch', 'temperature', 'touch'],
      labels: ['name', 'room'],
      azureServiceBusConfig: null,
      httpConfig: {
        url: 'https://example.org/a?b=c',
        headers: { 'X-Api-Key': 'k1', Authorization: 'Bearer z' },
        signatureSecret: 'my-secret',
      },
    });
    assert.equal(c.displayName, 'warehouse');
    assert.equal(c.status, 'USER_DISABLED');
    assert.deepEqual(c.events, ['touch', 'temperature']);
    assert.deepEqual(c.labels, ['name', 'room']);
    assert.deepEqual(c.httpConfig, {
      url: 'https://example.org/a?b=c',
      signatureSecret: 'my-secret',
      headers: { 'X-Api-Key': 'k1', Authorization: 'Bearer z' },
      previousSignatureSecretExpireTime: '',
    });
  });

  it('lists in creation order with keyset paging', async () => {
    const project = await t.createProject('paging');
    const names: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await t.request('POST', `/v2/projects/${project}/dataconnectors`, {
        body: minimal({ displayName: `c${i}` }),
      });
      names.push(r.body.name);
    }
    const p1 = await t.request('GET', `/v2/projects/${project}/dataconnectors?pageSize=2`);
    assert.deepEqual(
      p1.body.dataConnectors.map((c: any) => c.name),
      names.slice(0, 2),
    );
    assert.notEqual(p1.body.nextPageToken, '');
    const p2 = await t.request(
      'GET',
      `/v2/projects/${project}/dataconnectors?page_size=2&page_token=${p1.body.nextPageToken}`,
    );
    assert.deepEqual(
      p2.body.dataConnectors.map((c: any) => c.name),
      names.slice(2),
    );
    assert.equal(p2.body.nextPageToken, '');
  });

  it('PATCH merges httpConfig key by key, replaces headers, lists and removes signing with ""', async () => {
    const c = await create(
      minimal({
        events: ['touch'],
        httpConfig: { url: 'https://example.org/1', headers: { 'X-A': '1', 'X-B': '2' }, signatureSecret: 'one' },
      }),
    );
    const url = `${base}/${idOf(c)}`;
    t.clock.advance(1000);
    let r = await t.request('PATCH', url, { body: { httpConfig: { headers: { 'X-C': '3' } }, labels: ['room'] } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.httpConfig, {
      url: 'https://example.org/1',
      signatureSecret: 'one',
      headers: { 'X-C': '3' },
      previousSignatureSecretExpireTime: '',
    });
    assert.deepEqual(r.body.labels, ['room']);
    assert.deepEqual(r.body.events, ['touch']);
    assert.notEqual(r.body.updateTime, c.updateTime);
    r = await t.request('PATCH', url, { body: { httpConfig: { signatureSecret: '' }, events: [] } });
    assert.deepEqual(r.body.httpConfig, {
      url: 'https://example.org/1',
      signatureSecret: '',
      headers: { 'X-C': '3' },
      previousSignatureSecretExpireTime: '',
    });
    assert.deepEqual(r.body.events, []);
  });

  it('PATCH with update_mask applies only the listed fields (placeholders elsewhere are ignored)', async () => {
    const c = await create(
      minimal({ displayName: 'keep', httpConfig: { url: 'https://example.org/keep', signatureSecret: 'keep' } }),
    );
    const r = await t.request('PATCH', `${base}/${idOf(c)}?update_mask=http_config.url,status`, {
      body: {
        displayName: '',
        status: 'USER_DISABLED',
        httpConfig: { url: 'https://example.org/new', signatureSecret: '', headers: {} },
        events: [],
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.displayName, 'keep');
    assert.equal(r.body.status, 'USER_DISABLED');
    assert.deepEqual(r.body.httpConfig, {
      url: 'https://example.org/new',
      signatureSecret: 'keep',
      headers: {},
      previousSignatureSecretExpireTime: '',
    });
    const whole = await t.request('PATCH', `${base}/${idOf(c)}?updateMask=httpConfig`, {
      body: { httpConfig: { signatureSecret: 'new' } },
    });
    assert.equal(whole.body.httpConfig.signatureSecret, 'new');
    assert.equal(whole.body.httpConfig.url, 'https://example.org/new');
  });

  it('accepts the IaC provider PATCHing the whole object, and an empty body', async () => {
    const c = await create();
    const url = `${base}/${idOf(c)}`;
    const r = await t.request('PATCH', url, { body: { ...c, displayName: 'iac', azureServiceBusConfig: null } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.displayName, 'iac');
    const empty = await t.request('PATCH', url, { rawBody: '', headers: { 'content-type': 'application/json' } });
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.body, r.body);
  });

  it('status transitions: same status is a no-op; SYSTEM_DISABLED may become ACTIVE or USER_DISABLED', async () => {
    const c = await create();
    const url = `${base}/${idOf(c)}`;
    t.clock.advance(1000);
    const same = await t.request('PATCH', url, { body: { status: 'ACTIVE' } });
    assert.equal(same.body.updateTime, c.updateTime);
    for (const to of ['ACTIVE', 'USER_DISABLED']) {
      await t.deps.store.dataConnectors.updateState(idOf(c), 'SYSTEM_DISABLED', 1, 1);
      const r = await t.request('PATCH', url, { body: { status: to } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.status, to);
      assert.equal((await t.deps.store.dataConnectors.get(idOf(c)))!.failingSince, to === 'ACTIVE' ? null : 1);
    }
  });

  it('DELETE answers {} and removes the connector with its queue', async () => {
    const c = await create();
    const device = await t.createDevice();
    await t.deps.events.transaction((_tx, emit) =>
      emit(device, 'touch', { touch: { updateTime: '2025-06-01T12:00:00.000000Z' } }, 1),
    );
    const queued = await t.deps.store.deliveries.count();
    assert.ok(queued >= 1);
    const r = await t.request('DELETE', `${base}/${idOf(c)}`, { headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {});
    assert.equal((await t.request('GET', `${base}/${idOf(c)}`)).status, 404);
    const rows = await t.deps.store.deliveries.claim(idOf(c), Number.MAX_SAFE_INTEGER, 0, 0, 100);
    assert.equal(rows.length, 0);
  });

  it(':sync and :metrics accept the colon encoded, and :sync ignores any body', async () => {
    const c = await create();
    const s = await t.request('POST', `${base}/${idOf(c)}%3Async`, { rawBody: 'not json' });
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.body, {});
    const m = await t.request('GET', `${base}/${idOf(c)}%3Ametrics`);
    assert.deepEqual(m.body, { metrics: { successCount: 0, errorCount: 0, latency99p: '0.000s' } });
  });
});

describe('errors', () => {
  const bad = async (body: unknown, pattern?: RegExp) => {
    const r = await t.request('POST', base, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.status} ${r.text}`);
    if (pattern) assert.match(r.body.error, pattern);
  };
  const withHttp = (httpConfig: Record<string, unknown>) => ({
    type: 'HTTP_PUSH',
    httpConfig: { url: 'https://example.org/h', ...httpConfig },
  });

  it('refuses a missing or other type and a config of another connector type', async () => {
    await bad({ httpConfig: { url: 'https://example.org' } }, /type/);
    await bad(minimal({ type: 'AZURE_SERVICE_BUS' }), /type/);
    await bad(minimal({ azureServiceBusConfig: { connectionString: 'x' } }), /azureServiceBusConfig/);
  });

  it('refuses bad URLs', async () => {
    await bad({ type: 'HTTP_PUSH' }, /url/);
    await bad({ type: 'HTTP_PUSH', httpConfig: {} }, /url/);
    await bad(withHttp({ url: 'http://example.org/hook' }), /https/);
    await bad(withHttp({ url: 'example.org/hook' }), /url/);
    await bad(withHttp({ url: `https://example.org/${'a'.repeat(2048)}` }), /2048/);
    await bad(withHttp({ url: 'https://127.0.0.1/hook' }), /refused/);
    await bad(withHttp({ url: 'https://10.1.2.3/hook' }), /refused/);
    await bad(withHttp({ url: 'https://[::1]/hook' }), /refused/);
  });

  it('refuses bad headers', async () => {
    for (const name of [
      'Host',
      'content-type',
      'Content-Length',
      'Transfer-Encoding',
      'Connection',
      'x-service-signature',
      'Keep-Alive',
      'TE',
      'Upgrade',
      'Proxy-Authorization',
      'Trailer',
      'Expect',
    ]) {
      await bad(withHttp({ headers: { [name]: 'v' } }), /reserved/);
    }
    await bad(withHttp({ headers: { 'Bad Header': 'v' } }), /header name/);
    await bad(withHttp({ headers: { ['X'.repeat(257)]: 'v' } }), /header name/);
    // Exactly what the HTTP client refuses at send time: CR, LF, NUL, other controls, anything beyond Latin-1 (NUL is
    // refused in any text of any body, before this check).
    for (const value of ['a\r\nX-Injected: 1', 'a\u0000b', 'a\u0007', 'caf\u00e9 \u2603', '\ud83d\ude00']) {
      await bad(
        withHttp({ headers: { 'X-A': value } }),
        value.includes('\u0000') ? /NUL character/ : /visible ASCII and Latin-1/,
      );
    }
    await bad(withHttp({ headers: JSON.parse('{"__proto__":"v"}') }), /__proto__/);
    await bad(withHttp({ headers: { 'X-A': 'v'.repeat(4097) } }), /4096/);
    await bad(withHttp({ headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, 'v'])) }), /50/);
    await bad(withHttp({ headers: { 'X-A': 1 } }));
  });

  it('refuses unknown events, bad labels, long secrets and names, bad statuses', async () => {
    await bad(minimal({ events: ['touch', 'nope'] }), /events/);
    await bad(minimal({ events: ['ping'] }), /events/);
    await bad(minimal({ labels: ['a=b'] }), /labels/);
    await bad(minimal({ labels: [''] }), /labels/);
    await bad(minimal({ labels: Array.from({ length: 101 }, (_, i) => `k${i}`) }), /100/);
    await bad(withHttp({ signatureSecret: 's'.repeat(257) }), /256/);
    await bad(minimal({ displayName: 'd'.repeat(257) }));
    await bad(minimal({ status: 'SYSTEM_DISABLED' }), /SYSTEM_DISABLED/);
    await bad(minimal({ status: 'PAUSED' }), /status/);
  });

  it('refuses bad PATCHes without changing anything', async () => {
    const c = await create();
    const url = `${base}/${idOf(c)}`;
    for (const body of [
      { status: 'SYSTEM_DISABLED' },
      { status: 'paused' },
      { type: 'OTHER' },
      { httpConfig: { url: 'http://x.org' } },
      { events: ['x'] },
      { httpConfig: { headers: { Host: 'x' } } },
    ]) {
      const r = await t.request('PATCH', url, { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.text}`);
    }
    assert.equal((await t.request('PATCH', `${url}?update_mask=nonsense`, { body: {} })).status, 400);
    assert.deepEqual((await t.request('GET', url)).body, c);
  });

  it('allows at most 100 connectors per project', async () => {
    const project = await t.createProject('full');
    for (let i = 0; i < 100; i++)
      await t.deps.store.dataConnectors.create({
        id: `fill${String(i).padStart(16, '0')}`,
        projectId: project,
        displayName: '',
        status: 'ACTIVE',
        events: [],
        labels: [],
        url: 'https://x.org',
        headers: {},
        signatureSecretSealed: '',
        failingSince: null,
        createTime: 1,
        updateTime: 1,
      });
    const r = await t.request('POST', `/v2/projects/${project}/dataconnectors`, { body: minimal() });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /100/);
  });

  it('answers 404 for unknown connectors and connectors of another project, 400 for the wildcard', async () => {
    assert.equal((await t.request('GET', `${base}/cvq2b1b0l4l9s3f2a9g0`)).status, 404);
    assert.equal((await t.request('GET', `${base}/not-an-id`)).status, 404);
    const other = await t.createProject('other');
    const c = await create();
    assert.equal((await t.request('GET', `/v2/projects/${other}/dataconnectors/${idOf(c)}`)).status, 404);
    assert.equal((await t.request('DELETE', `/v2/projects/${other}/dataconnectors/${idOf(c)}`)).status, 404);
    assert.equal((await t.request('GET', `${base}/cvq2b1b0l4l9s3f2a9g0:metrics`)).status, 404);
    assert.equal((await t.request('POST', `${base}/cvq2b1b0l4l9s3f2a9g0:sync`)).status, 404);
    assert.equal((await t.request('GET', '/v2/projects/-/dataconnectors')).status, 400);
  });
});

describe('security', () => {
  let user: Account;
  let developer: Account;
  let stranger: Account;
  let connector: any;
  before(async () => {
    user = await t.createServiceAccount({ roles: ['roles/project.user'] });
    developer = await t.createServiceAccount({ roles: ['roles/project.developer'] });
    stranger = await t.createServiceAccount({ projectId: await t.createProject('stranger') });
    connector = await create(
      minimal({
        httpConfig: {
          url: 'https://example.org/s',
          headers: { Authorization: 'Bearer secret-token' },
          signatureSecret: 'top-secret',
        },
      }),
    );
  });

  it('project.user reads without secrets or header values, and cannot write', async () => {
    const url = `${base}/${idOf(connector)}`;
    const got = await t.request('GET', url, { auth: user.auth });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.httpConfig, {
      url: 'https://example.org/s',
      signatureSecret: '',
      headers: { Authorization: '' },
      previousSignatureSecretExpireTime: '',
    });
    const list = await t.request('GET', base, { auth: user.auth });
    const inList = list.body.dataConnectors.find((c: any) => c.name === connector.name);
    assert.equal(inList.httpConfig.signatureSecret, '');
    assert.equal(inList.httpConfig.headers.Authorization, '');
    assert.equal((await t.request('GET', `${url}:metrics`, { auth: user.auth })).status, 200);
    assert.equal((await t.request('POST', base, { auth: user.auth, body: minimal() })).status, 403);
    assert.equal((await t.request('PATCH', url, { auth: user.auth, body: { displayName: 'x' } })).status, 403);
    assert.equal((await t.request('DELETE', url, { auth: user.auth })).status, 403);
    assert.equal((await t.request('POST', `${url}:sync`, { auth: user.auth })).status, 403);
  });

  it('project.developer creates, sees secrets, updates and deletes', async () => {
    const created = await t.request('POST', base, {
      auth: developer.auth,
      body: minimal({ httpConfig: { url: 'https://example.org/d', signatureSecret: 'dev' } }),
    });
    assert.equal(created.status, 200);
    assert.equal(created.body.httpConfig.signatureSecret, 'dev');
    const url = `${base}/${idOf(created.body)}`;
    assert.equal(
      (await t.request('GET', `${base}/${idOf(connector)}`, { auth: developer.auth })).body.httpConfig.signatureSecret,
      'top-secret',
    );
    assert.equal(
      (await t.request('PATCH', url, { auth: developer.auth, body: { status: 'USER_DISABLED' } })).body.status,
      'USER_DISABLED',
    );
    assert.equal((await t.request('DELETE', url, { auth: developer.auth })).status, 200);
  });

  it('a caller without membership gets 404 everywhere; no credentials is 401', async () => {
    const url = `${base}/${idOf(connector)}`;
    for (const [method, path] of [
      ['GET', base],
      ['POST', base],
      ['GET', url],
      ['PATCH', url],
      ['DELETE', url],
      ['POST', `${url}:sync`],
      ['GET', `${url}:metrics`],
    ] as const) {
      const r = await t.request(method, path, {
        auth: stranger.auth,
        body: method === 'GET' || method === 'DELETE' || path.endsWith('sync') ? undefined : minimal(),
      });
      assert.equal(r.status, 404, `${method} ${path}`);
    }
    assert.equal((await t.request('GET', base, { auth: null })).status, 401);
  });

  it('never stores the signature secret in plain text', async () => {
    const row = await t.deps.store.dataConnectors.get(idOf(connector));
    assert.ok(row!.signatureSecretSealed !== '' && !row!.signatureSecretSealed.includes('top-secret'));
  });
});
