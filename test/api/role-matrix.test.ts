// Every endpoint × every role (and no role), against the permission table of contract §2.7:
// allowed → not 401/403/404; holding something on the project but not the permission → 403; nothing → 404.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findRole } from '../../src/domain/roles.ts';
import { createTestContext, type Account, type TestContext } from '../helpers/context.ts';

type RoleCase =
  | 'none'
  | 'roles/project.user'
  | 'roles/project.developer'
  | 'roles/project.admin'
  | 'roles/organization.admin';
const ROLE_CASES: RoleCase[] = [
  'none',
  'roles/project.user',
  'roles/project.developer',
  'roles/project.admin',
  'roles/organization.admin',
];

interface Call {
  method: string;
  url: string;
  body?: unknown;
}
interface Endpoint {
  name: string;
  /** Project permission needed, or `org:<permission>` on the organization. */
  permission: string;
  /** Builds a fresh call (fresh resources for destructive calls) for the given caller. */
  call: (t: TestContext, f: Fixtures, caller: Account) => Promise<Call>;
}

interface Fixtures {
  p: string;
  o: string;
  device: string;
  sa: string;
  key: string;
  dc: string;
  /** A delivery of `dc` (the queued row of an event published at the start). */
  delivery: string;
  member: string;
}

function holds(role: RoleCase, permission: string): boolean {
  if (role === 'none') return false;
  if (permission.startsWith('org:')) {
    const perm = permission.slice(4);
    if (role === 'roles/organization.admin') return (findRole(role)!.permissions as readonly string[]).includes(perm);
    return perm === 'organization.read';
  }
  const effective = role === 'roles/organization.admin' ? 'roles/project.admin' : role;
  return (findRole(effective)!.permissions as readonly string[]).includes(permission);
}

async function must(t: TestContext, method: string, url: string, body?: unknown) {
  const res = await t.request(method, url, { body });
  assert.equal(res.status, 200, `fixture ${method} ${url}: ${res.text}`);
  return res.body;
}

const freshDevice = async (t: TestContext, f: Fixtures) =>
  (await must(t, 'POST', `/v2/projects/${f.p}/devices`, { type: 'temperature' })).name as string;
const freshSa = async (t: TestContext, f: Fixtures) =>
  (await must(t, 'POST', `/v2/projects/${f.p}/serviceaccounts`, { displayName: 'x' })).name as string;
let emailSeq = 0;
const freshMember = async (t: TestContext, f: Fixtures) =>
  (
    await must(t, 'POST', `/v2/projects/${f.p}/members`, {
      email: `person${++emailSeq}@example.com`,
      roles: ['roles/project.user'],
    })
  ).name as string;
const freshConnector = async (t: TestContext, f: Fixtures) =>
  (
    await must(t, 'POST', `/v2/projects/${f.p}/dataconnectors`, {
      type: 'HTTP_PUSH',
      displayName: 'c',
      httpConfig: { url: 'https://example.com/hook' },
    })
  ).name as string;

