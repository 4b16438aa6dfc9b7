// Project and organization members (contract §2.5-2.7, §3.3, §4.2-4.3): add, roles, removal, the last-admin guard,
// invitations end to end, the wildcard project queries and batches.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { hashPassword, verifyPassword } from '../../src/auth/passwords.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createTestContext, type Account, type Auth, type TestContext } from '../helpers/context.ts';

const DAY_MS = 24 * 3600 * 1000;
const PASSWORD = 'correct horse battery';

async function createUser(t: TestContext, email: string, displayName = 'Ada'): Promise<{ id: string; auth: Auth }> {
  const id = t.deps.ids.next();
  const now = nowMicros(t.deps);
  await t.deps.store.users.create({
    id,
    email,
    displayName,
    passwordHash: null,
    active: true,
    createTime: now,
    updateTime: now,
  });
  return { id, auth: userAuth(t, id) };
}

/** An ACCEPTED project membership, written to the store: the account belongs to that project's organization. */
async function joinProject(
  t: TestContext,
  memberId: string,
  projectId: string,
  accountType: 'USER' | 'SERVICE_ACCOUNT' = 'USER',
): Promise<void> {
  await t.deps.store.memberships.create({
    scopeType: 'project',
    scopeId: projectId,
    memberId,
    accountType,
    roles: ['roles/project.user'],
    status: 'ACCEPTED',
    createTime: nowMicros(t.deps),
  });
}

function userAuth(t: TestContext, id: string): Auth {
  const iat = Math.floor(t.clock.now() / 1000);
  return { bearer: t.deps.tokens.sign({ sub: `user:${id}`, kid: '', iat, exp: iat + 3600 }) };
}

const tokenOf = (inviteUrl: string) => inviteUrl.slice(inviteUrl.lastIndexOf('/') + 1);

