// Service accounts and keys (contract §3.5, §3.6, §4.5): CRUD, errors, and who may do what.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { createTestContext, type Account, type Auth, type TestContext } from '../helpers/context.ts';

const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** A bearer token through the real token endpoint, with an assertion built here (not by server code). */
async function bearerFor(t: TestContext, account: { email: string; keyId: string; secret: string }): Promise<string> {
  const iat = Math.floor(t.clock.now() / 1000);
  const assertion = await new SignJWT({ iss: account.email, aud: `${t.deps.config.publicUrl}/oauth2/token` })
    .setProtectedHeader({ alg: 'HS256', kid: account.keyId, typ: 'JWT' })
    .setIssuedAt(iat)
    .setExpirationTime(iat + 3600)
    .sign(new TextEncoder().encode(account.secret));
  const res = await t.request('POST', '/oauth2/token', {
    auth: null,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    rawBody: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
  });
  assert.equal(res.status, 200, res.text);
  return res.body.access_token;
}

describe('service accounts', () => {
  let t: TestContext;
  let base: string;
  before(async () => {
    t = await createTestContext();
    base = `/v2/projects/${t.projectId}/serviceaccounts`;
  });
  after(() => t.close());

  describe('happy', () => {
    it('creates with no body, no Content-Type, using the defaults and the exact shape', async () => {
      const res = await t.request('POST', base);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body), [
        'name',
        'email',
        'displayName',
        'enableBasicAuth',
        'createTime',
        'updateTime',
      ]);
      const id = res.body.name.split('/')[3];
      assert.match(id, /^[0-9a-v]{20}$/);
      assert.equal(res.body.name, `projects/${t.projectId}/serviceaccounts/${id}`);
      assert.equal(res.body.email, `${id}@${t.projectId}.serviceaccount.sensorcloud.local`);
      assert.equal(res.body.displayName, '');
      assert.equal(res.body.enableBasicAuth, false);
      assert.match(res.body.createTime, TS);
      assert.equal(res.body.updateTime, res.body.createTime);
    });

    it('creates with an empty body and Content-Type: application/json, and with {}', async () => {
      const empty = await t.request('POST', base, { rawBody: '', headers: { 'content-type': 'application/json' } });
      assert.equal(empty.status, 200, empty.text);
      const obj = await t.request('POST', base, { body: {} });
      assert.equal(obj.status, 200, obj.text);
      assert.equal(obj.body.enableBasicAuth, false);
    });

    it('creates with displayName and enableBasicAuth, ignoring read-only and unknown fields and nulls', async () => {
      const res = await t.request('POST', base, {
        body: {
          displayName: 'ci-bot',
          enableBasicAuth: true,
          email: 'evil@example.org',
          name: 'projects/x/serviceaccounts/y',
          extra: 1,
          createTime: null,
        },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.displayName, 'ci-bot');
      assert.equal(res.body.enableBasicAuth, true);
      assert.match(res.body.email, /\.serviceaccount\.sensorcloud\.local$/);
      assert.match(res.body.name, new RegExp(`^projects/${t.projectId}/serviceaccounts/[0-9a-v]{20}$`));
    });

    it('creating grants no rights: the new account sees nothing until it is a member', async () => {
      const created = await t.request('POST', base, { body: { enableBasicAuth: true } });
      const sa = created.body;
      const key = await t.request('POST', `/v2/${sa.name}/keys`);
      const auth: Auth = { basic: [key.body.key.id, key.body.secret] };
      assert.equal((await t.request('GET', '/v2/roles', { auth })).status, 200);
      assert.equal((await t.request('GET', base, { auth })).status, 404);
    });

    it('gets and lists in creation order with paging and nextPageToken', async () => {
      const project = await t.createProject('paging');
      const pbase = `/v2/projects/${project}/serviceaccounts`;
      const names: string[] = [];
      for (let i = 0; i < 3; i++)
        names.push((await t.request('POST', pbase, { body: { displayName: `sa${i}` } })).body.name);
      const all = await t.request('GET', pbase);
      assert.deepEqual(
        all.body.serviceAccounts.map((s: { name: string }) => s.name),
        names,
      );
      assert.equal(all.body.nextPageToken, '');
      const first = await t.request('GET', `${pbase}?page_size=2`);
      assert.equal(first.body.serviceAccounts.length, 2);
      assert.notEqual(first.body.nextPageToken, '');
      const second = await t.request('GET', `${pbase}?pageSize=2&pageToken=${first.body.nextPageToken}`);
      assert.deepEqual(
        second.body.serviceAccounts.map((s: { name: string }) => s.name),
        [names[2]],
      );
      assert.equal(second.body.nextPageToken, '');
      const one = await t.request('GET', `/v2/${names[1]}`);
      assert.equal(one.status, 200);
      assert.equal(one.body.displayName, 'sa1');
    });

    it('lists only the accounts owned by the project', async () => {
      const project = await t.createProject('owner');
      await t.createServiceAccount({ projectId: t.projectId, roles: ['roles/project.user'], memberOf: project });
      const res = await t.request('GET', `/v2/projects/${project}/serviceaccounts`);
      assert.deepEqual(res.body, { serviceAccounts: [], nextPageToken: '' });
    });

    it('PATCH without a mask applies the fields present; read-only fields are ignored', async () => {
      const sa = (await t.request('POST', base, { body: { displayName: 'before' } })).body;
      t.clock.advance(1000);
      const res = await t.request('PATCH', `/v2/${sa.name}`, {
        body: { displayName: 'after', email: 'x@y.z', name: 'projects/a/serviceaccounts/b' },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.displayName, 'after');
      assert.equal(res.body.enableBasicAuth, false);
      assert.equal(res.body.email, sa.email);
      assert.equal(res.body.name, sa.name);
      assert.equal(res.body.createTime, sa.createTime);
      assert.notEqual(res.body.updateTime, sa.updateTime);
      assert.equal((await t.request('GET', `/v2/${sa.name}`)).body.displayName, 'after');
    });

    it('PATCH with update_mask applies only the listed fields', async () => {
      const sa = (await t.request('POST', base, { body: { displayName: 'keep' } })).body;
      const res = await t.request('PATCH', `/v2/${sa.name}?update_mask=enableBasicAuth`, {
        body: { displayName: 'placeholder', enableBasicAuth: true },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.displayName, 'keep');
      assert.equal(res.body.enableBasicAuth, true);
      const both = await t.request('PATCH', `/v2/${sa.name}?updateMask=displayName,enableBasicAuth`, {
        body: { displayName: 'new', enableBasicAuth: false },
      });
      assert.equal(both.body.displayName, 'new');
      assert.equal(both.body.enableBasicAuth, false);
    });

    it('DELETE answers {} and removes the account, its keys and its memberships everywhere', async () => {
      const sa = (await t.request('POST', base, { body: { enableBasicAuth: true } })).body;
      const id = sa.name.split('/')[3];
      const key = (await t.request('POST', `/v2/${sa.name}/keys`)).body;
      const other = await t.createProject('elsewhere');
      await t.deps.store.memberships.create({
        scopeType: 'project',
        scopeId: other,
        memberId: id,
        accountType: 'SERVICE_ACCOUNT',
        roles: ['roles/project.user'],
        status: 'ACCEPTED',
        createTime: 0,
      });
      const res = await t.request('DELETE', `/v2/${sa.name}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {});
      assert.equal((await t.request('GET', `/v2/${sa.name}`)).status, 404);
      assert.equal(await t.deps.store.keys.get(key.key.id), null);
      assert.deepEqual(await t.deps.store.memberships.listByMember(id), []);
    });
  });

  describe('errors', () => {
    it('unknown project, unknown account or an account of another project is 404', async () => {
      assert.equal((await t.request('GET', '/v2/projects/nope/serviceaccounts')).status, 404);
      assert.equal((await t.request('POST', '/v2/projects/nope/serviceaccounts')).status, 404);
      assert.equal((await t.request('GET', `${base}/cvq2b1b0l4l9s3f2a9zz`)).status, 404);
      assert.equal((await t.request('GET', `${base}/not-an-id`)).status, 404);
      const project = await t.createProject('foreign');
      const foreign = (await t.request('POST', `/v2/projects/${project}/serviceaccounts`)).body.name.split('/')[3];
      for (const [m, u] of [
        ['GET', ''],
        ['PATCH', ''],
        ['DELETE', ''],
        ['GET', '/keys'],
        ['POST', '/keys'],
      ] as const) {
        assert.equal((await t.request(m, `${base}/${foreign}${u}`)).status, 404, `${m} ${u}`);
      }
    });

    it('bad field types, oversized displayName and malformed JSON are 400', async () => {
      for (const body of [{ displayName: 5 }, { enableBasicAuth: 'yes' }, { displayName: 'x'.repeat(257) }]) {
        const res = await t.request('POST', base, { body });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.deepEqual(Object.keys(res.body), ['error', 'code', 'help']);
      }
      assert.equal(
        (await t.request('POST', base, { rawBody: '{nope', headers: { 'content-type': 'application/json' } })).status,
        400,
      );
      assert.equal((await t.request('POST', base, { rawBody: '[1]' })).status, 400);
    });

    it('an unknown update_mask path is 400; read-only paths are ignored', async () => {
      const sa = (await t.request('POST', base)).body;
      const bad = await t.request('PATCH', `/v2/${sa.name}?update_mask=displayName,colour`, {
        body: { displayName: 'x' },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.body.error, /colour/);
      const ro = await t.request('PATCH', `/v2/${sa.name}?update_mask=email,display_name`, {
        body: { displayName: 'y', email: 'z@z' },
      });
      assert.equal(ro.status, 200, ro.text);
      assert.equal(ro.body.displayName, 'y');
      assert.equal(ro.body.email, sa.email);
    });

    it('the wildcard project is 400', async () => {
      assert.equal((await t.request('GET', '/v2/projects/-/serviceaccounts')).status, 400);
      assert.equal((await t.request('POST', '/v2/projects/-/serviceaccounts')).status, 400);
    });

    it('refuses to delete the last organization admin', async () => {
      const fresh = await createTestContext();
      try {
        const user = await fresh.deps.store.users.getByEmail(fresh.boot.user.email);
        await fresh.deps.store.memberships.delete('organization', fresh.organizationId, user!.id);
        const res = await fresh.request('DELETE', `/v2/${fresh.boot.serviceAccount.name}`);
        assert.equal(res.status, 400);
        assert.match(res.body.error, /last organization admin/);
      } finally {
        await fresh.close();
      }
    });
  });

  describe('security', () => {
    it('project user, developer and admins of other projects get 403 for every operation, reads included', async () => {
      const sa = (await t.request('POST', base)).body;
      const key = (await t.request('POST', `/v2/${sa.name}/keys`)).body.key;
      const elsewhere = await t.createProject('elsewhere-admin');
      const callers: Account[] = [
        await t.createServiceAccount({ roles: ['roles/project.user'] }),
        await t.createServiceAccount({ roles: ['roles/project.developer'] }),
        await t.createServiceAccount({ roles: ['roles/project.user', 'roles/project.developer'] }),
      ];
      const calls = [
        ['GET', base],
        ['POST', base],
        ['GET', `/v2/${sa.name}`],
        ['PATCH', `/v2/${sa.name}`],
        ['DELETE', `/v2/${sa.name}`],
        ['GET', `/v2/${sa.name}/keys`],
        ['POST', `/v2/${sa.name}/keys`],
        ['GET', `/v2/${key.name}`],
        ['DELETE', `/v2/${key.name}`],
      ] as const;
      for (const caller of callers) {
        for (const [m, u] of calls) {
          const res = await t.request(m, u, {
            auth: caller.auth,
            body: m === 'PATCH' ? { displayName: 'x' } : undefined,
          });
          assert.equal(res.status, 403, `${m} ${u}`);
        }
      }
      // A project admin of another project holds nothing on this one: 404, existence not leaked.
      const outsider = await t.createServiceAccount({ projectId: elsewhere, roles: ['roles/project.admin'] });
      for (const [m, u] of calls)
        assert.equal((await t.request(m, u, { auth: outsider.auth })).status, 404, `${m} ${u}`);
      // Nothing was changed by the refused calls.
      assert.equal((await t.request('GET', `/v2/${key.name}`)).status, 200);
    });

    it('no membership at all is 404', async () => {
      const stranger = await t.createServiceAccount();
      assert.equal((await t.request('GET', base, { auth: stranger.auth })).status, 404);
      assert.equal((await t.request('POST', base, { auth: stranger.auth })).status, 404);
    });

    it('a project admin manages the accounts of its project', async () => {
      const admin = await t.createServiceAccount({ roles: ['roles/project.admin'] });
      const created = await t.request('POST', base, { auth: admin.auth, body: { displayName: 'by-admin' } });
      assert.equal(created.status, 200);
      assert.equal((await t.request('GET', base, { auth: admin.auth })).status, 200);
      const key = await t.request('POST', `/v2/${created.body.name}/keys`, { auth: admin.auth });
      assert.equal(key.status, 200);
      assert.equal((await t.request('DELETE', `/v2/${created.body.name}`, { auth: admin.auth })).status, 200);
    });

    it('Basic auth is refused with 401 while enableBasicAuth is false, and follows PATCH', async () => {
      const sa = (await t.request('POST', base)).body;
      const key = (await t.request('POST', `/v2/${sa.name}/keys`)).body;
      const auth: Auth = { basic: [key.key.id, key.secret] };
      const refused = await t.request('GET', '/v2/roles', { auth });
      assert.equal(refused.status, 401);
      assert.match(refused.body.error, /Basic Auth is not enabled/);
      await t.request('PATCH', `/v2/${sa.name}`, { body: { enableBasicAuth: true } });
      assert.equal((await t.request('GET', '/v2/roles', { auth })).status, 200);
      await t.request('PATCH', `/v2/${sa.name}?update_mask=enableBasicAuth`, { body: { enableBasicAuth: false } });
      assert.equal((await t.request('GET', '/v2/roles', { auth })).status, 401);
    });

    it('a deleted key stops working for Basic and Bearer; other keys keep working', async () => {
      const sa = (await t.request('POST', base, { body: { enableBasicAuth: true } })).body;
      const k1 = (await t.request('POST', `/v2/${sa.name}/keys`)).body;
      const k2 = (await t.request('POST', `/v2/${sa.name}/keys`)).body;
      const bearer = await bearerFor(t, { email: sa.email, keyId: k1.key.id, secret: k1.secret });
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer } })).status, 200);
      assert.equal((await t.request('DELETE', `/v2/${k1.key.name}`)).status, 200);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { basic: [k1.key.id, k1.secret] } })).status, 401);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer } })).status, 401);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { basic: [k2.key.id, k2.secret] } })).status, 200);
    });

    it('a deleted service account stops working for Basic and Bearer', async () => {
      const sa = (await t.request('POST', base, { body: { enableBasicAuth: true } })).body;
      const k = (await t.request('POST', `/v2/${sa.name}/keys`)).body;
      const bearer = await bearerFor(t, { email: sa.email, keyId: k.key.id, secret: k.secret });
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer } })).status, 200);
      assert.equal((await t.request('DELETE', `/v2/${sa.name}`)).status, 200);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { basic: [k.key.id, k.secret] } })).status, 401);
      assert.equal((await t.request('GET', '/v2/roles', { auth: { bearer } })).status, 401);
    });
  });
});

describe('service account keys', () => {
  let t: TestContext;
  let sa: { name: string; email: string };
  before(async () => {
    t = await createTestContext();
    sa = (await t.request('POST', `/v2/projects/${t.projectId}/serviceaccounts`, { body: { enableBasicAuth: true } }))
      .body;
  });
  after(() => t.close());

  describe('happy', () => {
    it('creates a key with no body and no Content-Type; the secret is 32 hex and shown once', async () => {
      const res = await t.request('POST', `/v2/${sa.name}/keys`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body), ['key', 'secret']);
      assert.deepEqual(Object.keys(res.body.key), ['name', 'id', 'createTime']);
      assert.match(res.body.secret, /^[0-9a-f]{32}$/);
      assert.match(res.body.key.id, /^[0-9a-v]{20}$/);
      assert.equal(res.body.key.name, `${sa.name}/keys/${res.body.key.id}`);
      assert.match(res.body.key.createTime, TS);
      const got = await t.request('GET', `/v2/${res.body.key.name}`);
      assert.deepEqual(got.body, res.body.key);
      assert.ok(!got.text.includes(res.body.secret));
      const list = await t.request('GET', `/v2/${sa.name}/keys`);
      assert.ok(!list.text.includes(res.body.secret));
      assert.ok(list.body.keys.some((k: { id: string }) => k.id === res.body.key.id));
      // The secret is stored sealed, never in plain text.
      const stored = await t.deps.store.keys.get(res.body.key.id);
      assert.ok(!stored!.secretEnc.includes(res.body.secret));
    });

    it('ignores any body on key creation, even malformed JSON', async () => {
      for (const rawBody of ['', '{}', '{not json', '{"secret":"0123456789abcdef0123456789abcdef"}']) {
        const res = await t.request('POST', `/v2/${sa.name}/keys`, {
          rawBody,
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(res.status, 200, `${rawBody}: ${res.text}`);
        assert.notEqual(res.body.secret, '0123456789abcdef0123456789abcdef');
        await t.request('DELETE', `/v2/${res.body.key.name}`);
      }
    });

    it('a new key authenticates with Basic', async () => {
      const res = await t.request('POST', `/v2/${sa.name}/keys`);
      assert.equal(
        (await t.request('GET', '/v2/roles', { auth: { basic: [res.body.key.id, res.body.secret] } })).status,
        200,
      );
      await t.request('DELETE', `/v2/${res.body.key.name}`);
    });

    it('lists keys in creation order with paging; DELETE answers {}', async () => {
      const other = (await t.request('POST', `/v2/projects/${t.projectId}/serviceaccounts`)).body;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await t.request('POST', `/v2/${other.name}/keys`)).body.key.id);
      const first = await t.request('GET', `/v2/${other.name}/keys?pageSize=2`);
      assert.deepEqual(
        first.body.keys.map((k: { id: string }) => k.id),
        ids.slice(0, 2),
      );
      const second = await t.request('GET', `/v2/${other.name}/keys?pageSize=2&page_token=${first.body.nextPageToken}`);
      assert.deepEqual(
        second.body.keys.map((k: { id: string }) => k.id),
        ids.slice(2),
      );
      assert.equal(second.body.nextPageToken, '');
      const del = await t.request('DELETE', `/v2/${other.name}/keys/${ids[0]}`);
      assert.equal(del.status, 200);
      assert.deepEqual(del.body, {});
      assert.equal((await t.request('GET', `/v2/${other.name}/keys/${ids[0]}`)).status, 404);
    });
  });

  describe('errors', () => {
    it('at most 10 keys per service account; the 11th is 400 until one is deleted', async () => {
      const limited = (await t.request('POST', `/v2/projects/${t.projectId}/serviceaccounts`)).body;
      const names: string[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await t.request('POST', `/v2/${limited.name}/keys`);
        assert.equal(res.status, 200, `key ${i}`);
        names.push(res.body.key.name);
      }
      const eleventh = await t.request('POST', `/v2/${limited.name}/keys`);
      assert.equal(eleventh.status, 400);
      assert.match(eleventh.body.error, /at most 10 keys/);
      await t.request('DELETE', `/v2/${names[0]}`);
      assert.equal((await t.request('POST', `/v2/${limited.name}/keys`)).status, 200);
    });

    it('unknown keys, and keys of another account, are 404', async () => {
      const other = (await t.request('POST', `/v2/projects/${t.projectId}/serviceaccounts`)).body;
      const foreignKey = (await t.request('POST', `/v2/${other.name}/keys`)).body.key.id;
      assert.equal((await t.request('GET', `/v2/${sa.name}/keys/${foreignKey}`)).status, 404);
      assert.equal((await t.request('DELETE', `/v2/${sa.name}/keys/${foreignKey}`)).status, 404);
      assert.equal((await t.request('GET', `/v2/${sa.name}/keys/nope`)).status, 404);
      assert.equal((await t.request('GET', `/v2/${other.name}/keys/${foreignKey}`)).status, 200);
    });
  });

  describe('security', () => {
    it('key operations need project admin', async () => {
      const dev = await t.createServiceAccount({ roles: ['roles/project.developer'] });
      assert.equal((await t.request('GET', `/v2/${sa.name}/keys`, { auth: dev.auth })).status, 403);
      assert.equal((await t.request('POST', `/v2/${sa.name}/keys`, { auth: dev.auth })).status, 403);
      const admin = await t.createServiceAccount({ roles: ['roles/project.admin'] });
      assert.equal((await t.request('GET', `/v2/${sa.name}/keys`, { auth: admin.auth })).status, 200);
    });

    it('unauthenticated calls are 401', async () => {
      assert.equal((await t.request('GET', `/v2/${sa.name}/keys`, { auth: null })).status, 401);
      assert.equal((await t.request('POST', `/v2/${sa.name}/keys`, { auth: null })).status, 401);
    });
  });
});
