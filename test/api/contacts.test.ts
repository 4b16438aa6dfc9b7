// Contact groups (an organization's) and contacts (a project's) for notification rules' e-mail actions (extensions
// §X5): CRUD, checks, who reads and who changes, hasProjectAccess, and what a group stands for in an e-mail action.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { contactGroupAddresses } from '../../src/alerts/notify.ts';
import { createTestContext, type Account, type TestContext } from '../helpers/context.ts';

let t: TestContext;
let groups: string;
let contacts: string;
before(async () => {
  t = await createTestContext({ env: { SENSORCLOUD_SMTP_URL: 'smtps://alerts:pw@mail.example.org' } });
  groups = `/v2/organizations/${t.organizationId}/contactGroups`;
  contacts = `/v2/projects/${t.projectId}/contacts`;
});
after(() => t.close());

const lastOf = (r: { name: string }) => r.name.split('/').pop()!;
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

async function createGroup(body: Record<string, unknown> = { displayName: 'On call' }) {
  const r = await t.request('POST', groups, { body });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

async function createContact(body: Record<string, unknown>, project = t.projectId) {
  const r = await t.request('POST', `/v2/projects/${project}/contacts`, { body });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** A user of the service (a console user), optionally an accepted member of `projectId` with `roles`. */
async function createUser(email: string, membership?: { projectId: string; roles: string[] }) {
  const now = nowMicros(t.deps);
  const id = t.deps.ids.next();
  await t.deps.store.users.create({
    id,
    email,
    displayName: 'U',
    passwordHash: null,
    active: true,
    createTime: now,
    updateTime: now,
  });
  if (membership)
    await t.deps.store.memberships.create({
      scopeType: 'project',
      scopeId: membership.projectId,
      memberId: id,
      accountType: 'USER',
      roles: membership.roles,
      status: 'ACCEPTED',
      createTime: now,
    });
  return id;
}

describe('contact groups', () => {
  it('creates, gets, lists, updates and deletes, with contactCount; every key present', async () => {
    const g = await createGroup({ displayName: 'Facilities', description: 'Building staff' });
    assert.match(g.name, new RegExp(`^organizations/${t.organizationId}/contactGroups/[0-9a-v]{20}$`));
    assert.deepEqual(
      { ...g, name: undefined, createTime: undefined, updateTime: undefined },
      {
        name: undefined,
        displayName: 'Facilities',
        description: 'Building staff',
        contactCount: 0,
        createTime: undefined,
        updateTime: undefined,
      },
    );
    assert.match(g.createTime, TIME);
    const url = `${groups}/${lastOf(g)}`;
    assert.deepEqual((await t.request('GET', url)).body, g);
    await createContact({ email: 'one@example.org', contactGroup: g.name });
    await createContact({ email: 'two@example.org', contactGroup: g.name }, await t.createProject('second'));
    assert.equal((await t.request('GET', url)).body.contactCount, 2);
    const listed = await t.request('GET', groups);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.nextPageToken, '');
    assert.equal(listed.body.contactGroups.find((x: any) => x.name === g.name).contactCount, 2);

    t.clock.advance(1000);
    const p = await t.request('PATCH', url, { body: { description: 'Everyone in the building' } });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.displayName, 'Facilities');
    assert.equal(p.body.description, 'Everyone in the building');
    assert.notEqual(p.body.updateTime, g.updateTime);
    const masked = await t.request('PATCH', `${url}?update_mask=display_name,contactCount`, {
      body: { displayName: 'Facility staff', description: 'ignored' },
    });
    assert.equal(masked.body.displayName, 'Facility staff');
    assert.equal(masked.body.description, 'Everyone in the building');

    const del = await t.request('DELETE', url);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body, {});
    assert.equal((await t.request('GET', url)).status, 404);
    // Its contacts stay, in no group.
    const left = (await t.request('GET', contacts)).body.contacts.find((c: any) => c.email === 'one@example.org');
    assert.equal(left.contactGroup, '');
  });

  it('pages in creation order, and is served under /v2alpha too', async () => {
    const org = t.organizationId;
    const names: string[] = [];
    for (let i = 0; i < 3; i++) names.push((await createGroup({ displayName: `page ${i}` })).name);
    const all = (await t.request('GET', `/v2alpha/organizations/${org}/contactGroups?pageSize=1000`)).body;
    const ours = all.contactGroups.map((g: any) => g.name).filter((n: string) => names.includes(n));
    assert.deepEqual(ours, names);
    const p1 = await t.request('GET', `${groups}?pageSize=1`);
    assert.equal(p1.body.contactGroups.length, 1);
    assert.notEqual(p1.body.nextPageToken, '');
    const p2 = await t.request('GET', `${groups}?pageSize=1&pageToken=${p1.body.nextPageToken}`);
    assert.notEqual(p2.body.contactGroups[0].name, p1.body.contactGroups[0].name);
  });

  it('refuses bad bodies without storing anything', async () => {
    const count = async () => (await t.request('GET', `${groups}?pageSize=1000`)).body.contactGroups.length;
    const before = await count();
    for (const [body, pattern] of [
      [{}, /displayName is required/],
      [{ displayName: '  ' }, /displayName must not be empty/],
      [{ displayName: 'd'.repeat(257) }, /displayName must be at most 256/],
      [{ displayName: 'x', description: 'd'.repeat(1025) }, /description must be at most 1024/],
    ] as const) {
      const r = await t.request('POST', groups, { body });
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error, pattern);
    }
    assert.equal(await count(), before);
    const g = await createGroup();
    const url = `${groups}/${lastOf(g)}`;
    assert.equal((await t.request('PATCH', url, { body: { displayName: '' } })).status, 400);
    assert.equal((await t.request('PATCH', `${url}?update_mask=members`, { body: {} })).status, 400);
    assert.deepEqual((await t.request('GET', url)).body, g);
    assert.equal((await t.request('GET', `${groups}/cvq2b1b0l4l9s3f2a9g0`)).status, 404);
    assert.equal((await t.request('GET', '/v2/organizations/cvq2b1b0l4l9s3f2a9g0/contactGroups')).status, 404);
  });
});