describe('project members', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  const members = (p: string) => `/v2/projects/${p}/members`;

  describe('happy', () => {
    it('adds a service account by email (any case) as ACCEPTED, in the exact shape of §3.3', async () => {
      const p = await t.createProject();
      const sa = await t.createServiceAccount();
      const res = await t.request('POST', members(p), {
        body: { email: sa.email.toUpperCase(), roles: ['roles/project.developer'] },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {
        name: `projects/${p}/members/${sa.id}`,
        displayName: 'test',
        roles: ['roles/project.developer'],
        status: 'ACCEPTED',
        email: sa.email,
        accountType: 'SERVICE_ACCOUNT',
        createTime: '2025-06-01T12:00:00.000000Z',
      });
      assert.deepEqual(Object.keys(res.body), [
        'name',
        'displayName',
        'roles',
        'status',
        'email',
        'accountType',
        'createTime',
      ]);
      // The membership takes effect at once.
      assert.equal((await t.request('GET', `/v2/projects/${p}/members`, { auth: sa.auth })).status, 200);
    });

    it('adds a user who is a member of the organization already as ACCEPTED', async () => {
      const p = await t.createProject();
      const user = await createUser(t, 'grace@example.com', 'Grace');
      await joinProject(t, user.id, t.projectId);
      const res = await t.request('POST', members(p), {
        body: { email: 'Grace@Example.com', roles: ['roles/project.user', 'roles/project.admin'] },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.name, `projects/${p}/members/${user.id}`);
      assert.equal(res.body.status, 'ACCEPTED');
      assert.equal(res.body.accountType, 'USER');
      assert.equal(res.body.displayName, 'Grace');
      assert.deepEqual(res.body.roles, ['roles/project.user', 'roles/project.admin']);
    });

    it('an unknown email creates a pending user and a PENDING membership', async () => {
      const p = await t.createProject();
      const res = await t.request('POST', members(p), {
        body: { email: 'New.Person@Example.org', roles: ['roles/project.user'] },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, 'PENDING');
      assert.equal(res.body.email, 'new.person@example.org');
      assert.equal(res.body.displayName, '');
      assert.equal(res.body.accountType, 'USER');
      const user = await t.deps.store.users.getByEmail('new.person@example.org');
      assert.ok(user);
      assert.equal(user.active, false);
      assert.equal(user.passwordHash, null);
      assert.equal(res.body.name, `projects/${p}/members/${user.id}`);
    });

    it('gets, re-roles (update_mask roles) and removes a member', async () => {
      const p = await t.createProject();
      const sa = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p });
      const url = `${members(p)}/${sa.id}`;
      const got = await t.request('GET', url);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body.roles, ['roles/project.user']);
      const patched = await t.request('PATCH', `${url}?update_mask=roles`, {
        body: { roles: ['roles/project.admin'], status: 'PENDING', email: 'x@y.z', displayName: 'ignored' },
      });
      assert.equal(patched.status, 200);
      assert.deepEqual(patched.body, { ...got.body, roles: ['roles/project.admin'] });
      const camel = await t.request('PATCH', `${url}?updateMask=roles`, {
        body: { roles: ['roles/project.developer', 'roles/project.developer'] },
      });
      assert.deepEqual(camel.body.roles, ['roles/project.developer']);
      const noMask = await t.request('PATCH', url, { body: { roles: ['roles/project.user'] } });
      assert.deepEqual(noMask.body.roles, ['roles/project.user']);
      const otherMask = await t.request('PATCH', `${url}?update_mask=displayName`, {
        body: { roles: ['roles/project.admin'] },
      });
      assert.deepEqual(otherMask.body.roles, ['roles/project.user']);
      const del = await t.request('DELETE', url);
      assert.equal(del.status, 200);
      assert.deepEqual(del.body, {});
      assert.equal((await t.request('GET', url)).status, 404);
      assert.equal((await t.request('GET', members(p), { auth: sa.auth })).status, 404);
    });

    it('lists members in creation order with paging (snake_case and camelCase)', async () => {
      const p = await t.createProject();
      const added: string[] = [];
      for (let i = 0; i < 5; i++) {
        t.clock.advance(1000);
        const res = await t.request('POST', members(p), {
          body: { email: `member${i}@example.com`, roles: ['roles/project.user'] },
        });
        added.push(res.body.name);
      }
      const seen: string[] = [];
      let token = '';
      for (let i = 0; i < 10; i++) {
        const res = await t.request(
          'GET',
          `${members(p)}?${i % 2 ? 'pageSize' : 'page_size'}=2&${i % 2 ? 'pageToken' : 'page_token'}=${token}`,
        );
        assert.equal(res.status, 200);
        assert.ok(res.body.members.length <= 2);
        seen.push(...res.body.members.map((m: { name: string }) => m.name));
        token = res.body.nextPageToken;
        if (token === '') break;
      }
      assert.deepEqual(seen, added);
      const all = await t.request('GET', members(p));
      assert.equal(all.body.members.length, 5);
      assert.equal(all.body.nextPageToken, '');
    });

    it('the verb colon may arrive encoded', async () => {
      const p = await t.createProject();
      const res = await t.request('POST', members(p), {
        body: { email: 'encoded@example.com', roles: ['roles/project.user'] },
      });
      const link = await t.request('GET', `/v2/${res.body.name}%3AgetInviteUrl`);
      assert.equal(link.status, 200);
    });
  });

  describe('errors', () => {
    it('409 when the email is already a member', async () => {
      const p = await t.createProject();
      const body = { email: 'twice@example.com', roles: ['roles/project.user'] };
      assert.equal((await t.request('POST', members(p), { body })).status, 200);
      const again = await t.request('POST', members(p), { body: { ...body, email: 'TWICE@example.com' } });
      assert.equal(again.status, 409);
      assert.equal(again.body.error, 'member already exists');
    });

    it('400 for an email shaped like a service account that matches none', async () => {
      const p = await t.createProject();
      const res = await t.request('POST', members(p), {
        body: {
          email: 'd0000000000000000000@d0000000000000000000.serviceaccount.sensorcloud.local',
          roles: ['roles/project.user'],
        },
      });
      assert.equal(res.status, 400);
      assert.equal(
        await t.deps.store.users.getByEmail(
          'd0000000000000000000@d0000000000000000000.serviceaccount.sensorcloud.local',
        ),
        null,
      );
    });

    it('validates email and roles', async () => {
      const p = await t.createProject();
      const cases: unknown[] = [
        {},
        { email: 'a@b.c' },
        { roles: ['roles/project.user'] },
        { email: 'not-an-email', roles: ['roles/project.user'] },
        { email: 'a b@c.d', roles: ['roles/project.user'] },
        { email: 5, roles: ['roles/project.user'] },
        { email: 'a@b.c', roles: [] },
        { email: 'a@b.c', roles: 'roles/project.user' },
        { email: 'a@b.c', roles: ['roles/project.owner'] },
        { email: 'a@b.c', roles: ['project.user'] },
        { email: 'a@b.c', roles: ['roles/organization.admin'] },
        { email: 'a@b.c', roles: [1] },
      ];
      for (const body of cases) {
        const res = await t.request('POST', members(p), { body });
        assert.equal(res.status, 400, JSON.stringify(body));
      }
      assert.equal((await t.request('POST', members(p), { rawBody: '{"email":' })).status, 400);
      assert.equal((await t.request('POST', members(p))).status, 400);
      assert.equal(await t.deps.store.users.getByEmail('a@b.c'), null);
    });

    it('PATCH validates roles and the mask', async () => {
      const p = await t.createProject();
      const sa = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p });
      const url = `${members(p)}/${sa.id}`;
      assert.equal((await t.request('PATCH', url, { body: { roles: [] } })).status, 400);
      assert.equal((await t.request('PATCH', url, { body: { roles: ['roles/organization.admin'] } })).status, 400);
      assert.equal((await t.request('PATCH', `${url}?update_mask=roles`, { body: {} })).status, 400);
      assert.equal(
        (await t.request('PATCH', `${url}?update_mask=color`, { body: { roles: ['roles/project.user'] } })).status,
        400,
      );
      assert.equal((await t.request('PATCH', url, { body: { roles: 'roles/project.user' } })).status, 400);
      assert.deepEqual((await t.request('GET', url)).body.roles, ['roles/project.user']);
    });

    it('unknown members and projects are 404', async () => {
      const p = await t.createProject();
      for (const m of ['GET', 'PATCH', 'DELETE'] as const) {
        assert.equal(
          (
            await t.request(m, `${members(p)}/d0000000000000000000`, {
              body: m === 'PATCH' ? { roles: ['roles/project.user'] } : undefined,
            })
          ).status,
          404,
          m,
        );
      }
      assert.equal((await t.request('GET', `${members(p)}/nope:getInviteUrl`)).status, 404);
      assert.equal((await t.request('GET', members('d0000000000000000000'))).status, 404);
      assert.equal(
        (
          await t.request('POST', members('d0000000000000000000'), {
            body: { email: 'a@b.c', roles: ['roles/project.user'] },
          })
        ).status,
        404,
      );
    });

    it('getInviteUrl is 400 for an ACCEPTED member (every service account)', async () => {
      const p = await t.createProject();
      const sa = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p });
      const user = await createUser(t, 'accepted@example.com');
      await joinProject(t, user.id, t.projectId);
      await t.request('POST', members(p), { body: { email: 'accepted@example.com', roles: ['roles/project.user'] } });
      assert.equal((await t.request('GET', `${members(p)}/${sa.id}:getInviteUrl`)).status, 400);
      assert.equal((await t.request('GET', `${members(p)}/${user.id}:getInviteUrl`)).status, 400);
    });

    it("'-' is refused outside the wildcard routes", async () => {
      assert.equal((await t.request('GET', '/v2/projects/-/members/abc')).status, 400);
      assert.equal(
        (await t.request('POST', '/v2/projects/-/members', { body: { email: 'a@b.c', roles: ['roles/project.user'] } }))
          .status,
        400,
      );
      assert.equal((await t.request('DELETE', '/v2/projects/-/members/abc')).status, 400);
      assert.equal((await t.request('GET', '/v2/projects/-/members/abc:getInviteUrl')).status, 400);
    });
  });

  describe('security', () => {
    it('a project user reads members but cannot add, change or remove them (403)', async () => {
      const p = await t.createProject();
      const user = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p });
      const other = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p });
      assert.equal((await t.request('GET', members(p), { auth: user.auth })).status, 200);
      assert.equal((await t.request('GET', `${members(p)}/${other.id}`, { auth: user.auth })).status, 200);
      assert.equal(
        (
          await t.request('POST', members(p), {
            auth: user.auth,
            body: { email: 'x@example.com', roles: ['roles/project.user'] },
          })
        ).status,
        403,
      );
      assert.equal(
        (
          await t.request('PATCH', `${members(p)}/${other.id}`, {
            auth: user.auth,
            body: { roles: ['roles/project.admin'] },
          })
        ).status,
        403,
      );
      assert.equal(
        (
          await t.request('PATCH', `${members(p)}/${user.id}`, {
            auth: user.auth,
            body: { roles: ['roles/project.admin'] },
          })
        ).status,
        403,
      );
      assert.equal((await t.request('DELETE', `${members(p)}/${other.id}`, { auth: user.auth })).status, 403);
      assert.equal((await t.request('GET', `${members(p)}/${other.id}:getInviteUrl`, { auth: user.auth })).status, 403);
      assert.equal(await t.deps.store.users.getByEmail('x@example.com'), null);
    });

    it('a developer cannot manage members; a project admin can', async () => {
      const p = await t.createProject();
      const dev = await t.createServiceAccount({ roles: ['roles/project.developer'], memberOf: p });
      const admin = await t.createServiceAccount({ roles: ['roles/project.admin'], memberOf: p });
      const body = { email: 'by-admin@example.com', roles: ['roles/project.user'] };
      assert.equal((await t.request('POST', members(p), { auth: dev.auth, body })).status, 403);
      const res = await t.request('POST', members(p), { auth: admin.auth, body });
      assert.equal(res.status, 200);
      assert.equal((await t.request('GET', `/v2/${res.body.name}:getInviteUrl`, { auth: admin.auth })).status, 200);
      assert.equal((await t.request('DELETE', `/v2/${res.body.name}`, { auth: admin.auth })).status, 200);
    });

    it('a caller without any role in the project gets 404, never 403', async () => {
      const p = await t.createProject();
      const member = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p });
      const stranger = await t.createServiceAccount({ roles: ['roles/project.admin'] }); // admin of another project
      assert.equal((await t.request('GET', members(p), { auth: stranger.auth })).status, 404);
      assert.equal((await t.request('GET', `${members(p)}/${member.id}`, { auth: stranger.auth })).status, 404);
      assert.equal(
        (
          await t.request('POST', members(p), {
            auth: stranger.auth,
            body: { email: 'y@example.com', roles: ['roles/project.user'] },
          })
        ).status,
        404,
      );
      assert.equal((await t.request('DELETE', `${members(p)}/${member.id}`, { auth: stranger.auth })).status, 404);
    });

    it('requires credentials', async () => {
      assert.equal((await t.request('GET', members(t.projectId), { auth: null })).status, 401);
    });
  });
});

