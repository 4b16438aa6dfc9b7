// No escalation through an account (contract §2.6, docs/authentication.md): every way one principal can act as
// another, or take it away — a key for a service account, changing or deleting it or one of its keys, deleting the
// project that owns it, an invitation link that sets a user's password — needs every role that other principal
// holds anywhere. The audit as a matrix: caller × the roles of the account acted on × each such operation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestContext, type Account, type TestContext } from '../helpers/context.ts';

type Caller = 'project admin' | 'project admin, user elsewhere' | 'organization admin';
type Target =
  | 'no roles'
  | 'developer here'
  | 'admin here'
  | 'user elsewhere'
  | 'admin elsewhere'
  | 'organization admin';

const TARGETS: Target[] = [
  'no roles',
  'developer here',
  'admin here',
  'user elsewhere',
  'admin elsewhere',
  'organization admin',
];

/** Who may act on whom: the caller must hold every role of the target. */
const ALLOWED: Record<Caller, ReadonlySet<Target>> = {
  'project admin': new Set(['no roles', 'developer here', 'admin here']),
  'project admin, user elsewhere': new Set(['no roles', 'developer here', 'admin here', 'user elsewhere']),
  'organization admin': new Set(TARGETS),
};

interface Operation {
  name: string;
  /** The request acting on the service account `sa` (a name, projects/P/serviceaccounts/S). */
  call: (t: TestContext, sa: string) => Promise<{ method: string; url: string; body?: unknown }>;
}

const OPERATIONS: Operation[] = [
  { name: 'create a key', call: async (_t, sa) => ({ method: 'POST', url: `/v2/${sa}/keys` }) },
  {
    name: 'PATCH the account',
    call: async (_t, sa) => ({
      method: 'PATCH',
      url: `/v2/${sa}`,
      body: { displayName: 'taken over', enableBasicAuth: true },
    }),
  },
  { name: 'delete the account', call: async (_t, sa) => ({ method: 'DELETE', url: `/v2/${sa}` }) },
  {
    name: 'delete one of its keys',
    call: async (t, sa) => {
      const created = await t.request('POST', `/v2/${sa}/keys`); // as the organization admin (context default)
      assert.equal(created.status, 200, created.text);
      return { method: 'DELETE', url: `/v2/${created.body.key.name}` };
    },
  },
];

describe('no escalation through a service account', () => {
  let t: TestContext;
  let elsewhere: string;
  const callers = new Map<Caller, Account>();

  /** A fresh service account owned by the test project, holding the roles of `target`. */
  async function account(target: Target): Promise<string> {
    const sa = await t.createServiceAccount();
    const grant = async (scope: 'project' | 'organization', scopeId: string, roles: string[]) =>
      t.deps.store.memberships.create({
        scopeType: scope,
        scopeId,
        memberId: sa.id,
        accountType: 'SERVICE_ACCOUNT',
        roles,
        status: 'ACCEPTED',
        createTime: 1,
      });
    if (target === 'developer here') await grant('project', t.projectId, ['roles/project.developer']);
    if (target === 'admin here') await grant('project', t.projectId, ['roles/project.admin']);
    if (target === 'user elsewhere') await grant('project', elsewhere, ['roles/project.user']);
    if (target === 'admin elsewhere') await grant('project', elsewhere, ['roles/project.admin']);
    if (target === 'organization admin') await grant('organization', t.organizationId, ['roles/organization.admin']);
    return `projects/${t.projectId}/serviceaccounts/${sa.id}`;
  }

  before(async () => {
    t = await createTestContext();
    elsewhere = await t.createProject('elsewhere');
    callers.set('project admin', await t.createServiceAccount({ roles: ['roles/project.admin'] }));
    const both = await t.createServiceAccount({ roles: ['roles/project.admin'] });
    await t.deps.store.memberships.create({
      scopeType: 'project',
      scopeId: elsewhere,
      memberId: both.id,
      accountType: 'SERVICE_ACCOUNT',
      roles: ['roles/project.user'],
      status: 'ACCEPTED',
      createTime: 1,
    });
    callers.set('project admin, user elsewhere', both);
    callers.set('organization admin', await t.createServiceAccount({ roles: ['roles/organization.admin'] }));
  });
  after(() => t.close());

  for (const op of OPERATIONS) {
    it(op.name, async () => {
      for (const [caller, auth] of callers) {
        for (const target of TARGETS) {
          const sa = await account(target);
          const before = await t.request('GET', `/v2/${sa}`);
          const keysBefore = await t.request('GET', `/v2/${sa}/keys`);
          const call = await op.call(t, sa);
          const res = await t.request(call.method, call.url, { auth: auth.auth, body: call.body });
          const where = `${op.name} by ${caller} on an account with ${target}: ${res.status} ${res.text.slice(0, 200)}`;
          if (ALLOWED[caller].has(target)) {
            assert.equal(res.status, 200, where);
          } else {
            assert.equal(res.status, 403, where);
            assert.match(res.body.error, /requires holding every role/, where);
            // Nothing changed: the account, its name and its keys are as they were.
            assert.deepEqual((await t.request('GET', `/v2/${sa}`)).body, before.body, where);
            const keysAfter = await t.request('GET', `/v2/${sa}/keys`);
            assert.equal(
              keysAfter.body.keys.length,
              keysBefore.body.keys.length + (op.name === 'delete one of its keys' ? 1 : 0),
              where,
            );
          }
        }
      }
    });
  }

  it('reads stay with project admins: listing and getting accounts and keys needs no more than serviceaccount.read', async () => {
    const sa = await account('organization admin');
    const admin = callers.get('project admin')!;
    assert.equal((await t.request('GET', `/v2/${sa}`, { auth: admin.auth })).status, 200);
    assert.equal((await t.request('GET', `/v2/${sa}/keys`, { auth: admin.auth })).status, 200);
  });

  it('the reported attack fails: a project admin of the bootstrap project cannot make itself organization admin', async () => {
    const admin = callers.get('project admin')!;
    const bootstrapSa = t.boot.serviceAccount.name;
    const key = await t.request('POST', `/v2/${bootstrapSa}/keys`, { auth: admin.auth });
    assert.equal(key.status, 403);
    assert.match(key.body.error, /roles\/organization\.admin/);
    assert.equal(
      (await t.request('PATCH', `/v2/${bootstrapSa}`, { auth: admin.auth, body: { displayName: 'mine' } })).status,
      403,
    );
    assert.equal((await t.request('DELETE', `/v2/${bootstrapSa}`, { auth: admin.auth })).status, 403);
    // And it still cannot grant itself the role directly.
    const self = await t.request('POST', `/v2/organizations/${t.organizationId}/members`, {
      auth: admin.auth,
      body: { email: admin.email, roles: ['roles/organization.admin'] },
    });
    assert.equal(self.status, 403);
  });

  it('deleting a project needs every role of each service account it owns', async () => {
    const doomed = await t.createProject('doomed');
    const admin = await t.createServiceAccount({ projectId: doomed, roles: ['roles/project.admin'] });
    const owned = await t.createServiceAccount({ projectId: doomed });
    await t.deps.store.memberships.create({
      scopeType: 'project',
      scopeId: elsewhere,
      memberId: owned.id,
      accountType: 'SERVICE_ACCOUNT',
      roles: ['roles/project.admin'],
      status: 'ACCEPTED',
      createTime: 1,
    });
    const refused = await t.request('DELETE', `/v2/projects/${doomed}`, { auth: admin.auth });
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.error, /deleting this project/);
    assert.equal((await t.request('GET', `/v2/projects/${doomed}`)).status, 200);
    assert.ok(await t.deps.store.serviceAccounts.get(owned.id));
    // The organization admin holds everything in the organization.
    assert.equal((await t.request('DELETE', `/v2/projects/${doomed}`)).status, 200);
  });
});