const ENDPOINTS: Endpoint[] = [
  {
    name: 'GET project',
    permission: 'project.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/projects/${f.p}` }),
  },
  {
    name: 'GET project permissions',
    permission: 'project.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/projects/${f.p}/permissions` }),
  },
  {
    name: 'PATCH project',
    permission: 'project.update',
    call: async (_t, f) => ({ method: 'PATCH', url: `/v2/projects/${f.p}`, body: { displayName: 'renamed' } }),
  },
  {
    name: 'projects:batchUpdate',
    permission: 'project.update',
    call: async (_t, f) => ({
      method: 'POST',
      url: '/v2/projects:batchUpdate',
      body: { projects: [`projects/${f.p}`], addLabels: { a: 'b' } },
    }),
  },
  {
    name: 'DELETE project',
    permission: 'project.delete',
    call: async (t, _f, caller) => {
      const q = await t.createProject('doomed');
      const roles = callerRoles.get(caller.id)!.filter((r) => r !== 'roles/organization.admin');
      if (roles.length > 0)
        await t.deps.store.memberships.create({
          scopeType: 'project',
          scopeId: q,
          memberId: caller.id,
          accountType: 'SERVICE_ACCOUNT',
          roles,
          status: 'ACCEPTED',
          createTime: 1,
        });
      return { method: 'DELETE', url: `/v2/projects/${q}` };
    },
  },
  {
    name: 'GET members',
    permission: 'membership.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/projects/${f.p}/members` }),
  },
  {
    name: 'GET member',
    permission: 'membership.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.member}` }),
  },
  {
    name: 'POST member',
    permission: 'membership.create',
    call: async (_t, f) => ({
      method: 'POST',
      url: `/v2/projects/${f.p}/members`,
      body: { email: `new${++emailSeq}@example.com`, roles: ['roles/project.user'] },
    }),
  },
  {
    name: 'PATCH member',
    permission: 'membership.update',
    call: async (t, f) => ({
      method: 'PATCH',
      url: `/v2/${await freshMember(t, f)}`,
      body: { roles: ['roles/project.developer'] },
    }),
  },
  {
    name: 'DELETE member',
    permission: 'membership.delete',
    call: async (t, f) => ({ method: 'DELETE', url: `/v2/${await freshMember(t, f)}` }),
  },
  {
    name: 'member:getInviteUrl',
    permission: 'membership.create',
    call: async (t, f) => ({ method: 'GET', url: `/v2/${await freshMember(t, f)}:getInviteUrl` }),
  },
  {
    name: 'GET service accounts',
    permission: 'serviceaccount.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/projects/${f.p}/serviceaccounts` }),
  },
  {
    name: 'GET service account',
    permission: 'serviceaccount.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.sa}` }),
  },
  {
    name: 'POST service account',
    permission: 'serviceaccount.create',
    call: async (_t, f) => ({ method: 'POST', url: `/v2/projects/${f.p}/serviceaccounts` }),
  },
  {
    name: 'PATCH service account',
    permission: 'serviceaccount.update',
    call: async (_t, f) => ({ method: 'PATCH', url: `/v2/${f.sa}`, body: { displayName: 'y' } }),
  },
  {
    name: 'DELETE service account',
    permission: 'serviceaccount.delete',
    call: async (t, f) => ({ method: 'DELETE', url: `/v2/${await freshSa(t, f)}` }),
  },
  {
    name: 'GET keys',
    permission: 'serviceaccount.key.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.sa}/keys` }),
  },
  {
    name: 'GET key',
    permission: 'serviceaccount.key.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.key}` }),
  },
  {
    name: 'POST key',
    permission: 'serviceaccount.key.create',
    call: async (t, f) => ({ method: 'POST', url: `/v2/${await freshSa(t, f)}/keys` }),
  },
  {
    name: 'DELETE key',
    permission: 'serviceaccount.key.delete',
    call: async (t, f) => ({ method: 'DELETE', url: `/v2/${(await must(t, 'POST', `/v2/${f.sa}/keys`)).key.name}` }),
  },
  {
    name: 'GET devices',
    permission: 'device.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/projects/${f.p}/devices` }),
  },
  { name: 'GET device', permission: 'device.read', call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.device}` }) },
  {
    name: 'GET device events',
    permission: 'device.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.device}/events` }),
  },
  {
    name: 'POST label',
    permission: 'device.update',
    call: async (t, f) => ({
      method: 'POST',
      url: `/v2/${await freshDevice(t, f)}/labels`,
      body: { key: 'room', value: '1' },
    }),
  },
  {
    name: 'PATCH label',
    permission: 'device.update',
    call: async (t, f) => {
      const d = await freshDevice(t, f);
      await must(t, 'POST', `/v2/${d}/labels`, { key: 'room', value: '1' });
      return { method: 'PATCH', url: `/v2/${d}/labels/room`, body: { value: '2' } };
    },
  },
  {
    name: 'DELETE label',
    permission: 'device.update',
    call: async (t, f) => {
      const d = await freshDevice(t, f);
      await must(t, 'POST', `/v2/${d}/labels`, { key: 'room', value: '1' });
      return { method: 'DELETE', url: `/v2/${d}/labels/room` };
    },
  },
  {
    name: 'devices:batchUpdate',
    permission: 'device.update',
    call: async (_t, f) => ({
      method: 'POST',
      url: `/v2/projects/${f.p}/devices:batchUpdate`,
      body: { devices: [f.device], addLabels: { k: 'v' } },
    }),
  },
  {
    name: 'devices:transfer',
    permission: 'device.transfer',
    call: async (_t, f) => ({
      method: 'POST',
      url: `/v2/projects/${f.p}/devices:transfer`,
      body: { devices: [f.device] },
    }),
  },
  {
    name: 'GET data connectors',
    permission: 'dataconnector.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/projects/${f.p}/dataconnectors` }),
  },
  {
    name: 'GET data connector',
    permission: 'dataconnector.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.dc}` }),
  },
  {
    name: 'data connector:metrics',
    permission: 'dataconnector.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.dc}:metrics` }),
  },
  {
    name: 'POST data connector',
    permission: 'dataconnector.create',
    call: async (_t, f) => ({
      method: 'POST',
      url: `/v2/projects/${f.p}/dataconnectors`,
      body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.com/x' } },
    }),
  },
  {
    name: 'PATCH data connector',
    permission: 'dataconnector.update',
    call: async (_t, f) => ({ method: 'PATCH', url: `/v2/${f.dc}`, body: { displayName: 'z' } }),
  },
  {
    name: 'data connector:sync',
    permission: 'dataconnector.update',
    call: async (_t, f) => ({ method: 'POST', url: `/v2/${f.dc}:sync` }),
  },
  {
    name: 'data connector:rotateSecret',
    permission: 'dataconnector.update',
    call: async (_t, f) => ({ method: 'POST', url: `/v2/${f.dc}:rotateSecret`, body: {} }),
  },
  {
    name: 'GET deliveries',
    permission: 'dataconnector.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.dc}/deliveries` }),
  },
  {
    name: 'GET deliveries of every connector',
    permission: 'dataconnector.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/projects/${f.p}/dataconnectors/-/deliveries` }),
  },
  {
    name: 'GET delivery',
    permission: 'dataconnector.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/${f.delivery}` }),
  },
  {
    name: 'delivery:resend',
    permission: 'dataconnector.update',
    call: async (_t, f) => ({ method: 'POST', url: `/v2/${f.delivery}:resend`, body: {} }),
  },
  {
    name: 'data connector:replay',
    permission: 'dataconnector.update',
    call: async (t, f) => ({
      method: 'POST',
      url: `/v2/${f.dc}:replay`,
      body: {
        startTime: new Date(t.clock.now() - 60_000).toISOString(),
        endTime: new Date(t.clock.now() + 1000).toISOString(),
      },
    }),
  },
  {
    name: 'data connector:test',
    permission: 'dataconnector.update',
    // No delivery engine runs here (a test push would be a 503): an unknown event type is refused, after the
    // permission check, with a 400.
    call: async (_t, f) => ({ method: 'POST', url: `/v2/${f.dc}:test`, body: { eventType: 'unknown' } }),
  },
  {
    name: 'DELETE data connector',
    permission: 'dataconnector.delete',
    call: async (t, f) => ({ method: 'DELETE', url: `/v2/${await freshConnector(t, f)}` }),
  },
  {
    name: 'POST emulated device',
    permission: 'emulator.create',
    call: async (_t, f) => ({ method: 'POST', url: `/v2/projects/${f.p}/devices`, body: { type: 'touch' } }),
  },
  {
    name: 'PUT emulated device',
    permission: 'emulator.update',
    call: async (t, f) => ({
      method: 'PUT',
      url: `/v2/${await freshDevice(t, f)}`,
      body: { type: 'temperature', labels: { name: 'n' } },
    }),
  },
  {
    name: 'device:publish',
    permission: 'emulator.update',
    call: async (_t, f) => ({ method: 'POST', url: `/v2/${f.device}:publish`, body: { touch: {} } }),
  },
  {
    name: 'DELETE emulated device',
    permission: 'emulator.delete',
    call: async (t, f) => ({ method: 'DELETE', url: `/v2/${await freshDevice(t, f)}` }),
  },
  {
    name: 'GET organization',
    permission: 'org:organization.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/organizations/${f.o}` }),
  },
  {
    name: 'GET organization permissions',
    permission: 'org:organization.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/organizations/${f.o}/permissions` }),
  },
  {
    name: 'GET organization members',
    permission: 'org:membership.read',
    call: async (_t, f) => ({ method: 'GET', url: `/v2/organizations/${f.o}/members` }),
  },
  {
    name: 'POST organization member',
    permission: 'org:membership.create',
    call: async (_t, f) => ({
      method: 'POST',
      url: `/v2/organizations/${f.o}/members`,
      body: { email: `org${++emailSeq}@example.com`, roles: ['roles/organization.admin'] },
    }),
  },
  {
    name: 'POST project',
    permission: 'org:project.create',
    call: async (_t, f) => ({
      method: 'POST',
      url: '/v2/projects',
      body: { organization: `organizations/${f.o}`, displayName: 'new' },
    }),
  },
];