describe('invitations', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  async function invite(email: string, projects: string[]) {
    let memberName = '';
    for (const p of projects) {
      const res = await t.request('POST', `/v2/projects/${p}/members`, {
        body: { email, roles: ['roles/project.developer'] },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, 'PENDING');
      memberName ||= res.body.name;
    }
    const link = await t.request('GET', `/v2/${memberName}:getInviteUrl`);
    assert.equal(link.status, 200);
    return { memberId: memberName.split('/')[3]!, inviteUrl: link.body.inviteUrl as string };
  }

  const accept = (body: unknown) => t.request('POST', '/v2/invites:accept', { auth: null, body });

  describe('happy', () => {
    it('PENDING → getInviteUrl → invites:accept makes the user active and every membership ACCEPTED', async () => {
      const [p1, p2] = [await t.createProject('One'), await t.createProject('Two')];
      const { memberId, inviteUrl } = await invite('Invitee@Example.com', [p1, p2]);
      assert.match(inviteUrl, new RegExp(`^${t.deps.config.publicUrl}/invite/[A-Za-z0-9_-]{32,}$`));
      // A pending user cannot use the API yet.
      assert.equal((await t.request('GET', '/v2/projects', { auth: userAuth(t, memberId) })).status, 401);
      const res = await accept({ token: tokenOf(inviteUrl), password: PASSWORD, displayName: 'Invited Person' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {});
      const user = (await t.deps.store.users.get(memberId))!;
      assert.equal(user.active, true);
      assert.equal(user.displayName, 'Invited Person');
      assert.equal(user.email, 'invitee@example.com');
      assert.ok(await verifyPassword(PASSWORD, user.passwordHash));
      for (const p of [p1, p2]) {
        const m = await t.request('GET', `/v2/projects/${p}/members/${memberId}`);
        assert.equal(m.body.status, 'ACCEPTED');
        assert.equal(m.body.displayName, 'Invited Person');
      }
      const visible = await t.request('GET', '/v2/projects', { auth: userAuth(t, memberId) });
      assert.deepEqual(
        visible.body.projects.map((p: { displayName: string }) => p.displayName),
        ['One', 'Two'],
      );
      // Accepted now: no further invitation link.
      assert.equal((await t.request('GET', `/v2/projects/${p1}/members/${memberId}:getInviteUrl`)).status, 400);
    });

    it('invites:lookup names the e-mail, every membership and the expiry, without credentials, and uses nothing up', async () => {
      const [p1, p2] = [await t.createProject('Looked up one'), await t.createProject('Looked up two')];
      const { inviteUrl } = await invite('Look.Up@Example.com', [p1, p2]);
      const org = await t.request('POST', `/v2/${t.boot.organization}/members`, {
        body: { email: 'look.up@example.com', roles: ['roles/organization.admin'] },
      });
      assert.equal(org.status, 200);
      // Gaining a membership revoked the first link: the lookup refuses it, as accepting would.
      assert.equal(
        (await t.request('POST', '/v2/invites:lookup', { auth: null, body: { token: tokenOf(inviteUrl) } })).status,
        400,
      );
      const fresh = (await t.request('GET', `/v2/${org.body.name}:getInviteUrl`)).body.inviteUrl as string;
      const organization = await t.request('GET', `/v2/${t.boot.organization}`);
      const res = await t.request('POST', '/v2/invites:lookup', { auth: null, body: { token: tokenOf(fresh) } });
      assert.equal(res.status, 200, res.text);
      const byParent = (a: { parent: string }, b: { parent: string }) => a.parent.localeCompare(b.parent);
      assert.deepEqual(
        { ...res.body, expireTime: undefined, memberships: [...res.body.memberships].sort(byParent) },
        {
          email: 'look.up@example.com',
          displayName: '',
          expireTime: undefined,
          memberships: [
            {
              parent: t.boot.organization,
              parentDisplayName: organization.body.displayName,
              roles: ['roles/organization.admin'],
            },
            { parent: `projects/${p1}`, parentDisplayName: 'Looked up one', roles: ['roles/project.developer'] },
            { parent: `projects/${p2}`, parentDisplayName: 'Looked up two', roles: ['roles/project.developer'] },
          ].sort(byParent),
        },
      );
      assert.equal(Date.parse(res.body.expireTime), t.clock.now() + 7 * DAY_MS);
      // Looking up twice is fine; the link still accepts, and then looks up no more.
      assert.equal(
        (await t.request('POST', '/v2/invites:lookup', { auth: null, body: { token: tokenOf(fresh) } })).status,
        200,
      );
      assert.equal((await accept({ token: tokenOf(fresh), password: PASSWORD })).status, 200);
      const used = await t.request('POST', '/v2/invites:lookup', { auth: null, body: { token: tokenOf(fresh) } });
      assert.equal(used.status, 400);
      assert.equal(used.body.error, 'the invitation token is invalid, used or expired');
      for (const body of [{ token: 'not-a-token' }, { token: '' }, {}, { token: 5 }]) {
        assert.equal(
          (await t.request('POST', '/v2/invites:lookup', { auth: null, body })).status,
          400,
          JSON.stringify(body),
        );
      }
    });

    it('a pending user added to another project stays PENDING until it accepts', async () => {
      const [p1, p2] = [await t.createProject(), await t.createProject()];
      await invite('twice-pending@example.com', [p1]);
      const second = await t.request('POST', `/v2/projects/${p2}/members`, {
        body: { email: 'twice-pending@example.com', roles: ['roles/project.user'] },
      });
      assert.equal(second.body.status, 'PENDING');
    });

    it('a token is valid until just before 7 days have passed', async () => {
      const { memberId, inviteUrl } = await invite('almost-late@example.com', [await t.createProject()]);
      t.clock.advance(7 * DAY_MS - 1);
      assert.equal((await accept({ token: tokenOf(inviteUrl), password: PASSWORD })).status, 200);
      assert.equal((await t.deps.store.users.get(memberId))!.displayName, '');
    });

    it('an organization member can be invited too', async () => {
      const res = await t.request('POST', `/v2/${t.boot.organization}/members`, {
        body: { email: 'org-invitee@example.com', roles: ['roles/organization.admin'] },
      });
      assert.equal(res.body.status, 'PENDING');
      const link = await t.request('GET', `/v2/${res.body.name}:getInviteUrl`);
      assert.equal(link.status, 200);
      assert.equal((await accept({ token: tokenOf(link.body.inviteUrl), password: PASSWORD })).status, 200);
      assert.equal((await t.request('GET', `/v2/${res.body.name}`)).body.status, 'ACCEPTED');
    });
  });

  describe('errors', () => {
    it('the token is single-use', async () => {
      const { inviteUrl } = await invite('once@example.com', [await t.createProject()]);
      assert.equal((await accept({ token: tokenOf(inviteUrl), password: PASSWORD })).status, 200);
      const again = await accept({ token: tokenOf(inviteUrl), password: 'another password!' });
      assert.equal(again.status, 400);
    });

    it('an older unused link cannot reset the password of a user who already accepted', async () => {
      const { memberId, inviteUrl: first } = await invite('two-links@example.com', [await t.createProject()]);
      const second = (
        await t.request(
          'GET',
          `/v2/projects/${(await t.deps.store.memberships.listByMember(memberId))[0]!.scopeId}/members/${memberId}:getInviteUrl`,
        )
      ).body.inviteUrl;
      assert.equal((await accept({ token: tokenOf(second), password: PASSWORD })).status, 200);
      assert.equal((await accept({ token: tokenOf(first), password: 'attacker password' })).status, 400);
      assert.ok(await verifyPassword(PASSWORD, (await t.deps.store.users.get(memberId))!.passwordHash));
    });

    it('the token expires after 7 days', async () => {
      const { memberId, inviteUrl } = await invite('late@example.com', [await t.createProject()]);
      t.clock.advance(7 * DAY_MS);
      assert.equal((await accept({ token: tokenOf(inviteUrl), password: PASSWORD })).status, 400);
      assert.equal((await t.deps.store.users.get(memberId))!.active, false);
    });

    it('short passwords, bad tokens and malformed bodies are 400', async () => {
      const { memberId, inviteUrl } = await invite('careful@example.com', [await t.createProject()]);
      const token = tokenOf(inviteUrl);
      const cases: unknown[] = [
        { token, password: 'elevenchars' },
        { token: 'not-a-token', password: PASSWORD },
        { token: '', password: PASSWORD },
        { password: PASSWORD },
        { token },
        { token, password: 123456789012 },
        { token: [token], password: PASSWORD },
        { token, password: PASSWORD, displayName: 7 },
      ];
      for (const body of cases) assert.equal((await accept(body)).status, 400, JSON.stringify(body));
      assert.equal((await t.request('POST', '/v2/invites:accept', { auth: null, rawBody: '{' })).status, 400);
      assert.equal((await t.request('POST', '/v2/invites:accept', { auth: null })).status, 400);
      // None of the failures used the token up.
      assert.equal((await t.deps.store.users.get(memberId))!.active, false);
      assert.equal((await accept({ token, password: 'twelve chars' })).status, 200);
    });
  });

  describe('security', () => {
    it("only the token's SHA-256 is stored", async () => {
      const { memberId, inviteUrl } = await invite('hashed@example.com', [await t.createProject()]);
      // Invites are found only by the hash: the token itself finds nothing, its SHA-256 finds the invite.
      const token = tokenOf(inviteUrl);
      assert.equal(await t.deps.store.invites.get(token), null);
      const stored = await t.deps.store.invites.get(createHash('sha256').update(token).digest('hex'));
      assert.equal(stored?.userId, memberId);
    });

    it('each link is different', async () => {
      const p = await t.createProject();
      const { memberId, inviteUrl } = await invite('distinct@example.com', [p]);
      const other = await t.request('GET', `/v2/projects/${p}/members/${memberId}:getInviteUrl`);
      assert.notEqual(other.body.inviteUrl, inviteUrl);
    });
  });
});

describe('organization members', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  const members = () => `/v2/${t.boot.organization}/members`;

  describe('happy', () => {
    it('lists the bootstrap admins', async () => {
      const res = await t.request('GET', members());
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.members.map((m: { email: string; accountType: string; status: string }) => [
          m.email,
          m.accountType,
          m.status,
        ]),
        [
          [t.boot.user.email, 'USER', 'ACCEPTED'],
          [t.boot.serviceAccount.email, 'SERVICE_ACCOUNT', 'ACCEPTED'],
        ],
      );
      assert.ok(res.body.members.every((m: { name: string }) => m.name.startsWith(`${t.boot.organization}/members/`)));
      assert.equal(res.body.nextPageToken, '');
    });

    it('adds, gets, patches and removes an organization admin', async () => {
      const sa = await t.createServiceAccount();
      const res = await t.request('POST', members(), {
        body: { email: sa.email, roles: ['roles/organization.admin'] },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {
        name: `${t.boot.organization}/members/${sa.id}`,
        displayName: 'test',
        roles: ['roles/organization.admin'],
        status: 'ACCEPTED',
        email: sa.email,
        accountType: 'SERVICE_ACCOUNT',
        createTime: res.body.createTime,
      });
      // The new admin can create projects right away.
      assert.equal(
        (
          await t.request('POST', '/v2/projects', {
            auth: sa.auth,
            body: { organization: t.boot.organization, displayName: 'By new admin' },
          })
        ).status,
        200,
      );
      assert.equal((await t.request('GET', `/v2/${res.body.name}`)).status, 200);
      assert.equal(
        (
          await t.request('PATCH', `/v2/${res.body.name}?update_mask=roles`, {
            body: { roles: ['roles/organization.admin'] },
          })
        ).status,
        200,
      );
      assert.equal((await t.request('DELETE', `/v2/${res.body.name}`)).status, 200);
      assert.equal((await t.request('GET', `/v2/${res.body.name}`)).status, 404);
    });

    it('pages organization members', async () => {
      for (let i = 0; i < 3; i++) {
        t.clock.advance(1000);
        assert.equal(
          (
            await t.request('POST', members(), {
              body: { email: `org${i}@example.com`, roles: ['roles/organization.admin'] },
            })
          ).status,
          200,
        );
      }
      const first = await t.request('GET', `${members()}?page_size=3`);
      assert.equal(first.body.members.length, 3);
      assert.notEqual(first.body.nextPageToken, '');
      const second = await t.request('GET', `${members()}?pageSize=3&pageToken=${first.body.nextPageToken}`);
      assert.deepEqual(
        second.body.members.map((m: { email: string }) => m.email),
        ['org1@example.com', 'org2@example.com'],
      );
      assert.equal(second.body.nextPageToken, '');
    });
  });

  describe('errors', () => {
    it('roles must be exactly ["roles/organization.admin"]', async () => {
      for (const roles of [
        [],
        ['roles/project.admin'],
        ['roles/organization.admin', 'roles/project.user'],
        ['roles/organization.admin', 'roles/organization.admin'],
        'roles/organization.admin',
      ]) {
        assert.equal(
          (await t.request('POST', members(), { body: { email: 'r@example.com', roles } })).status,
          400,
          JSON.stringify(roles),
        );
      }
      const url = `${members()}/${t.boot.serviceAccount.name.split('/')[3]}`;
      assert.equal((await t.request('PATCH', url, { body: { roles: ['roles/project.admin'] } })).status, 400);
    });

    it('409 for an existing member; 404 for unknown members and organizations', async () => {
      assert.equal(
        (
          await t.request('POST', members(), {
            body: { email: t.boot.user.email, roles: ['roles/organization.admin'] },
          })
        ).status,
        409,
      );
      assert.equal((await t.request('GET', `${members()}/d0000000000000000000`)).status, 404);
      assert.equal((await t.request('DELETE', `${members()}/d0000000000000000000`)).status, 404);
      assert.equal((await t.request('GET', '/v2/organizations/d0000000000000000000/members')).status, 404);
    });

    it('refuses (400) removing the last ACCEPTED organization admin; pending admins do not count', async () => {
      const lt = await createTestContext();
      try {
        const url = `/v2/${lt.boot.organization}/members`;
        const list = (await lt.request('GET', url)).body.members as Array<{ name: string; accountType: string }>;
        const userMember = list.find((m) => m.accountType === 'USER')!;
        const saMember = list.find((m) => m.accountType === 'SERVICE_ACCOUNT')!;
        const pending = await lt.request('POST', url, {
          body: { email: 'pending-admin@example.com', roles: ['roles/organization.admin'] },
        });
        assert.equal(pending.body.status, 'PENDING');
        assert.equal((await lt.request('DELETE', `/v2/${userMember.name}`)).status, 200);
        const last = await lt.request('DELETE', `/v2/${saMember.name}`);
        assert.equal(last.status, 400);
        assert.match(last.body.error, /last organization administrator/);
        assert.equal((await lt.request('GET', `/v2/${saMember.name}`)).status, 200);
        // A pending admin can still be removed.
        assert.equal((await lt.request('DELETE', `/v2/${pending.body.name}`)).status, 200);
      } finally {
        await lt.close();
      }
    });
  });

  describe('security', () => {
    it('project admins read the organization but not its members (403); strangers get 404', async () => {
      const projectAdmin = await t.createServiceAccount({ roles: ['roles/project.admin'] });
      assert.equal((await t.request('GET', members(), { auth: projectAdmin.auth })).status, 403);
      assert.equal(
        (
          await t.request('POST', members(), {
            auth: projectAdmin.auth,
            body: { email: projectAdmin.email, roles: ['roles/organization.admin'] },
          })
        ).status,
        403,
      );
      const stranger = await t.createServiceAccount();
      assert.equal((await t.request('GET', members(), { auth: stranger.auth })).status, 404);
      assert.equal(
        (
          await t.request('POST', members(), {
            auth: stranger.auth,
            body: { email: stranger.email, roles: ['roles/organization.admin'] },
          })
        ).status,
        404,
      );
    });
  });
});

