// Compatibility and bad-input QA of the committed /v2 core, as a demanding client: the client quirks of contract
// §1 checked table-driven across every committed endpoint, and the OpenAPI document checked against the route
// table. Every response goes through `expectContract` (closed status set, JSON, shapes). The generated fuzz
// campaign over every operation is test/fuzz/.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  createTestContext,
  type Auth,
  type RequestOptions,
  type TestContext,
  type TestResponse,
} from '../helpers/context.ts';

const MiB = 1024 * 1024;
/** Contract §1.4; 429 and 503 cannot happen here (rate limit off, store up). */
const STATUSES = new Set([200, 400, 401, 403, 404, 409]);

/** Checks what must hold for every response, then returns it. */
function expectContract(
  t: TestContext,
  method: string,
  url: string,
  res: TestResponse,
  label = `${method} ${url.slice(0, 120)}`,
): TestResponse {
  assert.ok(
    STATUSES.has(res.status),
    `${label}: status ${res.status} outside the contract's set: ${res.text.slice(0, 200)}`,
  );
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${label}: content-type`);
  if (method === 'HEAD') return res;
  assert.ok(
    res.body && typeof res.body === 'object' && !Array.isArray(res.body),
    `${label}: body is not a JSON object: ${res.text.slice(0, 200)}`,
  );
  if (res.status !== 200) {
    const { error, code, help } = res.body;
    assert.equal(typeof error, 'string', `${label}: error must be a string: ${res.text.slice(0, 200)}`);
    assert.equal(code, res.status, `${label}: code`);
    assert.equal(help, `${t.deps.config.publicUrl}/docs/errors#${res.status}`, `${label}: help`);
    const keys = Object.keys(res.body).filter((k) => k !== 'error_description'); // token endpoint extra (§2.3)
    assert.deepEqual(keys, ['error', 'code', 'help'], `${label}: error keys`);
  }
  return res;
}

async function call(t: TestContext, method: string, url: string, options: RequestOptions = {}): Promise<TestResponse> {
  return expectContract(t, method, url, await t.request(method, url, options));
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const b64url = (o: unknown) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');
/** An HS256 JWT built here, independently of the server's own helpers. */
function signJwt(header: Record<string, unknown>, claims: Record<string, unknown>, secret: string): string {
  const input = `${b64url(header)}.${b64url(claims)}`;
  return `${input}.${createHmac('sha256', Buffer.from(secret, 'utf8')).update(input).digest('base64url')}`;
}
const forgedToken = (key: unknown[], filters: string) =>
  Buffer.from(JSON.stringify({ k: key, f: filters })).toString('base64url');

/** Every committed route, in its public form (path params in braces, custom verbs after ':'). */
const COMMITTED_ROUTES: [string, string][] = [
  ['GET', '/v2/roles'],
  ['GET', '/v2/roles/{role}'],
  ['GET', '/v2/organizations'],
  ['GET', '/v2/organizations/{organization}'],
  ['GET', '/v2/organizations/{organization}/permissions'],
  ['GET', '/v2/organizations/{organization}/members'],
  ['POST', '/v2/organizations/{organization}/members'],
  ['GET', '/v2/organizations/{organization}/members/{member}'],
  ['PATCH', '/v2/organizations/{organization}/members/{member}'],
  ['DELETE', '/v2/organizations/{organization}/members/{member}'],
  ['GET', '/v2/organizations/{organization}/members/{member}:getInviteUrl'],
  ['GET', '/v2/projects'],
  ['POST', '/v2/projects'],
  ['POST', '/v2/projects:batchUpdate'],
  ['GET', '/v2/projects/{project}'],
  ['PATCH', '/v2/projects/{project}'],
  ['DELETE', '/v2/projects/{project}'],
  ['GET', '/v2/projects/{project}/permissions'],
  ['GET', '/v2/projects/-/members'],
  ['POST', '/v2/projects/-/members:batchCreate'],
  ['POST', '/v2/projects/-/members:batchDelete'],
  ['GET', '/v2/projects/{project}/members'],
  ['POST', '/v2/projects/{project}/members'],
  ['GET', '/v2/projects/{project}/members/{member}'],
  ['PATCH', '/v2/projects/{project}/members/{member}'],
  ['DELETE', '/v2/projects/{project}/members/{member}'],
  ['GET', '/v2/projects/{project}/members/{member}:getInviteUrl'],
  ['POST', '/v2/invites:accept'],
  ['POST', '/v2/invites:lookup'],
  ['GET', '/v2/projects/{project}/serviceaccounts'],
  ['POST', '/v2/projects/{project}/serviceaccounts'],
  ['GET', '/v2/projects/{project}/serviceaccounts/{serviceAccount}'],
  ['PATCH', '/v2/projects/{project}/serviceaccounts/{serviceAccount}'],
  ['DELETE', '/v2/projects/{project}/serviceaccounts/{serviceAccount}'],
  ['GET', '/v2/projects/{project}/serviceaccounts/{serviceAccount}/keys'],
  ['POST', '/v2/projects/{project}/serviceaccounts/{serviceAccount}/keys'],
  ['GET', '/v2/projects/{project}/serviceaccounts/{serviceAccount}/keys/{key}'],
  ['DELETE', '/v2/projects/{project}/serviceaccounts/{serviceAccount}/keys/{key}'],
  ['GET', '/v2/projects/{project}/serviceaccounts/{serviceAccount}/memberships'],
  ['POST', '/v2/projects/{project}/serviceaccounts/{serviceAccount}/memberships/{parentType}/{parent}:accept'],
  ['DELETE', '/v2/projects/{project}/serviceaccounts/{serviceAccount}/memberships/{parentType}/{parent}'],
  ['POST', '/oauth2/token'],
  ['POST', '/oauth2/revoke'],
  ['GET', '/v2/openapi.json'],
];
const UNAUTHENTICATED = new Set([
  'POST /v2/invites:accept',
  'POST /v2/invites:lookup',
  'POST /oauth2/token',
  'POST /oauth2/revoke',
  'GET /v2/openapi.json',
]);
/**
 * POST routes that take no body at all: key creation and accepting a membership of a service account (any body is
 * ignored, contract §1.2 "no body and no Content-Type").
 */
const NO_BODY = new Set([
  'POST /v2/projects/{project}/serviceaccounts/{serviceAccount}/keys',
  'POST /oauth2/revoke',
  'POST /v2/projects/{project}/serviceaccounts/{serviceAccount}/memberships/{parentType}/{parent}:accept',
]);

type Ids = Record<string, string>;
const fill = (template: string, ids: Ids) =>
  template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? `missing-${name}`);

