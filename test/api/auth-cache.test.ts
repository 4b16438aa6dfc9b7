// The authentication cache (src/auth/auth-cache.ts): a principal is reused for a few seconds, but any write to keys,
// service accounts, users or memberships made by this process takes effect on the very next request.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ACCESS_TOKEN_GRACE_SECONDS } from '../../src/auth/access-tokens.ts';
import { AUTH_CACHE_TTL_MS } from '../../src/auth/auth-cache.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createTestContext, type Account, type Auth, type TestContext } from '../helpers/context.ts';
import { reopenTestStore } from '../helpers/store.ts';

describe('authentication cache', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  const nowSeconds = () => Math.floor(t.clock.now() / 1000);
  const bearerFor = (sa: Account, exp = nowSeconds() + 3600): Auth => ({
    bearer: t.deps.tokens.sign({ sub: `sa:${sa.id}`, kid: sa.keyId, iat: nowSeconds(), exp }),
  });
  const devices = (projectId: string, auth: Auth) => t.request('GET', `/v2/projects/${projectId}/devices`, { auth });
  const labelsOf = (projectId: string) => t.request('GET', `/v2/projects/${projectId}/devices?pageSize=1`);

  /** A project and a service account holding `role` in it, with Basic and Bearer credentials already cached. */
  async function warmed(role = 'roles/project.developer') {
    const projectId = await t.createProject();
    const sa = await t.createServiceAccount({ projectId, roles: [role] });
    const bearer = bearerFor(sa);
    for (const auth of [sa.auth, bearer, sa.auth, bearer]) assert.equal((await devices(projectId, auth)).status, 200);
    return { projectId, sa, bearer };
  }

  describe('happy', () => {
    it('answers repeated requests with the same credentials, Basic and Bearer', async () => {
      const { projectId, sa, bearer } = await warmed();
      for (let i = 0; i < 3; i++) {
        assert.equal((await devices(projectId, sa.auth)).status, 200);
        assert.equal((await devices(projectId, bearer)).status, 200);
      }
      assert.equal((await labelsOf(projectId)).status, 200);
    });

    it('sees a new membership at once', async () => {
      const { sa } = await warmed();
      const other = await t.createProject();
      assert.equal((await devices(other, sa.auth)).status, 404);
      await t.deps.store.memberships.create({
        scopeType: 'project',
        scopeId: other,
        memberId: sa.id,
        accountType: 'SERVICE_ACCOUNT',
        roles: ['roles/project.user'],
        status: 'ACCEPTED',
        createTime: nowMicros(t.deps),
      });
      assert.equal((await devices(other, sa.auth)).status, 200);
    });
  });

  describe('errors', () => {
    it('never serves a wrong secret for a cached key id', async () => {
      const { projectId, sa } = await warmed();
      assert.equal((await devices(projectId, { basic: [sa.keyId, `${sa.secret}x`] })).status, 401);
      assert.equal((await devices(projectId, { basic: [sa.keyId, sa.secret.slice(1)] })).status, 401);
      assert.equal((await devices(projectId, sa.auth)).status, 200);
    });

    it('caches no failure: a credential that becomes valid works on the next request', async () => {
      const projectId = await t.createProject();
      const sa = await t.createServiceAccount({ projectId, roles: ['roles/project.user'], enableBasicAuth: false });
      assert.equal((await devices(projectId, sa.auth)).status, 401);
      const record = (await t.deps.store.serviceAccounts.get(sa.id))!;
      await t.deps.store.serviceAccounts.update({ ...record, enableBasicAuth: true });
      assert.equal((await devices(projectId, sa.auth)).status, 200);
    });
  });

  describe('security', () => {
    it('a deleted key dies on the very next request (Basic and Bearer)', async () => {
      const { projectId, sa, bearer } = await warmed();
      await t.deps.store.keys.delete(sa.keyId);
      assert.equal((await devices(projectId, sa.auth)).status, 401);
      assert.equal((await devices(projectId, bearer)).status, 401);
    });

    it('a deleted service account dies on the very next request', async () => {
      const { projectId, sa, bearer } = await warmed();
      const res = await t.request('DELETE', `/v2/projects/${projectId}/serviceaccounts/${sa.id}`);
      assert.equal(res.status, 200, res.text);
      assert.equal((await devices(projectId, sa.auth)).status, 401);
      assert.equal((await devices(projectId, bearer)).status, 401);
    });

    it('Basic turned off stops Basic at once', async () => {
      const { projectId, sa, bearer } = await warmed();
      const record = (await t.deps.store.serviceAccounts.get(sa.id))!;
      await t.deps.store.serviceAccounts.update({ ...record, enableBasicAuth: false });
      assert.equal((await devices(projectId, sa.auth)).status, 401);
      assert.equal((await devices(projectId, bearer)).status, 200);
    });

    it('a removed membership or a lowered role applies to the very next request', async () => {
      const { projectId, sa, bearer } = await warmed('roles/project.admin');
      const device = await t.createDevice({ projectId });
      let n = 0;
      const write = (auth: Auth) =>
        t.request('POST', `/v2/projects/${projectId}/devices/${device.id}/labels`, {
          auth,
          body: { key: `k${n++}`, value: 'v' },
        });
      assert.equal((await write(sa.auth)).status, 200);
      await t.deps.store.memberships.updateRoles('project', projectId, sa.id, ['roles/project.user']);
      assert.equal((await write(sa.auth)).status, 403);
      assert.equal((await write(bearer)).status, 403);
      assert.equal((await devices(projectId, sa.auth)).status, 200);
      await t.deps.store.memberships.delete('project', projectId, sa.id);
      assert.equal((await devices(projectId, sa.auth)).status, 404);
      assert.equal((await devices(projectId, bearer)).status, 404);
    });

    it('deleting the owning project kills its service accounts at once', async () => {
      const owner = await t.createProject();
      const target = await t.createProject();
      const sa = await t.createServiceAccount({ projectId: owner, memberOf: target, roles: ['roles/project.user'] });
      assert.equal((await devices(target, sa.auth)).status, 200);
      await t.deps.store.projects.delete(owner);
      assert.equal((await devices(target, sa.auth)).status, 401);
    });

    it('a deactivated user loses its Bearer token at once', async () => {
      const login = await t.request('POST', '/oauth2/token', {
        auth: null,
        rawBody: new URLSearchParams({
          grant_type: 'password',
          username: t.boot.user.email,
          password: t.boot.user.password,
        }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(login.status, 200, login.text);
      const auth: Auth = { bearer: login.body.access_token };
      assert.equal((await devices(t.projectId, auth)).status, 200);
      assert.equal((await devices(t.projectId, auth)).status, 200);
      const user = (await t.deps.store.users.getByEmail(t.boot.user.email))!;
      await t.deps.store.users.update({ ...user, active: false });
      assert.equal((await devices(t.projectId, auth)).status, 401);
      await t.deps.store.users.update({ ...user, active: true });
      assert.equal((await devices(t.projectId, auth)).status, 200);
    });

    it('a cached token still lapses exactly when verify() would refuse it', async () => {
      const projectId = await t.createProject();
      const sa = await t.createServiceAccount({ projectId, roles: ['roles/project.user'] });
      // Expired 28 s ago: honoured for 2 more seconds of grace, less than the cache's TTL.
      const auth = bearerFor(sa, nowSeconds() - (ACCESS_TOKEN_GRACE_SECONDS - 2));
      assert.equal((await devices(projectId, auth)).status, 200);
      t.clock.advance(1000);
      assert.equal((await devices(projectId, auth)).status, 200);
      t.clock.advance(1500);
      assert.equal((await devices(projectId, auth)).status, 401);
    });

    it('a change made by another process: at once on a shared store (PostgreSQL), after the TTL on SQLite (documented)', async () => {
      const { projectId, sa } = await warmed();
      const otherProcess = await reopenTestStore(t.dataDir);
      try {
        await otherProcess.memberships.delete('project', projectId, sa.id);
      } finally {
        await otherProcess.close();
      }
      if (t.deps.store.exclusive) {
        // One process owns a SQLite store: within the TTL it cannot know of another's write; after it, it applies.
        assert.equal((await devices(projectId, sa.auth)).status, 200);
        t.clock.advance(AUTH_CACHE_TTL_MS + 1);
      }
      assert.equal((await devices(projectId, sa.auth)).status, 404);
    });
  });
});