describe('wildcard project members', () => {
  let t: TestContext;
  let p1: string, p2: string, p3: string;
  let target: { id: string; email: string };
  before(async () => {
    t = await createTestContext();
    [p1, p2, p3] = [await t.createProject('P1'), await t.createProject('P2'), await t.createProject('P3')];
    const sa = await t.createServiceAccount();
    target = sa;
    for (const p of [p1, p2, p3]) {
      t.clock.advance(1000);
      await t.request('POST', `/v2/projects/${p}/members`, {
        body: { email: sa.email, roles: ['roles/project.user'] },
      });
    }
  });
  after(() => t.close());

  const query = (extra: string) => `/v2/projects/-/members?${extra}`;

  describe('happy', () => {
    it("lists one member's project memberships in the organization (memberId or member_id)", async () => {
      for (const q of [
        `memberId=${target.id}&organization=${t.boot.organization}`,
        `member_id=${target.id}&organization=${t.organizationId}`,
      ]) {
        const res = await t.request('GET', query(q));
        assert.equal(res.status, 200);
        assert.deepEqual(
          res.body.members.map((m: { name: string }) => m.name),
          [p1, p2, p3].map((p) => `projects/${p}/members/${target.id}`),
        );
        assert.equal(res.body.nextPageToken, '');
      }
    });

    it('pages', async () => {
      const first = await t.request(
        'GET',
        query(`memberId=${target.id}&organization=${t.boot.organization}&pageSize=2`),
      );
      assert.equal(first.body.members.length, 2);
      const second = await t.request(
        'GET',
        query(
          `memberId=${target.id}&organization=${t.boot.organization}&page_size=2&page_token=${first.body.nextPageToken}`,
        ),
      );
      assert.deepEqual(
        second.body.members.map((m: { name: string }) => m.name),
        [`projects/${p3}/members/${target.id}`],
      );
      assert.equal(second.body.nextPageToken, '');
    });

    it('batchCreate adds members to several projects; batchDelete removes them and skips unknown names', async () => {
      const res = await t.request('POST', '/v2/projects/-/members:batchCreate', {
        body: {
          members: [
            { project: `projects/${p1}`, email: 'batch@example.com', roles: ['roles/project.user'] },
            { project: `projects/${p2}`, email: 'Batch@Example.com', roles: ['roles/project.admin'] },
          ],
        },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.members.length, 2);
      assert.deepEqual(
        res.body.members.map((m: { status: string; roles: string[] }) => [m.status, m.roles]),
        [
          ['PENDING', ['roles/project.user']],
          ['PENDING', ['roles/project.admin']],
        ],
      );
      const names = res.body.members.map((m: { name: string }) => m.name);
      const del = await t.request('POST', '/v2/projects/-/members:batchDelete', {
        body: {
          names: [...names, `projects/${p1}/members/d0000000000000000000`, 'projects/d0000000000000000000/members/x'],
        },
      });
      assert.equal(del.status, 200);
      assert.deepEqual(del.body, {});
      for (const name of names) assert.equal((await t.request('GET', `/v2/${name}`)).status, 404);
    });
  });

  describe('errors', () => {
    it('memberId and organization are both required', async () => {
      assert.equal((await t.request('GET', query(`memberId=${target.id}`))).status, 400);
      assert.equal((await t.request('GET', query(`organization=${t.boot.organization}`))).status, 400);
      assert.equal((await t.request('GET', query('memberId=&organization='))).status, 400);
      assert.equal(
        (await t.request('GET', query(`memberId=${target.id}&organization=organizations/d0000000000000000000`))).status,
        404,
      );
    });

    it('batchCreate is all or nothing: the first failing item decides', async () => {
      const body = {
        members: [
          { project: `projects/${p1}`, email: 'first@example.com', roles: ['roles/project.user'] },
          { project: `projects/${p2}`, email: target.email, roles: ['roles/project.user'] },
          { project: `projects/${p3}`, email: 'third@example.com', roles: ['bad'] },
        ],
      };
      const res = await t.request('POST', '/v2/projects/-/members:batchCreate', { body });
      assert.equal(res.status, 409);
      assert.equal(await t.deps.store.users.getByEmail('first@example.com'), null);
      const bad = await t.request('POST', '/v2/projects/-/members:batchCreate', {
        body: { members: [body.members[0], body.members[2], body.members[1]] },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.body.error, /members\[1\]\.roles/);
      const missing = await t.request('POST', '/v2/projects/-/members:batchCreate', {
        body: { members: [body.members[0], { ...body.members[0], project: 'projects/d0000000000000000000' }] },
      });
      assert.equal(missing.status, 404);
      assert.equal(await t.deps.store.users.getByEmail('first@example.com'), null);
    });

    it('batch bodies are validated', async () => {
      for (const body of [
        {},
        { members: 'x' },
        { members: [{ project: `projects/${p1}`, email: 'a@b.c' }] },
        { members: [{ project: '-', email: 'a@b.c', roles: ['roles/project.user'] }] },
      ]) {
        assert.equal(
          (await t.request('POST', '/v2/projects/-/members:batchCreate', { body })).status,
          400,
          JSON.stringify(body),
        );
      }
      for (const body of [
        {},
        { names: 'x' },
        { names: ['projects/x'] },
        { names: ['projects/-/members/x'] },
        { names: [5] },
      ]) {
        assert.equal(
          (await t.request('POST', '/v2/projects/-/members:batchDelete', { body })).status,
          400,
          JSON.stringify(body),
        );
      }
      assert.equal(
        (await t.request('POST', '/v2/projects/-/members:batchDelete', { rawBody: '{"names":[' })).status,
        400,
      );
    });
  });

  describe('security', () => {
    it('results are limited to projects where the caller holds membership.read', async () => {
      const caller = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: p2 });
      const res = await t.request('GET', query(`memberId=${target.id}&organization=${t.boot.organization}`), {
        auth: caller.auth,
      });
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.members.map((m: { name: string }) => m.name),
        [`projects/${p2}/members/${target.id}`],
      );
      const stranger = await t.createServiceAccount();
      assert.equal(
        (
          await t.request('GET', query(`memberId=${target.id}&organization=${t.boot.organization}`), {
            auth: stranger.auth,
          })
        ).status,
        404,
      );
    });

    it('batches need membership.create / membership.delete on every project', async () => {
      const caller = await t.createServiceAccount({ roles: ['roles/project.admin'], memberOf: p1 });
      await t.deps.store.memberships.create({
        scopeType: 'project',
        scopeId: p2,
        memberId: caller.id,
        accountType: 'SERVICE_ACCOUNT',
        roles: ['roles/project.user'],
        status: 'ACCEPTED',
        createTime: nowMicros(t.deps),
      });
      const create = await t.request('POST', '/v2/projects/-/members:batchCreate', {
        auth: caller.auth,
        body: {
          members: [
            { project: `projects/${p1}`, email: 'sec1@example.com', roles: ['roles/project.user'] },
            { project: `projects/${p2}`, email: 'sec2@example.com', roles: ['roles/project.user'] },
          ],
        },
      });
      assert.equal(create.status, 403);
      assert.equal(await t.deps.store.users.getByEmail('sec1@example.com'), null);
      const hidden = await t.request('POST', '/v2/projects/-/members:batchCreate', {
        auth: caller.auth,
        body: { members: [{ project: `projects/${p3}`, email: 'sec3@example.com', roles: ['roles/project.user'] }] },
      });
      assert.equal(hidden.status, 404);
      const del = await t.request('POST', '/v2/projects/-/members:batchDelete', {
        auth: caller.auth,
        body: { names: [`projects/${p1}/members/${target.id}`, `projects/${p2}/members/${target.id}`] },
      });
      assert.equal(del.status, 403);
      assert.equal((await t.request('GET', `/v2/projects/${p1}/members/${target.id}`)).status, 200, 'rolled back');
      // Names in projects the caller cannot see are skipped like unknown ones.
      const skipped = await t.request('POST', '/v2/projects/-/members:batchDelete', {
        auth: caller.auth,
        body: { names: [`projects/${p3}/members/${target.id}`] },
      });
      assert.equal(skipped.status, 200);
      assert.equal((await t.request('GET', `/v2/projects/${p3}/members/${target.id}`)).status, 200);
    });
  });
});