describe('no escalation through an invitation link', () => {
  let t: TestContext;
  let projectAdmin: Account;
  before(async () => {
    t = await createTestContext();
    projectAdmin = await t.createServiceAccount({ roles: ['roles/project.admin'] });
  });
  after(() => t.close());

  const addMember = (auth: Account | null, scope: string, email: string, role: string) =>
    t.request('POST', `/v2/${scope}/members`, { auth: auth?.auth, body: { email, roles: [role] } });

  it('a project admin cannot hand out the link of a user invited as organization admin', async () => {
    const org = `organizations/${t.organizationId}`;
    const project = `projects/${t.projectId}`;
    assert.equal((await addMember(null, org, 'boss@example.com', 'roles/organization.admin')).status, 200);
    const member = await addMember(projectAdmin, project, 'boss@example.com', 'roles/project.user');
    assert.equal(member.status, 200, member.text);
    const link = await t.request('GET', `/v2/${member.body.name}:getInviteUrl`, { auth: projectAdmin.auth });
    assert.equal(link.status, 403, link.text);
    assert.match(link.body.error, /roles\/organization\.admin/);
    // The organization admin may.
    assert.equal((await t.request('GET', `/v2/${member.body.name}:getInviteUrl`)).status, 200);
  });

  it('a link handed out earlier stops working when its user gains a membership or a role', async () => {
    const project = `projects/${t.projectId}`;
    const member = await addMember(projectAdmin, project, 'later@example.com', 'roles/project.user');
    const link = await t.request('GET', `/v2/${member.body.name}:getInviteUrl`, { auth: projectAdmin.auth });
    assert.equal(link.status, 200, link.text);
    const token = link.body.inviteUrl.split('/invite/')[1];
    // Now an organization admin makes the pending user an organization admin.
    assert.equal(
      (await addMember(null, `organizations/${t.organizationId}`, 'later@example.com', 'roles/organization.admin'))
        .status,
      200,
    );
    const accepted = await t.request('POST', '/v2/invites:accept', {
      auth: null,
      body: { token, password: 'a long enough password' },
    });
    assert.equal(accepted.status, 400, accepted.text);
    const user = await t.deps.store.users.getByEmail('later@example.com');
    assert.equal(user!.active, false);
    const memberships = await t.deps.store.memberships.listByMember(user!.id);
    assert.ok(memberships.every((m) => m.status === 'PENDING'));

    // A raised role revokes too: a fresh link, then a role change by the project admin.
    const second = await addMember(projectAdmin, project, 'raised@example.com', 'roles/project.user');
    const secondLink = (await t.request('GET', `/v2/${second.body.name}:getInviteUrl`, { auth: projectAdmin.auth }))
      .body.inviteUrl;
    const patched = await t.request('PATCH', `/v2/${second.body.name}`, {
      auth: projectAdmin.auth,
      body: { roles: ['roles/project.admin'] },
    });
    assert.equal(patched.status, 200);
    const stale = await t.request('POST', '/v2/invites:accept', {
      auth: null,
      body: { token: secondLink.split('/invite/')[1], password: 'a long enough password' },
    });
    assert.equal(stale.status, 400);
    // A link made after the change works.
    const fresh = (await t.request('GET', `/v2/${second.body.name}:getInviteUrl`, { auth: projectAdmin.auth })).body
      .inviteUrl;
    assert.equal(
      (
        await t.request('POST', '/v2/invites:accept', {
          auth: null,
          body: { token: fresh.split('/invite/')[1], password: 'a long enough password' },
        })
      ).status,
      200,
    );
  });
});
