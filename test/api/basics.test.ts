// Conventions every endpoint shares: health, errors, routing, bodies, roles and organizations.
import assert from 'node:assert/strict';
import { statSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestContext, type TestContext } from '../helpers/context.ts';

describe('conventions', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  describe('happy', () => {
    it('GET /healthz answers ok without credentials', async () => {
      const res = await t.request('GET', '/healthz', { auth: null });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { status: 'ok' });
    });

    it('bootstrap.json is written once with mode 0600', () => {
      const file = join(t.dataDir, 'bootstrap.json');
      assert.equal(statSync(file).mode & 0o777, 0o600);
      const boot = JSON.parse(readFileSync(file, 'utf8'));
      assert.match(boot.organization, /^organizations\/[0-9a-v]{20}$/);
      assert.match(boot.serviceAccount.secret, /^[0-9a-f]{32}$/);
      assert.equal(boot.tokenUrl, `${t.deps.config.publicUrl}/oauth2/token`);
    });

    it('lists the four roles in the fixed order with nextPageToken', async () => {
      const res = await t.request('GET', '/v2/roles');
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.roles.map((r: { name: string }) => r.name),
        ['roles/project.user', 'roles/project.developer', 'roles/project.admin', 'roles/organization.admin'],
      );
      assert.equal(res.body.nextPageToken, '');
    });

    it('pages roles with page_size and pageToken', async () => {
      const first = await t.request('GET', '/v2/roles?page_size=3');
      assert.equal(first.body.roles.length, 3);
      assert.notEqual(first.body.nextPageToken, '');
      const second = await t.request('GET', `/v2/roles?pageSize=3&pageToken=${first.body.nextPageToken}`);
      assert.deepEqual(
        second.body.roles.map((r: { name: string }) => r.name),
        ['roles/organization.admin'],
      );
      assert.equal(second.body.nextPageToken, '');
    });

    it('gets a role, ignoring a trailing slash', async () => {
      const res = await t.request('GET', '/v2/roles/project.developer/');
      assert.equal(res.status, 200);
      assert.ok(res.body.permissions.includes('dataconnector.create'));
    });

    it('lists and gets the bootstrap organization', async () => {
      const list = await t.request('GET', '/v2/organizations');
      assert.deepEqual(list.body, {
        organizations: [{ name: t.boot.organization, displayName: 'Default organization' }],
        nextPageToken: '',
      });
      const one = await t.request('GET', `/v2/${t.boot.organization}`);
      assert.equal(one.status, 200);
      const perms = await t.request('GET', `/v2/${t.boot.organization}/permissions`);
      assert.ok(perms.body.permissions.includes('project.create'));
      assert.deepEqual(perms.body.permissions, [...perms.body.permissions].sort());
    });

    it('serves the OpenAPI document without credentials', async () => {
      const res = await t.request('GET', '/v2/openapi.json', { auth: null });
      assert.equal(res.status, 200);
      assert.equal(res.body.openapi, '3.1.0');
      assert.ok(res.body.paths['/v2/roles'].get);
    });
  });

  describe('errors', () => {
    it('unknown routes and methods are 404 with the error body', async () => {
      for (const [m, u] of [
        ['GET', '/v2/nothing'],
        ['DELETE', '/v2/roles'],
        ['GET', '/v2alpha/x'],
      ] as const) {
        const res = await t.request(m, u);
        assert.equal(res.status, 404, `${m} ${u}`);
        assert.deepEqual(Object.keys(res.body), ['error', 'code', 'help']);
        assert.equal(res.body.code, 404);
      }
    });

    it('an unknown role is 404', async () => {
      const res = await t.request('GET', '/v2/roles/project.owner');
      assert.equal(res.status, 404);
    });

    it('bad page tokens and page sizes are 400', async () => {
      assert.equal((await t.request('GET', '/v2/roles?pageToken=garbage')).status, 400);
      assert.equal((await t.request('GET', '/v2/roles?pageSize=-1')).status, 400);
      assert.equal((await t.request('GET', '/v2/roles?pageSize=1.5')).status, 400);
      assert.equal((await t.request('GET', '/v2/roles?pageSize=0')).status, 200);
    });

    it('an unknown organization is 404, never 400', async () => {
      assert.equal((await t.request('GET', '/v2/organizations/nope')).status, 404);
    });
  });

  describe('security', () => {
    it('missing, malformed and wrong credentials are 401', async () => {
      const cases = [
        null,
        { raw: 'Basic' },
        { raw: 'Basic !!!' },
        { raw: 'Digest abc' },
        { raw: 'Bearer nope' },
        { basic: ['nokey', 'nosecret'] as [string, string] },
      ];
      for (const auth of cases) {
        const res = await t.request('GET', '/v2/roles', { auth });
        assert.equal(res.status, 401, JSON.stringify(auth));
        assert.equal(res.body.code, 401);
      }
    });

    it('a wrong secret for a real key is 401', async () => {
      const res = await t.request('GET', '/v2/roles', {
        auth: { basic: [t.boot.serviceAccount.keyId, '0'.repeat(32)] },
      });
      assert.equal(res.status, 401);
    });

    it('the scheme is matched case-insensitively', async () => {
      const token = Buffer.from(`${t.boot.serviceAccount.keyId}:${t.boot.serviceAccount.secret}`).toString('base64');
      assert.equal((await t.request('GET', '/v2/roles', { auth: { raw: `basic ${token}` } })).status, 200);
    });

    it('a service account without membership cannot see the organization', async () => {
      const sa = await t.createServiceAccount();
      assert.equal((await t.request('GET', `/v2/${t.boot.organization}`, { auth: sa.auth })).status, 404);
      assert.deepEqual((await t.request('GET', '/v2/organizations', { auth: sa.auth })).body, {
        organizations: [],
        nextPageToken: '',
      });
    });

    it('a project member reads the organization but not its permissions beyond read', async () => {
      const sa = await t.createServiceAccount({ roles: ['roles/project.user'] });
      assert.equal((await t.request('GET', `/v2/${t.boot.organization}`, { auth: sa.auth })).status, 200);
      const perms = await t.request('GET', `/v2/${t.boot.organization}/permissions`, { auth: sa.auth });
      assert.deepEqual(perms.body.permissions, ['organization.read']);
    });
  });
});