// Two organizations on one installation (security review, finding 5): the bootstrap organization (A, "the owner")
// and a second one (B) whose admin adds A's accounts and e-mails to its own project. A membership across
// organizations waits for the member's consent, the owner manages its accounts whatever B did, and no answer names
// a project the caller cannot see or tells B whether an e-mail has an account.
describe('memberships across organizations', () => {
  let t: TestContext;
  let b: { organizationId: string; projectId: string; admin: Account };
  before(async () => {
    t = await createTestContext();
    b = await secondOrganization(t);
  });
  after(() => t.close());

  /** A second organization, with a project and a service account of its own that administers it. */
  async function secondOrganization(ctx: TestContext) {
    const now = nowMicros(ctx.deps);
    const organizationId = ctx.deps.ids.next();
    await ctx.deps.store.organizations.create({
      id: organizationId,
      displayName: 'Other organization',
      createTime: now,
    });
    const projectId = ctx.deps.ids.next();
    await ctx.deps.store.projects.create({
      id: projectId,
      organizationId,
      displayName: 'Their project',
      location: { latitude: null, longitude: null, timeLocation: '' },
      labels: {},
      createTime: now,
      updateTime: now,
    });
    const admin = await ctx.createServiceAccount({ projectId });
    await ctx.deps.store.memberships.create({
      scopeType: 'organization',
      scopeId: organizationId,
      memberId: admin.id,
      accountType: 'SERVICE_ACCOUNT',
      roles: ['roles/organization.admin'],
      status: 'ACCEPTED',
      createTime: now,
    });
    return { organizationId, projectId, admin };
  }

  /** B's admin adds the email to B's project (or to B itself). */
  const addToB = (email: string, roles = ['roles/project.admin'], scope = `projects/${b.projectId}`) =>
    t.request('POST', `/v2/${scope}/members`, { auth: b.admin.auth, body: { email, roles } });
  const saName = (sa: Account, projectId = t.projectId) => `projects/${projectId}/serviceaccounts/${sa.id}`;
  /** Nothing B owns is named: not its project, not the organization. */
  const namesNothingOfB = (res: { text: string }, where: string) => {
    assert.ok(!res.text.includes(b.projectId) && !res.text.includes(b.organizationId), `${where} names B: ${res.text}`);
  };

  describe('service accounts', () => {
    it("another organization's add is PENDING and grants nothing until an admin of the owner accepts it", async () => {
      const sa = await t.createServiceAccount();
      const added = await addToB(sa.email.toUpperCase());
      assert.equal(added.status, 200, added.text);
      assert.deepEqual(added.body, {
        name: `projects/${b.projectId}/members/${sa.id}`,
        displayName: '',
        roles: ['roles/project.admin'],
        status: 'PENDING',
        email: sa.email,
        accountType: 'SERVICE_ACCOUNT',
        createTime: added.body.createTime,
      });
      // Pending: the account cannot see B's project, and it has no invitation link.
      assert.equal((await t.request('GET', `/v2/projects/${b.projectId}`, { auth: sa.auth })).status, 404);
      assert.deepEqual((await t.request('GET', '/v2/projects', { auth: sa.auth })).body.projects, []);
      assert.equal((await t.request('GET', `/v2/${added.body.name}:getInviteUrl`, { auth: b.admin.auth })).status, 400);

      // The owner sees the offer under the account, and accepts it.
      const offers = await t.request('GET', `/v2/${saName(sa)}/memberships`);
      assert.equal(offers.status, 200, offers.text);
      assert.deepEqual(offers.body, { members: [added.body], nextPageToken: '' });
      const accepted = await t.request('POST', `/v2/${saName(sa)}/memberships/projects/${b.projectId}:accept`);
      assert.equal(accepted.status, 200, accepted.text);
      assert.deepEqual(accepted.body, { ...added.body, displayName: 'test', status: 'ACCEPTED' });
      assert.equal((await t.request('GET', `/v2/projects/${b.projectId}`, { auth: sa.auth })).status, 200);
      assert.equal((await t.request('GET', `/v2/${added.body.name}`, { auth: b.admin.auth })).body.status, 'ACCEPTED');
      // Accepting again answers the membership as it is.
      assert.equal(
        (await t.request('POST', `/v2/${saName(sa)}/memberships/projects/${b.projectId}:accept`)).body.status,
        'ACCEPTED',
      );
    });

    it('only admins of the owning project accept; the other organization cannot accept for the owner', async () => {
      const sa = await t.createServiceAccount();
      await addToB(sa.email);
      const url = `/v2/${saName(sa)}/memberships/projects/${b.projectId}:accept`;
      const user = await t.createServiceAccount({ roles: ['roles/project.user'] });
      assert.equal((await t.request('POST', url, { auth: user.auth })).status, 403);
      assert.equal((await t.request('GET', `/v2/${saName(sa)}/memberships`, { auth: user.auth })).status, 403);
      const them = await t.request('POST', url, { auth: b.admin.auth });
      assert.equal(them.status, 404);
      assert.equal(
        (await t.request('GET', `/v2/projects/${b.projectId}/members/${sa.id}`, { auth: b.admin.auth })).body.status,
        'PENDING',
      );
      // A project admin of the owning project is an admin of the account: it may.
      const projectAdmin = await t.createServiceAccount({ roles: ['roles/project.admin'] });
      assert.equal((await t.request('POST', url, { auth: projectAdmin.auth })).status, 200);
    });

    it('the owner renames, keys and deletes its account, and deletes its project, whatever another organization made it', async () => {
      const p = await t.createProject('Owned');
      const projectAdmin = await t.createServiceAccount({ projectId: p, roles: ['roles/project.admin'], memberOf: p });
      const sa = await t.createServiceAccount({ projectId: p });
      // B makes the account admin of its project (pending) and of B itself (accepted by the owner).
      await addToB(sa.email);
      assert.equal(
        (await addToB(sa.email, ['roles/organization.admin'], `organizations/${b.organizationId}`)).status,
        200,
      );
      await t.request('POST', `/v2/${saName(sa, p)}/memberships/organizations/${b.organizationId}:accept`);
      assert.equal((await t.deps.store.memberships.get('organization', b.organizationId, sa.id))?.status, 'ACCEPTED');
      for (const caller of [projectAdmin.auth, t.admin]) {
        const renamed = await t.request('PATCH', `/v2/${saName(sa, p)}`, {
          auth: caller,
          body: { displayName: 'renamed' },
        });
        assert.equal(renamed.status, 200, renamed.text);
        const key = await t.request('POST', `/v2/${saName(sa, p)}/keys`, { auth: caller });
        assert.equal(key.status, 200, key.text);
        assert.equal((await t.request('DELETE', `/v2/${key.body.key.name}`, { auth: caller })).status, 200);
      }
      const deleted = await t.request('DELETE', `/v2/${saName(sa, p)}`, { auth: projectAdmin.auth });
      assert.equal(deleted.status, 200, deleted.text);
      // Its memberships in B went with it.
      assert.deepEqual(await t.deps.store.memberships.listByMember(sa.id), []);
      assert.equal(
        (await t.request('GET', `/v2/projects/${b.projectId}/members/${sa.id}`, { auth: b.admin.auth })).status,
        404,
      );

      // The project: its account is the only admin of a third organization; the owner still deletes it.
      const doomed = await t.createProject('Doomed');
      const owned = await t.createServiceAccount({ projectId: doomed });
      const c = await secondOrganization(t);
      const offered = await t.request('POST', `/v2/organizations/${c.organizationId}/members`, {
        auth: c.admin.auth,
        body: { email: owned.email, roles: ['roles/organization.admin'] },
      });
      assert.equal(offered.status, 200, offered.text);
      assert.equal(
        (await t.request('POST', `/v2/${saName(owned, doomed)}/memberships/organizations/${c.organizationId}:accept`))
          .status,
        200,
      );
      assert.equal(
        (
          await t.request('DELETE', `/v2/organizations/${c.organizationId}/members/${c.admin.id}`, {
            auth: c.admin.auth,
          })
        ).status,
        200,
      );
      await addToB(owned.email);
      const gone = await t.request('DELETE', `/v2/projects/${doomed}`);
      assert.equal(gone.status, 200, gone.text);
      assert.equal(await t.deps.store.serviceAccounts.get(owned.id), null);
      assert.deepEqual(
        await t.deps.store.memberships.listByMember(owned.id),
        [],
        'its memberships in B and C went with it',
      );
    });

    it("the owner removes (declines or leaves) another organization's membership of its account", async () => {
      const sa = await t.createServiceAccount();
      await addToB(sa.email);
      t.clock.advance(1000);
      await addToB(sa.email, ['roles/organization.admin'], `organizations/${b.organizationId}`);
      await t.request('POST', `/v2/${saName(sa)}/memberships/organizations/${b.organizationId}:accept`);
      const first = await t.request('GET', `/v2/${saName(sa)}/memberships?pageSize=1`);
      const second = await t.request(
        'GET',
        `/v2/${saName(sa)}/memberships?pageSize=1&pageToken=${first.body.nextPageToken}`,
      );
      assert.deepEqual(
        [...first.body.members, ...second.body.members].map((m: { name: string; status: string }) => [
          m.name,
          m.status,
        ]),
        [
          [`projects/${b.projectId}/members/${sa.id}`, 'PENDING'],
          [`organizations/${b.organizationId}/members/${sa.id}`, 'ACCEPTED'],
        ],
      );
      assert.equal(second.body.nextPageToken, '');
      // B cannot remove through the owner's account, and the owner cannot reach memberships of its own organization here.
      assert.equal(
        (await t.request('DELETE', `/v2/${saName(sa)}/memberships/projects/${b.projectId}`, { auth: b.admin.auth }))
          .status,
        404,
      );
      await joinProject(t, sa.id, t.projectId, 'SERVICE_ACCOUNT');
      assert.equal((await t.request('DELETE', `/v2/${saName(sa)}/memberships/projects/${t.projectId}`)).status, 404);
      assert.equal((await t.request('DELETE', `/v2/${saName(sa)}/memberships/devices/${b.projectId}`)).status, 404);
      for (const parent of [`projects/${b.projectId}`, `organizations/${b.organizationId}`]) {
        const removed = await t.request('DELETE', `/v2/${saName(sa)}/memberships/${parent}`);
        assert.equal(removed.status, 200, removed.text);
        assert.deepEqual(removed.body, {});
        assert.equal((await t.request('GET', `/v2/${parent}/members/${sa.id}`, { auth: b.admin.auth })).status, 404);
        assert.equal((await t.request('DELETE', `/v2/${saName(sa)}/memberships/${parent}`)).status, 404, 'gone');
      }
      assert.deepEqual((await t.request('GET', `/v2/${saName(sa)}/memberships`)).body.members, []);
      assert.ok(await t.deps.store.memberships.get('project', t.projectId, sa.id), 'its own organization stays');
    });

    it('no answer names a project the caller cannot see', async () => {
      // Another organization's roles: the owner acts on its account; no answer names B.
      const sa = await t.createServiceAccount();
      await addToB(sa.email);
      await t.request('POST', `/v2/${saName(sa)}/memberships/projects/${b.projectId}:accept`); // accepted: its roles there are real
      for (const [method, url] of [
        ['POST', `/v2/${saName(sa)}/keys`],
        ['PATCH', `/v2/${saName(sa)}`],
      ] as const) {
        const res = await t.request(method, url, { body: method === 'PATCH' ? { displayName: 'x' } : undefined });
        assert.equal(res.status, 200, res.text);
        namesNothingOfB(res, `${method} ${url}`);
      }
      // Its own organization's project the caller holds nothing in: still refused, but not named.
      const hidden = await t.createProject('Hidden');
      const projectAdmin = await t.createServiceAccount({ roles: ['roles/project.admin'] });
      const target = await t.createServiceAccount();
      await joinProject(t, target.id, hidden, 'SERVICE_ACCOUNT');
      const refused = await t.request('POST', `/v2/${saName(target)}/keys`, { auth: projectAdmin.auth });
      assert.equal(refused.status, 403);
      assert.ok(!refused.text.includes(hidden), refused.text);
      assert.match(refused.body.error, /on a project you cannot see/);
      const visible = await t.createProject('Visible');
      await joinProject(t, projectAdmin.id, visible, 'SERVICE_ACCOUNT');
      const target2 = await t.createServiceAccount();
      await t.deps.store.memberships.create({
        scopeType: 'project',
        scopeId: visible,
        memberId: target2.id,
        accountType: 'SERVICE_ACCOUNT',
        roles: ['roles/project.admin'],
        status: 'ACCEPTED',
        createTime: 1,
      });
      const named = await t.request('POST', `/v2/${saName(target2)}/keys`, { auth: projectAdmin.auth });
      assert.equal(named.status, 403);
      assert.match(named.body.error, new RegExp(`on projects/${visible}`), 'a project the caller sees is named');
    });
  });

  describe('users and e-mails', () => {
    async function activeUser(email: string, displayName: string, password: string) {
      const id = t.deps.ids.next();
      const now = nowMicros(t.deps);
      await t.deps.store.users.create({
        id,
        email,
        displayName,
        passwordHash: await hashPassword(password, t.deps.random),
        active: true,
        createTime: now,
        updateTime: now,
      });
      await joinProject(t, id, t.projectId);
      return id;
    }
    const accept = (body: unknown) => t.request('POST', '/v2/invites:accept', { auth: null, body });
    const linkOf = async (memberName: string, auth: Auth = t.admin) => {
      const res = await t.request('GET', `/v2/${memberName}:getInviteUrl`, { auth });
      assert.equal(res.status, 200, res.text);
      return tokenOf(res.body.inviteUrl);
    };
    const withoutId = (m: { name: string; email: string; createTime: string }) => ({
      ...m,
      name: m.name.slice(0, m.name.lastIndexOf('/')),
      email: undefined,
    });

    it('adding an e-mail answers the same whether or not it has an account', async () => {
      await activeUser('alice@example.com', 'Alice', PASSWORD);
      const existing = await addToB('Alice@Example.com', ['roles/project.user']);
      const unknown = await addToB('nobody-yet@example.com', ['roles/project.user']);
      assert.equal(existing.status, 200, existing.text);
      assert.equal(unknown.status, 200, unknown.text);
      assert.deepEqual(withoutId(existing.body), withoutId(unknown.body));
      assert.deepEqual(withoutId(existing.body), {
        name: `projects/${b.projectId}/members`,
        displayName: '',
        roles: ['roles/project.user'],
        status: 'PENDING',
        email: undefined,
        accountType: 'USER',
        createTime: existing.body.createTime,
      });
      assert.equal(existing.body.email, 'alice@example.com');
      // Reading it back tells no more, and neither does its invitation link.
      for (const added of [existing, unknown]) {
        const got = await t.request('GET', `/v2/${added.body.name}`, { auth: b.admin.auth });
        assert.deepEqual(got.body, added.body);
      }
      const looked = await Promise.all(
        [existing, unknown].map(async (added) => {
          const res = await t.request('POST', '/v2/invites:lookup', {
            auth: null,
            body: { token: await linkOf(added.body.name, b.admin.auth) },
          });
          assert.equal(res.status, 200, res.text);
          return { ...res.body, email: undefined };
        }),
      );
      assert.deepEqual(looked[0], looked[1]);
      assert.deepEqual(looked[0].memberships, [
        { parent: `projects/${b.projectId}`, parentDisplayName: 'Their project', roles: ['roles/project.user'] },
      ]);
      assert.equal(looked[0].displayName, '');
      // In its own organization an account's member is added as before: at once, with its name.
      const p = await t.createProject();
      const same = await t.request('POST', `/v2/projects/${p}/members`, {
        body: { email: 'alice@example.com', roles: ['roles/project.user'] },
      });
      assert.equal(same.body.status, 'ACCEPTED');
      assert.equal(same.body.displayName, 'Alice');
    });

    it('a user with an account accepts with its own password; the link alone does not, and never changes it', async () => {
      const id = await activeUser('bob@example.com', 'Bob', PASSWORD);
      const added = await addToB('bob@example.com', ['roles/project.developer']);
      assert.equal(added.body.status, 'PENDING');
      assert.equal(
        (await t.request('GET', `/v2/projects/${b.projectId}`, { auth: userAuth(t, id) })).status,
        404,
        'grants nothing yet',
      );
      const token = await linkOf(added.body.name, b.admin.auth);
      const wrong = await accept({ token, password: 'the inviter guesses this', displayName: 'Mallory' });
      assert.equal(wrong.status, 400);
      assert.match(wrong.body.error, /password/);
      assert.equal((await t.request('GET', `/v2/${added.body.name}`, { auth: b.admin.auth })).body.status, 'PENDING');
      const ok = await accept({ token, password: PASSWORD, displayName: 'Mallory' });
      assert.equal(ok.status, 200, ok.text);
      assert.equal((await t.request('GET', `/v2/${added.body.name}`, { auth: b.admin.auth })).body.status, 'ACCEPTED');
      assert.equal((await t.request('GET', `/v2/projects/${b.projectId}`, { auth: userAuth(t, id) })).status, 200);
      const user = (await t.deps.store.users.get(id))!;
      assert.ok(await verifyPassword(PASSWORD, user.passwordHash), 'the password is unchanged');
      assert.equal(user.displayName, 'Bob', 'and so is the name');
      assert.equal((await accept({ token, password: PASSWORD })).status, 400, 'used');
    });

    it("another organization adding the same e-mail neither blocks nor joins this organization's invitation", async () => {
      const p = await t.createProject('Ours');
      const ours = await t.request('POST', `/v2/projects/${p}/members`, {
        body: { email: 'carol@example.com', roles: ['roles/project.developer'] },
      });
      assert.equal(ours.body.status, 'PENDING');
      const token = await linkOf(ours.body.name);
      const theirs = await addToB(
        'carol@example.com',
        ['roles/organization.admin'],
        `organizations/${b.organizationId}`,
      );
      assert.equal(theirs.status, 200, theirs.text);
      // Our link still works, and shows (and accepts) only our membership; a new one may still be made.
      const fresh = await t.request('GET', `/v2/${ours.body.name}:getInviteUrl`);
      assert.equal(fresh.status, 200, fresh.text);
      namesNothingOfB(fresh, 'getInviteUrl');
      const looked = await t.request('POST', '/v2/invites:lookup', { auth: null, body: { token } });
      assert.equal(looked.status, 200, looked.text);
      namesNothingOfB(looked, 'lookup');
      assert.deepEqual(looked.body.memberships, [
        { parent: `projects/${p}`, parentDisplayName: 'Ours', roles: ['roles/project.developer'] },
      ]);
      assert.equal((await accept({ token, password: PASSWORD, displayName: 'Carol' })).status, 200);
      const memberId = ours.body.name.split('/')[3];
      assert.equal((await t.request('GET', `/v2/${ours.body.name}`)).body.status, 'ACCEPTED');
      assert.equal(
        (await t.deps.store.memberships.get('organization', b.organizationId, memberId))?.status,
        'PENDING',
        "our link does not accept B's offer",
      );
      // B's own link, with Carol's password, does.
      const theirsToken = await linkOf(theirs.body.name, b.admin.auth);
      assert.equal((await accept({ token: theirsToken, password: PASSWORD })).status, 200);
      assert.equal(
        (await t.deps.store.memberships.get('organization', b.organizationId, memberId))?.status,
        'ACCEPTED',
      );
    });
  });
});