/** Wrong-typed bodies per body route: [body, the field the 400 message must name]. */
function wrongTypedBodies(ids: Ids): Record<string, [unknown, string][]> {
  const org = `organizations/${ids.organization}`;
  return {
    'POST /v2/organizations/{organization}/members': [
      [{ email: 5, roles: ['roles/organization.admin'] }, 'email'],
      [{ email: 'a@example.com', roles: 'roles/organization.admin' }, 'roles'],
    ],
    'PATCH /v2/organizations/{organization}/members/{member}': [
      [{ roles: 'roles/organization.admin' }, 'roles'],
      [{ roles: [7] }, 'roles'],
    ],
    'POST /v2/projects': [
      [{ organization: [org], displayName: 'x' }, 'organization'],
      [{ organization: org, displayName: 7 }, 'displayName'],
      [{ organization: org, displayName: 'x', location: 'here' }, 'location'],
    ],
    'POST /v2/projects:batchUpdate': [
      [{ projects: `projects/${ids.project}`, addLabels: { a: 'b' } }, 'projects'],
      [{ projects: [`projects/${ids.project}`], addLabels: { a: 1 } }, 'addLabels'],
      [{ projects: [`projects/${ids.project}`], removeLabels: 'a' }, 'removeLabels'],
    ],
    'PATCH /v2/projects/{project}': [
      [{ displayName: 5 }, 'displayName'],
      [{ location: { latitude: 'north' } }, 'latitude'],
      [{ organization: false }, 'organization'],
    ],
    'POST /v2/projects/-/members:batchCreate': [
      [{ members: {} }, 'members'],
      [{ members: [{ project: `projects/${ids.project}`, email: 1, roles: ['roles/project.user'] }] }, 'email'],
    ],
    'POST /v2/projects/-/members:batchDelete': [
      [{ names: 'x' }, 'names'],
      [{ names: [1] }, 'names'],
    ],
    'POST /v2/projects/{project}/members': [
      [{ email: true, roles: ['roles/project.user'] }, 'email'],
      [{ email: 'a@example.com', roles: [1] }, 'roles'],
    ],
    'PATCH /v2/projects/{project}/members/{member}': [
      [{ roles: {} }, 'roles'],
      [{ roles: 'roles/project.user' }, 'roles'],
    ],
    'POST /v2/invites:accept': [
      [{ token: 1, password: 'long enough password' }, 'token'],
      [{ token: 'x', password: 123456789012345 }, 'password'],
      [{ token: 'x', password: 'long enough password', displayName: [] }, 'displayName'],
    ],
    'POST /v2/invites:lookup': [
      [{ token: 1 }, 'token'],
      [{}, 'token'],
    ],
    'POST /v2/projects/{project}/serviceaccounts': [
      [{ displayName: 1 }, 'displayName'],
      [{ enableBasicAuth: 'true' }, 'enableBasicAuth'],
    ],
    'PATCH /v2/projects/{project}/serviceaccounts/{serviceAccount}': [
      [{ displayName: {} }, 'displayName'],
      [{ enableBasicAuth: 1 }, 'enableBasicAuth'],
    ],
    'POST /oauth2/token': [
      [{ grant_type: 5 }, 'grant_type'],
      [{ grant_type: 'password', username: ['a'], password: 'x' }, 'username'],
    ],
  };
}

const MALFORMED_BODIES = [
  '{',
  '{"a":',
  '{"a":1}garbage',
  "{'a':1}",
  '[]',
  '[{"a":1}]',
  '"a string"',
  '42',
  'true',
  'null',
  'undefined',
  '\u0000',
];
const OVERSIZE_BODY = `{"displayName":"${'x'.repeat(MiB)}"}`;
const UNKNOWN_IDS = [
  'd0000000000000000000',
  'vvvvvvvvvvvvvvvvvvvv',
  'emud0000000000000000000',
  'D0U41G5ODMA76TASM65G',
  'nope',
  '0',
  '-1',
  '1e9',
  'null',
  '__proto__',
  'constructor',
  '%E2%9C%93',
  '%00',
  '%20',
  'a%2Fb',
  '...',
  encodeURIComponent(`a'b"c<d>`),
  'x'.repeat(3000),
];

interface Fixture {
  ids: Ids;
  saKeySecret: string;
  pendingEmail: string;
}