describe('rate limiting of unauthenticated requests', () => {
  it('buckets failed authentication by client IP', async () => {
    const t = await createTestContext({ env: { SENSORCLOUD_RATE_LIMIT: '3/3s' } });
    try {
      for (let i = 0; i < 3; i++)
        assert.equal((await t.request('GET', '/v2/roles', { auth: { basic: ['nokey', 'guess'] } })).status, 401);
      const limited = await t.request('GET', '/v2/roles', { auth: { basic: ['nokey', 'guess'] } });
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers['retry-after']) >= 1);
      // A valid principal has a bucket of its own.
      assert.equal((await t.request('GET', '/v2/roles')).status, 200);
    } finally {
      await t.close();
    }
  });
});

describe('rate limiting', () => {
  it('answers 429 with Retry-After once the bucket is empty, and refills with time', async () => {
    const t = await createTestContext({ env: { SENSORCLOUD_RATE_LIMIT: '3/3s' } });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await t.request('GET', '/v2/roles')).status, 200);
      const limited = await t.request('GET', '/v2/roles');
      assert.equal(limited.status, 429);
      assert.equal(limited.headers['retry-after'], '1');
      assert.equal(limited.body.code, 429);
      t.clock.advance(1000);
      assert.equal((await t.request('GET', '/v2/roles')).status, 200);
    } finally {
      await t.close();
    }
  });
});

describe('bodies', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  it('an unknown route is 404 even with a malformed body', async () => {
    assert.equal((await t.request('POST', '/v2/roles', { rawBody: '{not json' })).status, 404);
  });
});

describe('strictness', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  it('refuses pageSize spellings that are not plain digits', async () => {
    for (const v of ['1e3', '0x10', '%205', '+5'])
      assert.equal((await t.request('GET', `/v2/roles?pageSize=${v}`)).status, 400, v);
  });

  it('refuses page tokens whose keys are not scalars', async () => {
    const forged = Buffer.from(JSON.stringify({ k: [{ a: 1 }], f: 'roles' })).toString('base64url');
    assert.equal((await t.request('GET', `/v2/roles?pageToken=${forged}`)).status, 400);
  });

  it('answers HEAD with 404 (not part of the API)', async () => {
    assert.equal((await t.request('HEAD', '/v2/roles')).status, 404);
  });

  it('marks public routes as needing no credentials in the OpenAPI document', async () => {
    const doc = (await t.request('GET', '/v2/openapi.json')).body;
    assert.deepEqual(doc.paths['/oauth2/token'].post.security, []);
    assert.equal(doc.paths['/v2/roles'].get.security, undefined);
  });
});
