// Contacts (of a project) and contact groups (of its organization) from the CLI (extensions §X5), against a real
// service without SMTP: `contacts list|get|create|update|delete` and `contacts groups list|get|create|update|delete`
// (ids and full names, --organization, --no-group, --json and --quiet), a rule's e-mail action naming a group, usage
// errors (exit 2) before anything is sent, and the service's 400s passed through (exit 1), among them the one for an
// e-mail action on a service with no SMTP relay.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { startService, type Service } from './harness.ts';

let s: Service;
let group = '';
let groupId = '';
let contact = '';
let contactId = '';

let setup: Promise<void> | null = null;
const ready = () =>
  (setup ??= (async () => {
    s = await startService();
    const login = await s.run(['login', '--from', `${s.dataDir}/bootstrap.json`]);
    assert.equal(login.code, 0, login.stderr);
  })());

const contactCount = async () =>
  (await s.api('GET', `projects/${s.projectId}/contacts`)).body.contacts.length as number;

describe('happy', () => {
  before(ready);

  it("groups: create in the project's organization, get by id and name, list", async () => {
    const created = await s.json([
      'contacts',
      'groups',
      'create',
      '--name',
      'Facilities',
      '--description',
      'Building staff',
    ]);
    group = created.name;
    groupId = group.split('/').pop()!;
    assert.match(group, new RegExp(`^${s.boot.organization}/contactGroups/[A-Za-z0-9_.~-]+$`));
    assert.deepEqual(
      [created.displayName, created.description, created.contactCount],
      ['Facilities', 'Building staff', 0],
    );
    const [byId, byName, withOrg, list, table, quiet] = await Promise.all([
      s.json(['contacts', 'groups', 'get', groupId]),
      s.json(['contacts', 'groups', 'get', group]),
      s.json(['contacts', 'groups', 'get', groupId, '--organization', s.boot.organization.split('/')[1]!]),
      s.json(['contacts', 'groups', 'list']),
      s.run(['contacts', 'groups', 'list']),
      s.run(['contacts', 'groups', 'list', '-q', '--organization', s.boot.organization]),
    ]);
    assert.deepEqual(byId, created);
    assert.deepEqual(byName, created);
    assert.deepEqual(withOrg, created);
    assert.deepEqual(list, [created]);
    const [header, row] = table.stdout.trimEnd().split('\n');
    assert.match(header!, /^ID\s+DISPLAY NAME\s+CONTACTS\s+DESCRIPTION$/);
    assert.match(row!, new RegExp(`^${groupId}\\s+Facilities\\s+0\\s+Building staff$`));
    assert.equal(quiet.stdout, `${group}\n`);
    const get = await s.run(['contacts', 'groups', 'get', groupId]);
    assert.match(get.stdout, /^description\s+Building staff$/m);
    assert.match(get.stdout, /^contactCount\s+0$/m);
  });

  it('contacts: create in a group, get, list; the group counts it', async () => {
    const created = await s.json([
      'contacts',
      'create',
      '--email',
      'Kari@Example.org',
      '--name',
      'Kari',
      '--group',
      groupId,
      '--phone',
      '+4798765432',
    ]);
    contact = created.name;
    contactId = contact.split('/').pop()!;
    const { name, createTime, updateTime, ...fields } = created;
    assert.match(name, new RegExp(`^projects/${s.projectId}/contacts/[A-Za-z0-9_.~-]+$`));
    assert.equal(createTime, updateTime);
    assert.deepEqual(fields, {
      contactGroup: group,
      displayName: 'Kari',
      email: 'kari@example.org',
      phoneNumber: '+4798765432',
      hasProjectAccess: false,
    });
    const [got, list, table, quiet, counted] = await Promise.all([
      s.json(['contacts', 'get', contactId]),
      s.json(['contacts', 'list']),
      s.run(['contacts', 'list']),
      s.run(['contacts', 'get', contact, '-q']),
      s.json(['contacts', 'groups', 'get', groupId]),
    ]);
    assert.deepEqual(got, created);
    assert.deepEqual(list, [created]);
    const [header, row] = table.stdout.trimEnd().split('\n');
    assert.match(header!, /^ID\s+EMAIL\s+DISPLAY NAME\s+GROUP\s+PHONE\s+PROJECT ACCESS$/);
    assert.match(row!, new RegExp(`^${contactId}\\s+kari@example\\.org\\s+Kari\\s+${groupId}\\s+\\+4798765432\\s+no$`));
    assert.equal(quiet.stdout, `${contact}\n`);
    assert.equal(counted.contactCount, 1);
    const get = await s.run(['contacts', 'get', contactId]);
    assert.match(get.stdout, new RegExp(`^contactGroup\\s+${group}$`, 'm'));
  });

  it('update: only the options given change; --no-group takes the contact out of its group', async () => {
    const renamed = await s.json(['contacts', 'update', contactId, '--display-name', 'Kari Nordmann']);
    assert.deepEqual(
      [renamed.displayName, renamed.email, renamed.contactGroup, renamed.phoneNumber],
      ['Kari Nordmann', 'kari@example.org', group, '+4798765432'],
    );
    const moved = await s.json([
      'contacts',
      'update',
      contact,
      '--no-group',
      '--email',
      'kari@example.net',
      '--phone',
      '',
    ]);
    assert.deepEqual(
      [moved.displayName, moved.email, moved.contactGroup, moved.phoneNumber],
      ['Kari Nordmann', 'kari@example.net', '', ''],
    );
    assert.match((await s.run(['contacts', 'get', contactId])).stdout, /^contactGroup\s+\(none\)$/m);
    assert.equal((await s.json(['contacts', 'groups', 'get', groupId])).contactCount, 0);
    const back = await s.json(['contacts', 'update', contactId, '--group', group]);
    assert.equal(back.contactGroup, group);

    const group2 = await s.json(['contacts', 'groups', 'update', groupId, '--description', 'Building and kitchen']);
    assert.deepEqual([group2.displayName, group2.description], ['Facilities', 'Building and kitchen']);
    const renamedGroup = await s.run(['contacts', 'groups', 'update', group, '--name', 'Caretakers']);
    assert.equal(renamedGroup.code, 0, renamedGroup.stderr);
    assert.match(renamedGroup.stdout, /^displayName\s+Caretakers$/m);
    assert.match(renamedGroup.stdout, /^description\s+Building and kitchen$/m);
  });

  it("a rule's e-mail action may name the group (by id): refused without SMTP, with the service's message", async () => {
    const r = await s.run(['rules', 'create', '--field', 'temperature', '--above', '8', '--contact-group', groupId]);
    assert.deepEqual([r.code, r.stdout], [1, '']);
    assert.match(
      r.stderr,
      /^error: escalationLevels\[0\]\.actions\[0\].*: EMAIL actions need an SMTP server, and none is configured: set SENSORCLOUD_SMTP_URL/,
    );
    assert.deepEqual((await s.api('GET', `projects/${s.projectId}/rules`)).body.rules, []);
  });

  it('delete: the contact, then the group (its contacts stay, in no group)', async () => {
    const second = await s.json(['contacts', 'create', '--email', 'ola@example.org', '--group', group]);
    const deletedGroup = await s.run(['contacts', 'groups', 'delete', groupId]);
    assert.deepEqual([deletedGroup.code, deletedGroup.stdout], [0, `Deleted ${group}.\n`]);
    assert.equal((await s.api('GET', group)).status, 404);
    assert.equal((await s.json(['contacts', 'get', second.name])).contactGroup, '');

    const deleted = await s.run(['contacts', 'delete', contactId]);
    assert.deepEqual([deleted.code, deleted.stdout], [0, `Deleted ${contact}.\n`]);
    assert.deepEqual(await s.json(['contacts', 'delete', second.name]), {});
    assert.deepEqual(await s.json(['contacts', 'list']), []);
    assert.match((await s.run(['contacts', 'list'])).stderr, /^no contacts$/m);
    assert.deepEqual(await s.json(['contacts', 'groups', 'list']), []);
  });
});