/** Resources made through the API: a second project, a service account with two keys, pending members. */
async function makeFixture(t: TestContext): Promise<Fixture> {
  const P = t.projectId;
  const O = t.organizationId;
  const sa = await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`, {
    body: { displayName: 'compat', enableBasicAuth: true },
  });
  const saId = sa.body.name.split('/').pop();
  const key = await call(t, 'POST', `/v2/projects/${P}/serviceaccounts/${saId}/keys`);
  await call(t, 'POST', `/v2/projects/${P}/serviceaccounts/${saId}/keys`);
  const p2 = await call(t, 'POST', '/v2/projects', {
    body: { organization: `organizations/${O}`, displayName: 'Second' },
  });
  const P2 = p2.body.name.split('/')[1];
  await call(t, 'POST', `/v2/projects/${P}/members`, { body: { email: sa.body.email, roles: ['roles/project.user'] } });
  await call(t, 'POST', `/v2/projects/${P2}/members`, {
    body: { email: sa.body.email, roles: ['roles/project.user'] },
  });
  const pending = await call(t, 'POST', `/v2/projects/${P}/members`, {
    body: { email: 'pending@example.com', roles: ['roles/project.user'] },
  });
  const orgPending = await call(t, 'POST', `/v2/organizations/${O}/members`, {
    body: { email: 'org-pending@example.com', roles: ['roles/organization.admin'] },
  });
  return {
    ids: {
      organization: O,
      project: P,
      project2: P2,
      role: 'project.user',
      serviceAccount: saId,
      key: key.body.key.id,
      member: pending.body.name.split('/').pop(),
      orgMember: orgPending.body.name.split('/').pop(),
      saMember: saId,
      parentType: 'projects',
      parent: P2,
    },
    saKeySecret: key.body.secret,
    pendingEmail: 'pending@example.com',
  };
}

/** Concrete GET URLs of every committed read route, all answering 200 for the organization admin. */
function readUrls(ids: Ids): string[] {
  const { organization: O, project: P, serviceAccount: S, key: K, member: M, orgMember: OM } = ids;
  return [
    '/v2/roles',
    '/v2/roles/project.user',
    '/v2/organizations',
    `/v2/organizations/${O}`,
    `/v2/organizations/${O}/permissions`,
    `/v2/organizations/${O}/members`,
    `/v2/organizations/${O}/members/${OM}`,
    `/v2/organizations/${O}/members/${OM}:getInviteUrl`,
    '/v2/projects',
    `/v2/projects/${P}`,
    `/v2/projects/${P}/permissions`,
    `/v2/projects/-/members?memberId=${S}&organization=organizations/${O}`,
    `/v2/projects/${P}/members`,
    `/v2/projects/${P}/members/${M}`,
    `/v2/projects/${P}/members/${M}:getInviteUrl`,
    `/v2/projects/${P}/serviceaccounts`,
    `/v2/projects/${P}/serviceaccounts/${S}`,
    `/v2/projects/${P}/serviceaccounts/${S}/keys`,
    `/v2/projects/${P}/serviceaccounts/${S}/keys/${K}`,
    `/v2/projects/${P}/serviceaccounts/${S}/memberships`,
    '/v2/openapi.json',
    '/healthz',
  ];
}

/** List routes: [url, items key]. */
function listUrls(ids: Ids): [string, string][] {
  const { organization: O, project: P, serviceAccount: S } = ids;
  return [
    ['/v2/roles', 'roles'],
    ['/v2/organizations', 'organizations'],
    [`/v2/organizations/${O}/permissions`, 'permissions'],
    [`/v2/organizations/${O}/members`, 'members'],
    ['/v2/projects', 'projects'],
    [`/v2/projects/${P}/permissions`, 'permissions'],
    [`/v2/projects/-/members?memberId=${S}&organization=organizations/${O}`, 'members'],
    [`/v2/projects/${P}/members`, 'members'],
    [`/v2/projects/${P}/serviceaccounts`, 'serviceAccounts'],
    [`/v2/projects/${P}/serviceaccounts/${S}/keys`, 'keys'],
    [`/v2/projects/${P}/serviceaccounts/${S}/memberships`, 'members'],
  ];
}
const withQuery = (url: string, q: string) => `${url}${url.includes('?') ? '&' : '?'}${q}`;

describe('client compatibility (contract §1)', () => {
  let t: TestContext;
  let f: Fixture;
  before(async () => {
    t = await createTestContext();
    f = await makeFixture(t);
  });
  after(() => t.close());

  describe('happy', () => {
    it('every read route accepts Content-Type: application/json with an empty body, and a trailing slash', async () => {
      for (const url of readUrls(f.ids)) {
        const headers = { 'content-type': 'application/json' };
        assert.equal((await call(t, 'GET', url, { headers, rawBody: '' })).status, 200, url);
        const [path, query] = url.split('?');
        assert.equal(
          (await call(t, 'GET', `${path}/${query ? `?${query}` : ''}`)).status,
          200,
          `${url} with a trailing slash`,
        );
      }
    });

    it('every delete route accepts Content-Type: application/json with an empty body and answers 200 {}', async () => {
      const { organization: O, project: P } = f.ids;
      const headers = { 'content-type': 'application/json' };
      const p = await call(t, 'POST', '/v2/projects', {
        body: { organization: `organizations/${O}`, displayName: 'Doomed' },
      });
      const sa = await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`);
      const saPath = `/v2/projects/${P}/serviceaccounts/${sa.body.name.split('/').pop()}`;
      const key = await call(t, 'POST', `${saPath}/keys`);
      const pm = await call(t, 'POST', `/v2/projects/${P}/members`, {
        body: { email: 'doomed@example.com', roles: ['roles/project.user'] },
      });
      const om = await call(t, 'POST', `/v2/organizations/${O}/members`, {
        body: { email: 'doomed@example.com', roles: ['roles/organization.admin'] },
      });
      for (const url of [
        `${saPath}/keys/${key.body.key.id}`,
        saPath,
        `/v2/${pm.body.name}`,
        `/v2/${om.body.name}`,
        `/v2/${p.body.name}`,
      ]) {
        const res = await call(t, 'DELETE', url, { headers, rawBody: '' });
        assert.equal(res.status, 200, `${url}: ${res.text}`);
        assert.equal(res.text, '{}\n');
        assert.equal((await call(t, 'GET', url)).status, 404, `${url} is gone`);
      }
    });

    it('key and service account creation work with no body and no Content-Type, and with an empty JSON body', async () => {
      const { project: P, serviceAccount: S } = f.ids;
      const sa = await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`);
      assert.equal(sa.status, 200);
      assert.equal(sa.body.displayName, '');
      assert.equal(sa.body.enableBasicAuth, false);
      const saPath = `/v2/${sa.body.name}`;
      assert.equal((await call(t, 'POST', `${saPath}/keys`)).status, 200);
      assert.equal(
        (await call(t, 'POST', `${saPath}/keys`, { headers: { 'content-type': 'application/json' }, rawBody: '' }))
          .status,
        200,
      );
      assert.equal(
        (
          await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`, {
            headers: { 'content-type': 'application/json' },
            rawBody: '',
          })
        ).status,
        200,
      );
      // PATCH without a body changes nothing (an empty body is no body), on every PATCH route.
      for (const url of [
        `/v2/projects/${P}`,
        `/v2/projects/${P}/serviceaccounts/${S}`,
        `/v2/projects/${P}/members/${f.ids.member}`,
        `/v2/organizations/${f.ids.organization}/members/${f.ids.orgMember}`,
      ]) {
        const before = await call(t, 'GET', url);
        const res = await call(t, 'PATCH', url, { headers: { 'content-type': 'application/json' }, rawBody: '' });
        assert.equal(res.status, 200, `${url}: ${res.text}`);
        assert.equal(res.body.displayName, before.body.displayName);
      }
    });

    it('every success is 200 with a JSON object, never 201 or 204, and writes answer the resource', async () => {
      const { organization: O, project: P } = f.ids;
      const created = await call(t, 'POST', '/v2/projects', {
        body: { organization: `organizations/${O}`, displayName: 'Twohundred' },
      });
      assert.equal(created.status, 200);
      assert.match(created.body.name, /^projects\/[0-9a-v]{20}$/);
      for (const [method, url, body] of [
        ['POST', '/v2/projects:batchUpdate', { projects: [created.body.name], addLabels: { env: 'prod' } }],
        ['POST', '/v2/projects/-/members:batchDelete', { names: [`projects/${P}/members/d0000000000000000000`] }],
      ] as const) {
        const res = await call(t, method, url, { body });
        assert.equal(res.status, 200);
        assert.equal(res.text, '{}\n');
      }
    });

    it('null fields are absent, and unknown fields are ignored', async () => {
      const { organization: O, project: P } = f.ids;
      const p = await call(t, 'POST', '/v2/projects', {
        body: {
          organization: `organizations/${O}`,
          displayName: 'Nulls',
          location: null,
          labels: null,
          azureServiceBusConfig: null,
          somethingNew: { nested: null },
        },
      });
      assert.equal(p.status, 200, p.text);
      assert.deepEqual(p.body.location, { latitude: null, longitude: null, timeLocation: '' });
      const patched = await call(t, 'PATCH', `/v2/${p.body.name}`, {
        body: { displayName: null, location: { latitude: 10, longitude: null } },
      });
      assert.equal(patched.body.displayName, 'Nulls');
      assert.deepEqual(patched.body.location, { latitude: 10, longitude: null, timeLocation: '' });
      const sa = await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`, {
        body: { displayName: null, enableBasicAuth: null, email: null, azureServiceBusConfig: null },
      });
      assert.equal(sa.status, 200);
      assert.equal(sa.body.displayName, '');
      const batch = await call(t, 'POST', '/v2/projects:batchUpdate', {
        body: { projects: [p.body.name], addLabels: { a: 'b' }, removeLabels: null },
      });
      assert.equal(batch.status, 200);
      const m = await call(t, 'POST', `/v2/projects/${P}/members`, {
        body: { email: 'nulls@example.com', roles: ['roles/project.user'], status: null, displayName: null },
      });
      assert.equal(m.status, 200);
      assert.equal(
        (await call(t, 'PATCH', `/v2/${m.body.name}`, { body: { roles: null } })).body.roles[0],
        'roles/project.user',
      );
    });

    it('read-only fields sent back are ignored: a GET body PATCHed back unchanged is a no-op', async () => {
      const { project: P, serviceAccount: S, member: M, organization: O, orgMember: OM } = f.ids;
      for (const url of [
        `/v2/projects/${P}`,
        `/v2/projects/${P}/serviceaccounts/${S}`,
        `/v2/projects/${P}/members/${M}`,
        `/v2/organizations/${O}/members/${OM}`,
      ]) {
        const got = await call(t, 'GET', url);
        const back = {
          ...got.body,
          name: 'projects/elsewhere',
          createTime: '1999-01-01T00:00:00Z',
          updateTime: 'garbage',
          sensorCount: 99,
          status: 'ACCEPTED',
          email: 'other@example.com',
          accountType: 'USER',
        };
        const res = await call(t, 'PATCH', url, { body: back });
        assert.equal(res.status, 200, `${url}: ${res.text}`);
        const { updateTime: _a, ...was } = got.body;
        const { updateTime: _b, ...now } = res.body;
        assert.deepEqual(now, was, url);
      }
    });

    it('update_mask: only the listed fields apply (placeholders ignored), in either spelling; empty means every field', async () => {
      const { project: P, serviceAccount: S, member: M } = f.ids;
      await call(t, 'PATCH', `/v2/projects/${P}`, {
        body: { displayName: 'Masked', location: { latitude: 1, longitude: 2, timeLocation: 'UTC' } },
      });
      const p = await call(t, 'PATCH', `/v2/projects/${P}?update_mask=displayName`, {
        body: { displayName: 'Masked 2', location: { latitude: 0, longitude: 0, timeLocation: '' } },
      });
      assert.equal(p.body.displayName, 'Masked 2');
      assert.deepEqual(p.body.location, { latitude: 1, longitude: 2, timeLocation: 'UTC' });
      const p2 = await call(t, 'PATCH', `/v2/projects/${P}?updateMask=location.latitude`, {
        body: { displayName: '', location: { latitude: 3, longitude: 0 } },
      });
      assert.equal(p2.body.displayName, 'Masked 2');
      assert.deepEqual(p2.body.location, { latitude: 3, longitude: 2, timeLocation: 'UTC' });
      const sa = await call(t, 'PATCH', `/v2/projects/${P}/serviceaccounts/${S}?update_mask=enable_basic_auth`, {
        body: { displayName: '', enableBasicAuth: true },
      });
      assert.equal(sa.body.displayName, 'compat');
      const m = await call(t, 'PATCH', `/v2/projects/${P}/members/${M}?update_mask=roles,status`, {
        body: { roles: ['roles/project.developer'], status: 'ACCEPTED', email: '' },
      });
      assert.deepEqual(
        [m.body.roles, m.body.status, m.body.email],
        [['roles/project.developer'], 'PENDING', f.pendingEmail],
      );
      const all = await call(t, 'PATCH', `/v2/projects/${P}?update_mask=`, { body: { displayName: 'Unmasked' } });
      assert.equal(all.body.displayName, 'Unmasked');
    });

    it('custom verbs answer with the colon raw, as %3A or %3a, and with a trailing slash', async () => {
      const { project: P, member: M, organization: O, orgMember: OM } = f.ids;
      for (const sep of [':', '%3A', '%3a']) {
        for (const slash of ['', '/']) {
          assert.equal((await call(t, 'GET', `/v2/projects/${P}/members/${M}${sep}getInviteUrl${slash}`)).status, 200);
          assert.equal(
            (await call(t, 'GET', `/v2/organizations/${O}/members/${OM}${sep}getInviteUrl${slash}`)).status,
            200,
          );
          assert.equal(
            (
              await call(t, 'POST', `/v2/projects${sep}batchUpdate${slash}`, {
                body: { projects: [`projects/${P}`], addLabels: { verb: 'yes' } },
              })
            ).status,
            200,
          );
          assert.equal(
            (await call(t, 'POST', `/v2/projects/-/members${sep}batchDelete${slash}`, { body: { names: [] } })).status,
            200,
          );
          assert.equal(
            (await call(t, 'POST', `/v2/projects/-/members${sep}batchCreate${slash}`, { body: { members: [] } }))
              .status,
            200,
          );
          const accept = await call(t, 'POST', `/v2/invites${sep}accept${slash}`, {
            auth: null,
            body: { token: 'unknown', password: 'long enough password' },
          });
          assert.equal(accept.status, 400, 'routed to invites:accept (a bad token), not 404');
        }
      }
    });

    it('every list carries nextPageToken, accepts pageToken= empty in both spellings, and pages with pageSize=1 without repeats', async () => {
      for (const [url, items] of listUrls(f.ids)) {
        const full = await call(t, 'GET', url);
        assert.equal(typeof full.body.nextPageToken, 'string', `${url}: nextPageToken always present`);
        assert.equal(full.body.nextPageToken, '', `${url}: one page holds everything`);
        assert.ok(Array.isArray(full.body[items]), `${url}: ${items}`);
        for (const q of [
          'pageToken=',
          'page_token=',
          'pageToken=&page_size=',
          'page_size=0',
          'pageSize=5000',
          'foo=bar&__proto__=x&constructor=y',
        ]) {
          const res = await call(t, 'GET', withQuery(url, q));
          assert.equal(res.status, 200, `${url} ${q}`);
          assert.deepEqual(res.body[items], full.body[items], `${url} ${q}`);
        }
        const seen: unknown[] = [];
        let token = '';
        for (let page = 0; page < 100; page++) {
          const spelling = page % 2 ? `page_size=1&page_token=${token}` : `pageSize=1&pageToken=${token}`;
          const res = await call(t, 'GET', withQuery(url, spelling));
          assert.ok(res.body[items].length <= 1);
          seen.push(...res.body[items]);
          token = res.body.nextPageToken;
          assert.equal(typeof token, 'string');
          if (token === '') break;
        }
        assert.equal(token, '', `${url}: paging ended`);
        assert.deepEqual(seen, full.body[items], `${url}: pages add up to the list`);
      }
    });

    it('query parameters: snake_case and camelCase, repeated keys, camelCase wins for scalars', async () => {
      const { organization: O, serviceAccount: S } = f.ids;
      const camel = await call(t, 'GET', `/v2/projects/-/members?memberId=${S}&organization=organizations/${O}`);
      const snake = await call(t, 'GET', `/v2/projects/-/members?member_id=${S}&organization=organizations/${O}`);
      assert.deepEqual(snake.body, camel.body);
      assert.equal(camel.body.members.length, 2);
      assert.equal((await call(t, 'GET', '/v2/roles?page_size=1&pageSize=3')).body.roles.length, 3);
      assert.equal((await call(t, 'GET', '/v2/roles?pageSize=2&pageSize=2')).body.roles.length, 2);
      assert.equal(
        (await call(t, 'GET', `/v2/projects?organization=organizations/${O}&organization=organizations/${O}`)).status,
        200,
      );
    });

    it('any Content-Type is read as JSON: no 415', async () => {
      const { project: P } = f.ids;
      for (const ct of [
        'text/plain',
        'application/xml',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=iso-8859-1',
        'garbage',
        'application/merge-patch+json',
      ]) {
        const res = await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`, {
          headers: { 'content-type': ct },
          rawBody: '{"displayName":"ct"}',
        });
        assert.equal(res.status, 200, ct);
        assert.equal(res.body.displayName, 'ct');
      }
    });

    it('"__proto__" in a body is an ordinary field, and as a label key it is refused (400), never silently lost', async () => {
      const { project: P } = f.ids;
      const before = (await call(t, 'GET', `/v2/projects/${P}`)).body.labels;
      const res = await call(t, 'POST', '/v2/projects:batchUpdate', {
        rawBody: `{"projects":["projects/${P}"],"addLabels":{"__proto__":"x"}}`,
      });
      assert.equal(res.status, 400);
      assert.match(res.body.error, /__proto__ is reserved/);
      assert.deepEqual((await call(t, 'GET', `/v2/projects/${P}`)).body.labels, before);
    });

    it('the OpenAPI document lists every committed route with its parameters and request schemas', async () => {
      const doc = (await call(t, 'GET', '/v2/openapi.json', { auth: null })).body;
      const documented = new Set<string>();
      for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
        assert.doesNotMatch(path, /\/@|\/:[a-zA-Z]/, `${path}: router syntax leaked`);
        for (const [method, op] of Object.entries<any>(ops)) {
          documented.add(`${method.toUpperCase()} ${path}`);
          assert.ok(op.summary, `${method} ${path}: summary`);
          assert.ok(op.responses['200'] && op.responses.default, `${method} ${path}: responses`);
          const pathParams = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
          assert.deepEqual(
            op.parameters.filter((p: any) => p.in === 'path').map((p: any) => p.name),
            pathParams,
            `${method} ${path}: path parameters`,
          );
        }
      }
      for (const [method, path] of COMMITTED_ROUTES) {
        const op = doc.paths[path]?.[method.toLowerCase()];
        assert.ok(op, `${method} ${path} missing from the OpenAPI document`);
        const wantsBody = (method === 'POST' || method === 'PATCH') && !NO_BODY.has(`${method} ${path}`);
        if (wantsBody)
          assert.ok(
            op.requestBody?.content?.['application/json']?.schema?.properties,
            `${method} ${path}: request schema`,
          );
        if (path.endsWith('s') && method === 'GET' && !path.endsWith('openapi.json')) {
          const names = op.parameters.filter((p: any) => p.in === 'query').map((p: any) => p.name);
          assert.ok(names.includes('pageSize') && names.includes('pageToken'), `${method} ${path}: paging parameters`);
        }
      }
      // Conversely: every documented route outside other areas (devices, connectors, events; notification rules and
      // contacts, test/api/rules.test.ts and contacts.test.ts) is in the table above.
      const committed = new Set(COMMITTED_ROUTES.map(([m, p]) => `${m} ${p}`));
      for (const route of documented) {
        if (/\/(devices|dataconnectors|rules|contacts|contactGroups|alerts)\b|\/metrics$/.test(route)) continue;
        assert.ok(committed.has(route), `${route} is documented but not in the compat table; add it`);
      }
      assert.deepEqual(doc.paths['/v2/projects'].post.requestBody.content['application/json'].schema.required.sort(), [
        'displayName',
        'organization',
      ]);
      assert.deepEqual(
        doc.paths['/v2/projects/{project}/serviceaccounts/{serviceAccount}'].patch.parameters
          .filter((p: any) => p.in === 'query')
          .map((p: any) => p.name),
        ['updateMask'],
      );
    });
  });

  describe('errors', () => {
    it('every body route answers malformed JSON, non-objects and bodies over 1 MiB with 400', async () => {
      for (const [method, template] of COMMITTED_ROUTES) {
        if (method !== 'POST' && method !== 'PATCH') continue;
        const route = `${method} ${template}`;
        const url = fill(template, f.ids);
        const auth = UNAUTHENTICATED.has(route) ? null : undefined;
        const big = await call(t, method, url, {
          auth,
          rawBody: OVERSIZE_BODY,
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(big.status, 400, `${route} oversize: ${big.text.slice(0, 200)}`);
        const bigText = await call(t, method, url, {
          auth,
          rawBody: 'x'.repeat(MiB + 1),
          headers: { 'content-type': 'text/plain' },
        });
        assert.equal(bigText.status, 400, `${route} oversize text`);
        if (NO_BODY.has(route)) continue;
        for (const raw of MALFORMED_BODIES) {
          for (const ct of ['application/json', 'text/plain']) {
            const res = await call(t, method, url, { auth, rawBody: raw, headers: { 'content-type': ct } });
            assert.equal(res.status, 400, `${route} body ${JSON.stringify(raw)}: ${res.text.slice(0, 200)}`);
          }
        }
      }
    });

    it('exactly 1 MiB is still accepted', async () => {
      const { project: P } = f.ids;
      const padding = MiB - '{"displayName":"x","pad":""}'.length;
      const res = await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`, {
        rawBody: `{"displayName":"x","pad":"${'p'.repeat(padding)}"}`,
      });
      assert.equal(res.status, 200);
    });

    it('wrong-typed fields are 400 with a message that names the field', async () => {
      const table = wrongTypedBodies(f.ids);
      for (const [method, template] of COMMITTED_ROUTES) {
        const route = `${method} ${template}`;
        if ((method !== 'POST' && method !== 'PATCH') || NO_BODY.has(route)) continue;
        const cases = table[route];
        assert.ok(cases, `${route}: no wrong-typed cases in the table`);
        for (const [body, field] of cases) {
          const res = await call(t, method, fill(template, f.ids), {
            auth: UNAUTHENTICATED.has(route) ? null : undefined,
            body,
          });
          assert.equal(res.status, 400, `${route} ${JSON.stringify(body)}: ${res.text}`);
          assert.match(
            `${res.body.error} ${res.body.error_description ?? ''}`,
            new RegExp(field),
            `${route}: message names ${field}`,
          );
        }
      }
    });

    it('bodies nested absurdly deep are 400, not a stack overflow', async () => {
      const { project: P } = f.ids;
      for (const raw of [
        `{"a":${'['.repeat(200000)}${']'.repeat(200000)}}`,
        `${'{"a":'.repeat(100000)}1${'}'.repeat(100000)}`,
      ]) {
        assert.equal((await call(t, 'POST', `/v2/projects/${P}/serviceaccounts`, { rawBody: raw })).status, 400);
        assert.equal((await call(t, 'POST', '/v2/invites:accept', { auth: null, rawBody: raw })).status, 400);
      }
    });

    it('unknown ids of any format are 404 on every route that takes one', async () => {
      const { organization: O, project: P, serviceAccount: S, member: M, orgMember: OM } = f.ids;
      const templates: [string, (x: string) => string, unknown?][] = [
        ['GET', (x) => `/v2/roles/${x}`],
        ['GET', (x) => `/v2/organizations/${x}`],
        ['GET', (x) => `/v2/organizations/${x}/permissions`],
        ['GET', (x) => `/v2/organizations/${x}/members`],
        [
          'POST',
          (x) => `/v2/organizations/${x}/members`,
          { email: 'a@example.com', roles: ['roles/organization.admin'] },
        ],
        ['GET', (x) => `/v2/organizations/${O}/members/${x}`],
        ['DELETE', (x) => `/v2/organizations/${O}/members/${x}`],
        ['PATCH', (x) => `/v2/organizations/${O}/members/${x}`, { roles: ['roles/organization.admin'] }],
        ['GET', (x) => `/v2/organizations/${O}/members/${x}:getInviteUrl`],
        ['GET', (x) => `/v2/organizations/${x}/members/${OM}`],
        ['GET', (x) => `/v2/projects/${x}`],
        ['PATCH', (x) => `/v2/projects/${x}`, { displayName: 'x' }],
        ['DELETE', (x) => `/v2/projects/${x}`],
        ['GET', (x) => `/v2/projects/${x}/permissions`],
        ['GET', (x) => `/v2/projects/${x}/members`],
        ['POST', (x) => `/v2/projects/${x}/members`, { email: 'a@example.com', roles: ['roles/project.user'] }],
        ['GET', (x) => `/v2/projects/${P}/members/${x}`],
        ['PATCH', (x) => `/v2/projects/${P}/members/${x}`, { roles: ['roles/project.user'] }],
        ['DELETE', (x) => `/v2/projects/${P}/members/${x}`],
        ['GET', (x) => `/v2/projects/${P}/members/${x}:getInviteUrl`],
        ['GET', (x) => `/v2/projects/${x}/members/${M}`],
        ['GET', (x) => `/v2/projects/${x}/serviceaccounts`],
        ['POST', (x) => `/v2/projects/${x}/serviceaccounts`],
        ['GET', (x) => `/v2/projects/${P}/serviceaccounts/${x}`],
        ['PATCH', (x) => `/v2/projects/${P}/serviceaccounts/${x}`, { displayName: 'x' }],
        ['DELETE', (x) => `/v2/projects/${P}/serviceaccounts/${x}`],
        ['GET', (x) => `/v2/projects/${P}/serviceaccounts/${x}/keys`],
        ['POST', (x) => `/v2/projects/${P}/serviceaccounts/${x}/keys`],
        ['GET', (x) => `/v2/projects/${P}/serviceaccounts/${S}/keys/${x}`],
        ['DELETE', (x) => `/v2/projects/${P}/serviceaccounts/${S}/keys/${x}`],
        ['GET', (x) => `/v2/projects/${P}/serviceaccounts/${x}/memberships`],
        ['POST', (x) => `/v2/projects/${P}/serviceaccounts/${S}/memberships/projects/${x}:accept`],
        ['DELETE', (x) => `/v2/projects/${P}/serviceaccounts/${S}/memberships/organizations/${x}`],
        ['DELETE', (x) => `/v2/projects/${P}/serviceaccounts/${S}/memberships/${x}/${x}`],
      ];
      for (const id of UNKNOWN_IDS) {
        for (const [method, url, body] of templates) {
          const res = await call(t, method, url(id), { body });
          assert.equal(res.status, 404, `${method} ${url(id).slice(0, 100)}: ${res.text.slice(0, 200)}`);
        }
        // Ids inside bodies (decoded, without '/'): the named organization or project does not exist.
        const raw = decodeURIComponent(id);
        if (raw.includes('/')) continue;
        const inBody: [string, unknown][] = [
          ['/v2/projects', { organization: `organizations/${raw}`, displayName: 'x' }],
          ['/v2/projects:batchUpdate', { projects: [`projects/${raw}`], addLabels: { a: 'b' } }],
          [
            '/v2/projects/-/members:batchCreate',
            { members: [{ project: `projects/${raw}`, email: 'a@example.com', roles: ['roles/project.user'] }] },
          ],
        ];
        for (const [url, body] of inBody) {
          const res = await call(t, 'POST', url, { body });
          assert.equal(
            res.status,
            404,
            `POST ${url} with ${JSON.stringify(raw).slice(0, 40)}: ${res.text.slice(0, 200)}`,
          );
        }
        const wildcard = await call(t, 'GET', `/v2/projects/-/members?memberId=${S}&organization=organizations/${id}`);
        assert.equal(wildcard.status, 404, `wildcard members in organizations/${id.slice(0, 40)}`);
      }
    });

    it('unknown methods on known paths are 404, never 405', async () => {
      const { project: P, serviceAccount: S } = f.ids;
      const cases: [string, string][] = [
        ['PUT', `/v2/projects/${P}`],
        ['PATCH', '/v2/projects'],
        ['DELETE', '/v2/roles'],
        ['POST', '/v2/roles/project.user'],
        ['PUT', `/v2/projects/${P}/serviceaccounts/${S}`],
        ['DELETE', '/v2/projects:batchUpdate'],
        ['GET', '/v2/projects:batchUpdate'],
        ['GET', '/v2/invites:accept'],
        ['GET', '/oauth2/token'],
        ['OPTIONS', '/v2/projects'],
        ['POST', '/healthz'],
        ['POST', '/v2/openapi.json'],
        ['PATCH', `/v2/projects/${P}/serviceaccounts/${S}/keys`],
        ['DELETE', '/v2/organizations'],
        ['TRACE', '/v2/projects'],
        ['POST', `/v2/projects/${P}:frobnicate`],
        ['GET', `/v2/projects/${P}/members/x:stream`],
      ];
      for (const [method, url] of cases) assert.equal((await call(t, method, url)).status, 404, `${method} ${url}`);
    });

    it('bad page tokens and page sizes are 400 on every list; tokens do not cross lists', async () => {
      const lists = listUrls(f.ids);
      const tokens: string[] = [];
      for (const [url] of lists) {
        const res = await call(t, 'GET', withQuery(url, 'pageSize=1'));
        if (res.body.nextPageToken) tokens.push(res.body.nextPageToken);
      }
      for (const [url] of lists) {
        const bad = [
          'pageToken=garbage',
          'pageToken=%E2%9C%93',
          `pageToken=${'A'.repeat(5000)}`,
          'pageSize=-1',
          'pageSize=1.5',
          'pageSize=abc',
          'page_size=-5',
          ...[
            '',
            'roles',
            'permissions',
            'members',
            '["",""]',
            `serviceaccounts:${f.ids.project}`,
            `keys:${f.ids.serviceAccount}`,
          ].flatMap((filters) => [
            `pageToken=${forgedToken([{}], filters)}`,
            `pageToken=${forgedToken([['nested']], filters)}`,
            `pageToken=${forgedToken([{ a: 1 }, {}], filters)}`,
          ]),
        ];
        for (const q of bad) {
          const res = await call(t, 'GET', withQuery(url, q));
          assert.equal(res.status, 400, `${url} ${q.slice(0, 80)}: ${res.text.slice(0, 200)}`);
        }
        for (const token of tokens) {
          const res = await call(t, 'GET', withQuery(url, `pageSize=1&pageToken=${token}`));
          assert.ok(
            res.status === 200 || res.status === 400,
            `${url}: a foreign token is 400 or, if from this very list, a page`,
          );
        }
      }
    });

    it("the wildcard project '-' outside its few places is 400", async () => {
      for (const [method, url, body] of [
        ['GET', '/v2/projects/-', undefined],
        ['PATCH', '/v2/projects/-', {}],
        ['DELETE', '/v2/projects/-', undefined],
        ['GET', '/v2/projects/-/permissions', undefined],
        ['GET', '/v2/projects/-/serviceaccounts', undefined],
        ['POST', '/v2/projects/-/serviceaccounts', undefined],
        ['GET', '/v2/projects/-/members/x', undefined],
        ['POST', '/v2/projects/-/members', { email: 'a@example.com', roles: ['roles/project.user'] }],
        ['POST', '/v2/projects:batchUpdate', { projects: ['projects/-'], addLabels: { a: 'b' } }],
        ['GET', '/v2/projects/-/members', undefined],
      ] as const) {
        assert.equal((await call(t, method, url, { body })).status, 400, `${method} ${url}`);
      }
    });

    it('unknown update_mask paths are 400 on every PATCH route', async () => {
      const { project: P, serviceAccount: S, member: M, organization: O, orgMember: OM } = f.ids;
      for (const url of [
        `/v2/projects/${P}`,
        `/v2/projects/${P}/serviceaccounts/${S}`,
        `/v2/projects/${P}/members/${M}`,
        `/v2/organizations/${O}/members/${OM}`,
      ]) {
        for (const mask of ['bogus', 'displayName,bogus', 'roles.x.y']) {
          assert.equal(
            (await call(t, 'PATCH', withQuery(url, `update_mask=${mask}`), { body: {} })).status,
            400,
            `${url} ${mask}`,
          );
        }
      }
    });

    it('a bad percent-encoding in the path is a 400 with the error body', async () => {
      assert.equal((await call(t, 'GET', '/v2/projects/%ZZ')).status, 400);
      assert.equal((await call(t, 'GET', '/v2/roles/%E2%9C')).status, 400);
    });
  });

  describe('security', () => {
    const malformed = (keyId: string): Auth[] => [
      null,
      { raw: '' },
      { raw: 'Basic' },
      { raw: 'Basic ' },
      { raw: 'Basic !!!' },
      { raw: `Basic ${b64('no-colon')}` },
      { raw: `Basic ${b64(':')}` },
      { raw: `Basic ${b64(`${keyId}:${'0'.repeat(32)}`)}` },
      { raw: `Basic ${b64(`${keyId}:`)}` },
      { raw: `Basic ${'A'.repeat(10000)}` },
      { raw: 'Bearer' },
      { raw: 'Bearer ' },
      { raw: 'Bearer a.b.c' },
      { raw: 'Bearer ....' },
      { raw: `Bearer ${'x'.repeat(10000)}` },
      { raw: 'Digest username="x"' },
      { raw: 'Token abc' },
      { raw: 'Basic\tabc' },
      { raw: '\u00ff\u00fe' },
    ];

    it('malformed or wrong Authorization headers are 401 on every authenticated route', async () => {
      const headers = malformed(t.boot.serviceAccount.keyId);
      for (const [method, template] of COMMITTED_ROUTES) {
        if (UNAUTHENTICATED.has(`${method} ${template}`)) continue;
        for (const auth of headers) {
          const res = await call(t, method, fill(template, f.ids), { auth, rawBody: '{"malformed' });
          assert.equal(res.status, 401, `${method} ${template} with ${JSON.stringify(auth).slice(0, 60)}`);
        }
      }
    });

    it('Basic auth for an account without enableBasicAuth, or with a deleted key, is 401', async () => {
      const { project: P } = f.ids;
      const off = await t.createServiceAccount({ roles: ['roles/project.admin'], enableBasicAuth: false });
      assert.equal((await call(t, 'GET', `/v2/projects/${P}`, { auth: off.auth })).status, 401);
      const on = await t.createServiceAccount({ roles: ['roles/project.admin'] });
      assert.equal((await call(t, 'GET', `/v2/projects/${P}`, { auth: on.auth })).status, 200);
      await call(t, 'DELETE', `/v2/projects/${P}/serviceaccounts/${on.id}/keys/${on.keyId}`);
      assert.equal((await call(t, 'GET', `/v2/projects/${P}`, { auth: on.auth })).status, 401);
    });

    it('unauthenticated routes ignore a garbage Authorization header', async () => {
      const auth = { raw: 'Garbage !!!' };
      assert.equal((await call(t, 'GET', '/healthz', { auth })).status, 200);
      assert.equal((await call(t, 'GET', '/v2/openapi.json', { auth })).status, 200);
      assert.equal(
        (
          await call(t, 'POST', '/oauth2/token', {
            auth,
            rawBody: 'grant_type=password&username=a@example.com&password=wrong',
          })
        ).status,
        400,
      );
      assert.equal(
        (await call(t, 'POST', '/v2/invites:accept', { auth, body: { token: 'x', password: 'long enough password' } }))
          .status,
        400,
      );
    });
  });
});

describe('token endpoint against independently built JWTs (contract §2.3)', () => {
  let t: TestContext;
  let key: { keyId: string; secret: string; email: string };
  let aud: string;
  before(async () => {
    t = await createTestContext();
    const sa = await t.createServiceAccount({ roles: ['roles/project.developer'], enableBasicAuth: false });
    key = { keyId: sa.keyId, secret: sa.secret, email: sa.email };
    aud = `${t.deps.config.publicUrl}/oauth2/token`;
  });
  after(() => t.close());

  const now = () => Math.floor(t.clock.now() / 1000);
  const claims = (o: Record<string, unknown> = {}) => ({ iss: key.email, aud, iat: now(), exp: now() + 3600, ...o });
  const header = (o: Record<string, unknown> = {}) => ({ alg: 'HS256', kid: key.keyId, ...o });
  const grant = (assertion: string) =>
    `grant_type=${encodeURIComponent('urn:ietf:params:oauth:grant-type:jwt-bearer')}&assertion=${encodeURIComponent(assertion)}`;
  const exchange = (assertion: string, auth: Auth = null) =>
    call(t, 'POST', '/oauth2/token', {
      auth,
      rawBody: grant(assertion),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });

  describe('happy', () => {
    it('accepts typ absent, JWT or anything, aud as a string or an array, and the token works until expiry plus 30 s', async () => {
      for (const [h, c] of [
        [header(), claims()],
        [header({ typ: 'JWT' }), claims({ aud: [aud] })],
        [header({ typ: 'whatever' }), claims({ aud: ['https://elsewhere/', aud] })],
      ] as const) {
        const res = await exchange(signJwt(h, c, key.secret), { raw: 'Garbage' });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.body), ['access_token', 'token_type', 'expires_in']);
        assert.equal(res.body.token_type, 'Bearer');
        assert.equal(res.body.expires_in, 3600);
        assert.equal(res.headers['cache-control'], 'no-store');
      }
      const token = (await exchange(signJwt(header(), claims(), key.secret))).body.access_token;
      assert.equal((await call(t, 'GET', `/v2/projects/${t.projectId}`, { auth: { bearer: token } })).status, 200);
      assert.equal(
        (await call(t, 'GET', `/v2/projects/${t.projectId}`, { auth: { raw: `bEaReR ${token}` } })).status,
        200,
      );
      t.clock.advance(3629_000);
      assert.equal(
        (await call(t, 'GET', `/v2/projects/${t.projectId}`, { auth: { bearer: token } })).status,
        200,
        'inside the 30 s grace',
      );
      t.clock.advance(2_000);
      assert.equal(
        (await call(t, 'GET', `/v2/projects/${t.projectId}`, { auth: { bearer: token } })).status,
        401,
        'expired',
      );
      const [h, p, s] = token.split('.');
      const tampered = `${h}.${b64url({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), exp: now() + 9999 })}.${s}`;
      assert.equal(
        (await call(t, 'GET', `/v2/projects/${t.projectId}`, { auth: { bearer: tampered } })).status,
        401,
        'tampered bearer token',
      );
    });
  });

  describe('errors', () => {
    it('every bad assertion is 400 invalid_grant, never 401', async () => {
      const good = signJwt(header(), claims(), key.secret);
      const [gh, gp, gs] = good.split('.');
      const cases: [string, string][] = [
        ['tampered payload', `${gh}.${b64url(claims({ iss: 'attacker@example.com' }))}.${gs}`],
        ['tampered signature', `${gh}.${gp}.${gs!.startsWith('A') ? 'B' : 'A'}${gs!.slice(1)}`],
        ['wrong secret', signJwt(header(), claims(), 'f'.repeat(32))],
        ['expired', signJwt(header(), claims({ iat: now() - 3000, exp: now() - 120 }), key.secret)],
        ['issued in the future', signJwt(header(), claims({ iat: now() + 300, exp: now() + 900 }), key.secret)],
        ['too long-lived', signJwt(header(), claims({ exp: now() + 3661 }), key.secret)],
        ['exp before iat', signJwt(header(), claims({ exp: now() - 1 }), key.secret)],
        ['iat not a number', signJwt(header(), claims({ iat: String(now()) }), key.secret)],
        ['nbf in the future', signJwt(header(), claims({ nbf: now() + 600 }), key.secret)],
        ['alg none, no signature', `${b64url({ alg: 'none', kid: key.keyId })}.${gp}.`],
        ['alg none, a valid HMAC', signJwt({ alg: 'none', kid: key.keyId }, claims(), key.secret)],
        ['alg HS512', signJwt(header({ alg: 'HS512' }), claims(), key.secret)],
        ['alg hs256', signJwt(header({ alg: 'hs256' }), claims(), key.secret)],
        ['alg RS256', signJwt(header({ alg: 'RS256' }), claims(), key.secret)],
        ['no kid', signJwt({ alg: 'HS256' }, claims(), key.secret)],
        ['unknown kid', signJwt(header({ kid: 'd0000000000000000000' }), claims(), key.secret)],
        ['kid not a string', signJwt(header({ kid: { id: key.keyId } }), claims(), key.secret)],
        ['wrong iss', signJwt(header(), claims({ iss: 'someone@example.com' }), key.secret)],
        ['wrong aud', signJwt(header(), claims({ aud: 'https://evil.example/oauth2/token' }), key.secret)],
        ['aud a number', signJwt(header(), claims({ aud: 7 }), key.secret)],
        ['two segments', `${gh}.${gp}`],
        ['four segments', `${good}.x`],
        ['not base64url', `${gh}.${gp}.***`],
        ['header not JSON', `${b64url('not json')}.${gp}.${gs}`],
        ['header an array', `${b64url([1])}.${gp}.${gs}`],
        ['empty segments', '..'],
        ['huge', `${gh}.${'A'.repeat(200000)}.${gs}`],
      ];
      for (const [label, assertion] of cases) {
        const res = await exchange(assertion, { basic: [key.keyId, key.secret] });
        assert.equal(res.status, 400, `${label}: ${res.text}`);
        assert.equal(res.body.error, 'invalid_grant', label);
        assert.equal(typeof res.body.error_description, 'string', label);
        assert.ok(!res.text.includes(key.secret), `${label}: the secret never appears`);
      }
    });

    it('bad token requests are 400 invalid_request or unsupported_grant_type', async () => {
      for (const [raw, error] of [
        ['', 'invalid_request'],
        ['grant_type=', 'invalid_request'],
        ['{bad json', 'invalid_request'],
        ['{"grant_type":["x"]}', 'invalid_request'],
        ['grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer', 'invalid_request'],
        ['grant_type=client_credentials', 'unsupported_grant_type'],
        ['grant_type=password&grant_type=password', 'invalid_request'],
        ['%ZZ', 'invalid_request'],
      ] as const) {
        const res = await call(t, 'POST', '/oauth2/token', { auth: null, rawBody: raw });
        assert.equal(res.status, 400, raw);
        assert.equal(res.body.error, error, raw);
      }
    });
  });
});

describe('on a real socket', () => {
  let t: TestContext;
  let port: number;
  before(async () => {
    t = await createTestContext();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as { port: number }).port;
  });
  after(() => t.close());

  /** Writes raw bytes and reads until the server closes or answers one response. */
  function raw(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let data = '';
      socket.setTimeout(5000, () => socket.destroy(new Error('timeout')));
      socket.on('data', (chunk) => {
        data += chunk.toString('utf8');
      });
      socket.on('error', (err) => (data ? resolve(data) : reject(err)));
      socket.on('close', () => resolve(data));
      socket.write(request);
    });
  }

  describe('errors', () => {
    it('oversize headers and unparseable requests get a 400 with the error body, not 431', async () => {
      for (const request of [
        `GET /v2/roles HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`,
        'GARBAGE\r\n\r\n',
        'POST /v2/projects HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      ]) {
        const answer = await raw(request);
        assert.match(answer, /^HTTP\/1\.1 400 /, answer.slice(0, 80));
        assert.match(answer, /content-type: application\/json; charset=utf-8/i);
        const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
        assert.deepEqual(Object.keys(body), ['error', 'code', 'help']);
        assert.equal(body.code, 400);
      }
    });

    it('a path starting with several slashes is the API path (a client joining a base URL that ends in "/")', async () => {
      const auth = `Basic ${b64(`${t.boot.serviceAccount.keyId}:${t.boot.serviceAccount.secret}`)}`;
      const project = t.boot.project;
      for (const [path, status] of [
        [`//v2/${project}`, 200],
        [`///v2/${project}/members`, 200],
        ['//v2/projects/nope', 404],
      ] as const) {
        const answer = await raw(
          `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nConnection: close\r\n\r\n`,
        );
        assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), `${path}: ${answer.slice(0, 80)}`);
        assert.match(answer, /content-type: application\/json; charset=utf-8/i, path);
      }
    });

    it('a chunked empty body with Content-Type: application/json is no body', async () => {
      const auth = `Basic ${b64(`${t.boot.serviceAccount.keyId}:${t.boot.serviceAccount.secret}`)}`;
      const answer = await raw(
        `DELETE /v2/projects/nope HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
      );
      assert.match(answer, /^HTTP\/1\.1 404 /);
    });
  });
});