const callerRoles = new Map<string, string[]>();

describe('role × endpoint matrix', () => {
  let t: TestContext;
  let f: Fixtures;
  const callers = new Map<RoleCase, Account>();

  before(async () => {
    t = await createTestContext();
    const p = t.projectId;
    const device = await freshDevice(t, { p } as Fixtures);
    const sa = (await must(t, 'POST', `/v2/projects/${p}/serviceaccounts`, { displayName: 'fixture' })).name as string;
    const key = (await must(t, 'POST', `/v2/${sa}/keys`)).key.name as string;
    const dc = (
      await must(t, 'POST', `/v2/projects/${p}/dataconnectors`, {
        type: 'HTTP_PUSH',
        httpConfig: { url: 'https://example.com/hook' },
      })
    ).name as string;
    await must(t, 'POST', `/v2/${device}:publish`, { touch: {} });
    const delivery = (await must(t, 'GET', `/v2/${dc}/deliveries`)).deliveries[0].name as string;
    f = { p, o: t.organizationId, device, sa, key, dc, delivery, member: '' };
    f.member = await freshMember(t, f);
    for (const role of ROLE_CASES) {
      const account = await t.createServiceAccount({ roles: role === 'none' ? [] : [role] });
      callers.set(role, account);
      callerRoles.set(account.id, role === 'none' ? [] : [role]);
    }
  });
  after(() => t.close());

  for (const endpoint of ENDPOINTS) {
    it(endpoint.name, async () => {
      for (const role of ROLE_CASES) {
        const caller = callers.get(role)!;
        const call = await endpoint.call(t, f, caller);
        const res = await t.request(call.method, call.url, { auth: caller.auth, body: call.body });
        const where = `${endpoint.name} as ${role}: ${res.status} ${res.text.slice(0, 200)}`;
        if (holds(role, endpoint.permission)) {
          assert.ok(![401, 403, 404].includes(res.status), `expected access, ${where}`);
          assert.ok(res.status < 500, where);
        } else {
          const expected = role === 'none' ? 404 : 403;
          assert.equal(res.status, expected, where);
        }
      }
    });
  }

  it('GET /projects and /roles need only authentication', async () => {
    for (const role of ROLE_CASES) {
      const caller = callers.get(role)!;
      const projects = await t.request('GET', '/v2/projects', { auth: caller.auth });
      assert.equal(projects.status, 200);
      assert.equal(projects.body.projects.length, role === 'none' ? 0 : projects.body.projects.length);
      if (role !== 'none')
        assert.ok(
          projects.body.projects.some((p: { name: string }) => p.name === `projects/${f.p}`),
          role,
        );
      assert.equal((await t.request('GET', '/v2/roles', { auth: caller.auth })).status, 200);
    }
  });
});