describe('errors', () => {
  before(ready);

  it('exit 2 for missing and unreadable options, before anything is sent', async () => {
    const count = await contactCount();
    const runs = await Promise.all([
      s.run(['contacts', 'create', '--name', 'No address']),
      s.run(['contacts', 'create', '--email', 'a@example.org', '--name', 'a', '--display-name', 'b']),
      s.run(['contacts', 'create', '--email', 'a@example.org', '--group', 'not a group']),
      s.run(['contacts', 'create', '--email', 'a@example.org', '--group', 'organizations/o/groups/g']),
      s.run(['contacts', 'update', 'cvq2b1r0l4l9s3f2a9c0']),
      s.run(['contacts', 'get', 'projects/p/devices/d']),
      s.run(['contacts', 'groups', 'create', '--description', 'no name']),
      s.run(['contacts', 'groups', 'update', 'cvq2b1r0l4l9s3f2a9g0']),
      s.run(['contacts', 'groups', 'get', 'a/b']),
      s.run([
        'contacts',
        'groups',
        'get',
        'organizations/other/contactGroups/g',
        '--organization',
        s.boot.organization,
      ]),
    ]);
    assert.deepEqual(
      runs.map((r) => r.code),
      Array(runs.length).fill(2),
      runs.map((r) => r.stderr).join(''),
    );
    for (const r of runs) assert.equal(r.stdout, '');
    const errors = runs.map((r) => r.stderr);
    assert.match(errors[0]!, /required option '--email <address>' not specified/);
    assert.match(errors[1]!, /give --name or --display-name, not both/);
    assert.match(errors[2]!, /"not a group" is not a contact group id or name/);
    assert.match(errors[3]!, /is not a contact group name \(organizations\/<organization>\/contactGroups\/<id>\)/);
    assert.match(errors[4]!, /nothing to change/);
    assert.match(errors[5]!, /is not a contacts name/);
    assert.match(errors[6]!, /required option '--name <text>' not specified/);
    assert.match(errors[7]!, /nothing to change/);
    assert.match(errors[8]!, /"a\/b" is not a contact group id or name/);
    assert.match(errors[9]!, /is not a contact group of organizations\//);
    assert.equal(await contactCount(), count, 'nothing was created');
    assert.deepEqual((await s.api('GET', `${s.boot.organization}/contactGroups`)).body.contactGroups, []);
  });

  it("exit 1 with the service's message for what it refuses", async () => {
    const runs = await Promise.all([
      s.run(['contacts', 'create', '--email', 'not-an-address']),
      s.run(['contacts', 'create', '--email', 'a@example.org', '--phone', '12345']),
      s.run(['contacts', 'create', '--email', 'a@example.org', '--group', 'cvq2b1r0l4l9s3f2a9g0']),
      s.run(['contacts', 'get', 'cvq2b1r0l4l9s3f2a9c0']),
      s.run(['contacts', 'groups', 'create', '--name', '']),
      s.run(['contacts', 'groups', 'get', 'cvq2b1r0l4l9s3f2a9g0']),
    ]);
    assert.deepEqual(
      runs.map((r) => r.code),
      Array(runs.length).fill(1),
      runs.map((r) => r.stderr).join(''),
    );
    for (const r of runs) assert.equal(r.stdout, '');
    const errors = runs.map((r) => r.stderr);
    assert.match(errors[0]!, /^error: email .*not-an-address/);
    assert.match(errors[1]!, /^error: phoneNumber /);
    assert.match(errors[2]!, /^error: contactGroup: /);
    assert.match(errors[3]!, /^error: contact not found/);
    assert.match(errors[4]!, /^error: displayName /);
    assert.match(errors[5]!, /^error: contact group not found/);
    assert.deepEqual((await s.api('GET', `projects/${s.projectId}/contacts`)).body.contacts, []);
  });
});