describe('contacts', () => {
  it('creates, gets, lists, updates and deletes; e-mail in lower case; every key present', async () => {
    const g = await createGroup({ displayName: 'Night shift' });
    const c = await createContact({
      displayName: 'Kari Nordmann',
      email: 'Kari@Example.ORG',
      phoneNumber: '+4798765432',
      contactGroup: g.name,
    });
    assert.match(c.name, new RegExp(`^projects/${t.projectId}/contacts/[0-9a-v]{20}$`));
    assert.deepEqual(
      { ...c, name: undefined, createTime: undefined, updateTime: undefined },
      {
        name: undefined,
        contactGroup: g.name,
        displayName: 'Kari Nordmann',
        email: 'kari@example.org',
        phoneNumber: '+4798765432',
        hasProjectAccess: false,
        createTime: undefined,
        updateTime: undefined,
      },
    );
    const url = `/v2alpha/projects/${t.projectId}/contacts/${lastOf(c)}`;
    assert.deepEqual((await t.request('GET', url)).body, c);
    const listed = await t.request('GET', `${contacts}?page_size=1000`);
    assert.deepEqual(
      listed.body.contacts.find((x: any) => x.name === c.name),
      c,
    );
    const p = await t.request('PATCH', url, { body: { phoneNumber: '', displayName: 'Kari' } });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.phoneNumber, '');
    assert.equal(p.body.displayName, 'Kari');
    assert.equal(p.body.contactGroup, g.name);
    const masked = await t.request('PATCH', `${url}?update_mask=contactGroup,hasProjectAccess`, {
      body: { displayName: 'ignored' },
    });
    assert.equal(masked.status, 200, masked.text);
    assert.equal(masked.body.contactGroup, '');
    assert.equal(masked.body.displayName, 'Kari');
    assert.equal((await t.request('DELETE', url)).status, 200);
    assert.equal((await t.request('GET', url)).status, 404);
    assert.equal((await t.request('DELETE', url)).status, 404);
  });

  it('hasProjectAccess: a user with the e-mail who is an accepted member of the project, or an organization admin', async () => {
    const member = await createContact({ email: 'member@example.org' });
    await createUser('member@example.org', { projectId: t.projectId, roles: ['roles/project.user'] });
    const elsewhere = await createContact({ email: 'elsewhere@example.org' });
    await createUser('elsewhere@example.org', {
      projectId: await t.createProject('x'),
      roles: ['roles/project.admin'],
    });
    const nobody = await createContact({ email: 'nobody@example.org' });
    // The bootstrap user is an organization admin, a member of no project.
    const admin = await createContact({ email: t.boot.user.email });
    const read = async (c: any) => (await t.request('GET', `${contacts}/${lastOf(c)}`)).body.hasProjectAccess;
    assert.equal(await read(member), true);
    assert.equal(await read(elsewhere), false);
    assert.equal(await read(nobody), false);
    assert.equal(await read(admin), true);
  });

  it('refuses bad bodies without storing anything', async () => {
    const count = async () => (await t.request('GET', `${contacts}?pageSize=1000`)).body.contacts.length;
    const before = await count();
    const otherOrg = 'cvq2b1b0l4l9s3f2a9g1';
    for (const [body, pattern] of [
      [{}, /email is required/],
      [{ email: 'nope' }, /email is not an e-mail address/],
      [{ email: 'a@example.org, b@example.org' }, /email is not an e-mail address/],
      [{ email: 'a@example.org', phoneNumber: '98765432' }, /phoneNumber must be in E\.164 form/],
      [{ email: 'a@example.org', displayName: 'd'.repeat(257) }, /displayName must be at most 256/],
      [{ email: 'a@example.org', contactGroup: 'groups/x' }, /contactGroup must be a contact group name/],
      [
        { email: 'a@example.org', contactGroup: `organizations/${otherOrg}/contactGroups/cvq2b1b0l4l9s3f2a9g0` },
        /not a contact group of this project's organization/,
      ],
      [
        {
          email: 'a@example.org',
          contactGroup: `organizations/${t.organizationId}/contactGroups/cvq2b1b0l4l9s3f2a9g0`,
        },
        /contactGroup: no contact group/,
      ],
    ] as const) {
      const r = await t.request('POST', contacts, { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${r.text}`);
      assert.match(r.body.error, pattern);
    }
    assert.equal(await count(), before);
    const c = await createContact({ email: 'stay@example.org' });
    const url = `${contacts}/${lastOf(c)}`;
    for (const body of [{ email: 'bad' }, { phoneNumber: 'x' }, { contactGroup: 'x' }]) {
      assert.equal((await t.request('PATCH', url, { body })).status, 400);
    }
    assert.equal((await t.request('PATCH', `${url}?update_mask=email`, { body: {} })).status, 400);
    assert.equal((await t.request('PATCH', `${url}?update_mask=group`, { body: {} })).status, 400);
    assert.deepEqual((await t.request('GET', url)).body, c);
    assert.equal(
      (await t.request('GET', `/v2/projects/${await t.createProject('o')}/contacts/${lastOf(c)}`)).status,
      404,
    );
    assert.equal((await t.request('GET', '/v2/projects/-/contacts')).status, 400);
  });

  it('contactGroupAddresses: the groups contacts in the project, lower case, once each; unknown groups stand for none', async () => {
    const project = await t.createProject('addresses');
    const a = await createGroup({ displayName: 'A' });
    const b = await createGroup({ displayName: 'B' });
    await createContact({ email: 'Ann@example.org', contactGroup: a.name }, project);
    await createContact({ email: 'bob@example.org', contactGroup: a.name }, project);
    await createContact({ email: 'ann@example.org', contactGroup: b.name }, project);
    await createContact({ email: 'cy@example.org', contactGroup: b.name }, project);
    await createContact({ email: 'elsewhere@example.org', contactGroup: a.name }, t.projectId);
    await createContact({ email: 'nogroup@example.org' }, project);
    const missing = `organizations/${t.organizationId}/contactGroups/cvq2b1b0l4l9s3f2a9g0`;
    const foreign = `organizations/cvq2b1b0l4l9s3f2a9g1/contactGroups/${lastOf(a)}`;
    assert.deepEqual(await contactGroupAddresses(t.deps, project, [a.name, missing, foreign, b.name, 'junk']), [
      'ann@example.org',
      'bob@example.org',
      'cy@example.org',
    ]);
    assert.deepEqual(await contactGroupAddresses(t.deps, project, []), []);
    // Inside a transaction, as the alerts engine would call it.
    const inTx = await t.deps.store.transaction((tx) => contactGroupAddresses({ store: tx }, project, [b.name]));
    assert.deepEqual(inTx, ['ann@example.org', 'cy@example.org']);
  });

  it('a rule names contact groups of its organization in an e-mail action, and they read back', async () => {
    const g = await createGroup({ displayName: 'Rule group' });
    const r = await t.request('POST', `/v2alpha/projects/${t.projectId}/rules`, {
      body: {
        displayName: 'with groups',
        trigger: { field: 'touch' },
        escalationLevels: [{ actions: [{ type: 'EMAIL', email: { contactGroups: [g.name], subject: 's' } }] }],
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.escalationLevels[0].actions[0].email, {
      recipients: [],
      contactGroups: [g.name],
      subject: 's',
      body: '',
    });
  });
});

describe('security', () => {
  let user: Account;
  let developer: Account;
  let projectAdmin: Account;
  let stranger: Account;
  let group: any;
  let contact: any;
  before(async () => {
    user = await t.createServiceAccount({ roles: ['roles/project.user'] });
    developer = await t.createServiceAccount({ roles: ['roles/project.developer'] });
    projectAdmin = await t.createServiceAccount({ roles: ['roles/project.admin'] });
    // A member of a project of another organization only.
    const now = nowMicros(t.deps);
    const org = t.deps.ids.next();
    await t.deps.store.organizations.create({ id: org, displayName: 'Other org', createTime: now });
    const foreignProject = t.deps.ids.next();
    await t.deps.store.projects.create({
      id: foreignProject,
      organizationId: org,
      displayName: 'foreign',
      location: { latitude: null, longitude: null, timeLocation: '' },
      labels: {},
      createTime: now,
      updateTime: now,
    });
    stranger = await t.createServiceAccount({ projectId: foreignProject, roles: ['roles/project.admin'] });
    group = await createGroup({ displayName: 'Secured' });
    contact = await createContact({ email: 'secured@example.org', contactGroup: group.name });
    group = (await t.request('GET', `${groups}/${lastOf(group)}`)).body;
    assert.equal(group.contactCount, 1);
  });

  it('contact groups: members of any project of the organization read; only organization admins change', async () => {
    const url = `${groups}/${lastOf(group)}`;
    for (const who of [user, developer, projectAdmin]) {
      assert.equal((await t.request('GET', groups, { auth: who.auth })).status, 200);
      assert.deepEqual((await t.request('GET', url, { auth: who.auth })).body, group);
      assert.equal((await t.request('POST', groups, { auth: who.auth, body: { displayName: 'x' } })).status, 403);
      assert.equal((await t.request('PATCH', url, { auth: who.auth, body: { displayName: 'x' } })).status, 403);
      assert.equal((await t.request('DELETE', url, { auth: who.auth })).status, 403);
    }
    for (const [method, path] of [
      ['GET', groups],
      ['POST', groups],
      ['GET', url],
      ['PATCH', url],
      ['DELETE', url],
    ] as const) {
      const r = await t.request(method, path, {
        auth: stranger.auth,
        body: method === 'POST' || method === 'PATCH' ? { displayName: 'x' } : undefined,
      });
      assert.equal(r.status, 404, `${method} ${path}`);
    }
    assert.deepEqual((await t.request('GET', url)).body, group);
  });

  it('contacts: project.user reads and gets 403 on changes; project.developer changes; others get 404', async () => {
    const url = `${contacts}/${lastOf(contact)}`;
    assert.equal((await t.request('GET', contacts, { auth: user.auth })).status, 200);
    assert.deepEqual((await t.request('GET', url, { auth: user.auth })).body, contact);
    assert.equal(
      (await t.request('POST', contacts, { auth: user.auth, body: { email: 'u@example.org' } })).status,
      403,
    );
    assert.equal((await t.request('PATCH', url, { auth: user.auth, body: { displayName: 'x' } })).status, 403);
    assert.equal((await t.request('DELETE', url, { auth: user.auth })).status, 403);
    const made = await t.request('POST', contacts, {
      auth: developer.auth,
      body: { email: 'dev@example.org', contactGroup: group.name },
    });
    assert.equal(made.status, 200, made.text);
    const madeUrl = `${contacts}/${lastOf(made.body)}`;
    assert.equal((await t.request('PATCH', madeUrl, { auth: developer.auth, body: { displayName: 'D' } })).status, 200);
    assert.equal((await t.request('DELETE', madeUrl, { auth: developer.auth })).status, 200);
    for (const [method, path] of [
      ['GET', contacts],
      ['POST', contacts],
      ['GET', url],
      ['PATCH', url],
      ['DELETE', url],
    ] as const) {
      const r = await t.request(method, path, {
        auth: stranger.auth,
        body: method === 'POST' || method === 'PATCH' ? { email: 'x@example.org' } : undefined,
      });
      assert.equal(r.status, 404, `${method} ${path}`);
    }
    assert.equal((await t.request('GET', contacts, { auth: null })).status, 401);
    assert.deepEqual((await t.request('GET', url)).body, contact);
  });
});
