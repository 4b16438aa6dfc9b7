// Projects (contract §3.2, §4.1): list, create, get, patch, delete (refusal and cascade), permissions, label batch.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createTestContext, type Auth, type TestContext } from '../helpers/context.ts';

const UNSET = { latitude: null, longitude: null, timeLocation: '' };

describe('projects', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  const create = (body: unknown, auth?: Auth) => t.request('POST', '/v2/projects', { body, auth });

  describe('happy', () => {
    it('lists the bootstrap project in the exact shape of §3.2', async () => {
      const res = await t.request('GET', '/v2/projects');
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.projects.find((p: { name: string }) => p.name === t.boot.project),
        {
          name: t.boot.project,
          displayName: 'Default project',
          organization: t.boot.organization,
          organizationDisplayName: 'Default organization',
          sensorCount: 0,
          cloudConnectorCount: 0,
          inventory: false,
          location: UNSET,
          labels: {},
        },
      );
      assert.equal(typeof res.body.nextPageToken, 'string');
    });

    it('creates a project without adding the creator as a member', async () => {
      const res = await create({
        organization: t.boot.organization,
        displayName: 'Warehouse',
        location: { latitude: 59.9, longitude: 10.7, timeLocation: 'Europe/Oslo' },
      });
      assert.equal(res.status, 200);
      assert.match(res.body.name, /^projects\/[0-9a-v]{20}$/);
      assert.deepEqual(
        { ...res.body, name: undefined },
        {
          name: undefined,
          displayName: 'Warehouse',
          organization: t.boot.organization,
          organizationDisplayName: 'Default organization',
          sensorCount: 0,
          cloudConnectorCount: 0,
          inventory: false,
          location: { latitude: 59.9, longitude: 10.7, timeLocation: 'Europe/Oslo' },
          labels: {},
        },
      );
      const id = res.body.name.split('/')[1];
      assert.deepEqual((await t.request('GET', `/v2/projects/${id}/members`)).body, { members: [], nextPageToken: '' });
      assert.equal((await t.request('GET', `/v2/${res.body.name}`)).status, 200);
    });

    it('accepts a bare organization id and null location parts', async () => {
      const res = await create({
        organization: t.organizationId,
        displayName: 'Bare',
        location: { latitude: null, longitude: null, timeLocation: null },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.location, UNSET);
    });

    it('counts sensors and cloud connectors', async () => {
      const id = await t.createProject('Counted');
      await t.createDevice({ projectId: id });
      await t.createDevice({ projectId: id, type: 'humidity' });
      await t.createDevice({ projectId: id, type: 'ccon', emulated: false, id: t.deps.ids.next() });
      const res = await t.request('GET', `/v2/projects/${id}`);
      assert.equal(res.body.sensorCount, 2);
      assert.equal(res.body.cloudConnectorCount, 1);
    });

    it('PATCH without a mask applies every field present and ignores read-only fields', async () => {
      const id = await t.createProject('Before');
      const res = await t.request('PATCH', `/v2/projects/${id}`, {
        body: {
          name: 'projects/other',
          displayName: 'After',
          sensorCount: 99,
          inventory: true,
          labels: { x: 'y' },
          organization: t.boot.organization,
          location: { latitude: 1.5 },
        },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.name, `projects/${id}`);
      assert.equal(res.body.displayName, 'After');
      assert.equal(res.body.sensorCount, 0);
      assert.equal(res.body.inventory, false);
      assert.deepEqual(res.body.labels, {});
      assert.deepEqual(res.body.location, { latitude: 1.5, longitude: null, timeLocation: '' });
    });

    it('PATCH with update_mask or updateMask applies only the listed fields', async () => {
      const id = await t.createProject('Masked');
      const a = await t.request('PATCH', `/v2/projects/${id}?update_mask=location`, {
        body: { displayName: '', location: { latitude: 10, longitude: 20, timeLocation: 'UTC' } },
      });
      assert.equal(a.status, 200);
      assert.equal(a.body.displayName, 'Masked');
      assert.deepEqual(a.body.location, { latitude: 10, longitude: 20, timeLocation: 'UTC' });
      const b = await t.request('PATCH', `/v2/projects/${id}?updateMask=displayName,location.timeLocation`, {
        body: { displayName: 'Renamed', location: { latitude: 0, timeLocation: 'Europe/Paris' } },
      });
      assert.equal(b.status, 200);
      assert.equal(b.body.displayName, 'Renamed');
      assert.deepEqual(b.body.location, { latitude: 10, longitude: 20, timeLocation: 'Europe/Paris' });
      const c = await t.request('PATCH', `/v2/projects/${id}?update_mask=display_name,sensorCount`, {
        body: { displayName: 'Snake' },
      });
      assert.equal(c.body.displayName, 'Snake');
      const empty = await t.request('PATCH', `/v2/projects/${id}?update_mask=`, { body: { displayName: 'EmptyMask' } });
      assert.equal(empty.body.displayName, 'EmptyMask');
    });

    it('DELETE removes an empty project with its service accounts, keys and memberships', async () => {
      const id = await t.createProject('Doomed');
      const owned = await t.createServiceAccount({
        projectId: id,
        roles: ['roles/project.developer'],
        memberOf: t.projectId,
      });
      const member = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: id });
      // Notification rules and contacts (extensions §X5) go with the project.
      const rule = await t.request('POST', `/v2/projects/${id}/rules`, {
        body: {
          trigger: { field: 'touch' },
          escalationLevels: [{ actions: [{ type: 'WEBHOOK', webhook: { url: 'https://example.org/a' } }] }],
        },
      });
      assert.equal(rule.status, 200, rule.text);
      const contact = await t.request('POST', `/v2/projects/${id}/contacts`, {
        body: { displayName: 'Kari', email: 'kari@example.org' },
      });
      assert.equal(contact.status, 200, contact.text);
      const res = await t.request('DELETE', `/v2/projects/${id}`);
      assert.equal(res.status, 200);
      assert.equal(await t.deps.store.rules.get(rule.body.name.split('/').pop()), null);
      assert.equal(await t.deps.store.contacts.get(contact.body.name.split('/').pop()), null);
      assert.deepEqual(res.body, {});
      assert.equal((await t.request('GET', `/v2/projects/${id}`)).status, 404);
      assert.equal(await t.deps.store.serviceAccounts.get(owned.id), null);
      assert.equal(await t.deps.store.keys.get(owned.keyId), null);
      assert.deepEqual(await t.deps.store.memberships.listByMember(owned.id), []);
      assert.deepEqual(await t.deps.store.memberships.listByMember(member.id), []);
      assert.equal((await t.request('GET', '/v2/roles', { auth: owned.auth })).status, 401);
      assert.ok(await t.deps.store.serviceAccounts.get(member.id), 'members owned elsewhere stay');
    });

    it('GET permissions lists the effective permissions sorted, paged', async () => {
      const admin = await t.request('GET', `/v2/projects/${t.projectId}/permissions`);
      assert.equal(admin.status, 200);
      assert.ok(admin.body.permissions.includes('project.delete'));
      assert.deepEqual(admin.body.permissions, [...admin.body.permissions].sort());
      assert.equal(admin.body.nextPageToken, '');
      const user = await t.createServiceAccount({ roles: ['roles/project.user'] });
      const mine = await t.request('GET', `/v2/projects/${t.projectId}/permissions`, { auth: user.auth });
      assert.deepEqual(mine.body.permissions, [
        'dataconnector.read',
        'device.read',
        'emulator.read',
        'membership.read',
        'project.read',
        'sensor.read',
      ]);
      const first = await t.request('GET', `/v2/projects/${t.projectId}/permissions?page_size=4`, { auth: user.auth });
      assert.equal(first.body.permissions.length, 4);
      const second = await t.request(
        'GET',
        `/v2/projects/${t.projectId}/permissions?page_size=4&page_token=${first.body.nextPageToken}`,
        { auth: user.auth },
      );
      assert.deepEqual([...first.body.permissions, ...second.body.permissions], mine.body.permissions);
      assert.equal(second.body.nextPageToken, '');
    });

    it('projects:batchUpdate adds and removes labels on several projects', async () => {
      const a = await t.createProject('A');
      const b = await t.createProject('B');
      const add = await t.request('POST', '/v2/projects:batchUpdate', {
        body: { projects: [`projects/${a}`, `projects/${b}`], addLabels: { env: 'prod', team: 'ops' } },
      });
      assert.equal(add.status, 200);
      assert.deepEqual(add.body, {});
      assert.deepEqual((await t.request('GET', `/v2/projects/${b}`)).body.labels, { env: 'prod', team: 'ops' });
      const rm = await t.request('POST', '/v2/projects%3AbatchUpdate', {
        body: { projects: [`projects/${a}`], removeLabels: ['team', 'absent'], addLabels: { env: 'dev' } },
      });
      assert.equal(rm.status, 200);
      assert.deepEqual((await t.request('GET', `/v2/projects/${a}`)).body.labels, { env: 'dev' });
    });
  });

  describe('listing and paging', () => {
    let lt: TestContext;
    let ids: string[];
    before(async () => {
      lt = await createTestContext();
      ids = [];
      for (const name of ['Alpha site', 'beta SITE', 'Gamma', 'Delta']) ids.push(await lt.createProject(name));
    });
    after(() => lt.close());

    it('pages in creation order with nextPageToken (snake_case and camelCase)', async () => {
      const seen: string[] = [];
      let token = '';
      for (let i = 0; i < 10; i++) {
        const res = await lt.request(
          'GET',
          `/v2/projects?${i % 2 ? 'pageSize' : 'page_size'}=2&${i % 2 ? 'pageToken' : 'page_token'}=${token}`,
        );
        assert.equal(res.status, 200);
        assert.ok(res.body.projects.length <= 2);
        seen.push(...res.body.projects.map((p: { name: string }) => p.name));
        token = res.body.nextPageToken;
        if (token === '') break;
      }
      assert.deepEqual(
        seen,
        [lt.projectId, ...ids].map((id) => `projects/${id}`),
      );
    });

    it('the last full page has an empty nextPageToken', async () => {
      const res = await lt.request('GET', '/v2/projects?pageSize=5');
      assert.equal(res.body.projects.length, 5);
      assert.equal(res.body.nextPageToken, '');
    });

    it('filters by query (case-insensitive) and organization', async () => {
      const q = await lt.request('GET', '/v2/projects?query=SITE');
      assert.deepEqual(
        q.body.projects.map((p: { displayName: string }) => p.displayName),
        ['Alpha site', 'beta SITE'],
      );
      const org = await lt.request('GET', `/v2/projects?organization=${lt.boot.organization}&query=gam`);
      assert.deepEqual(
        org.body.projects.map((p: { displayName: string }) => p.displayName),
        ['Gamma'],
      );
      const other = await lt.request('GET', '/v2/projects?organization=organizations/nope');
      assert.deepEqual(other.body, { projects: [], nextPageToken: '' });
    });

    it('a page token issued for other filters is refused', async () => {
      const first = await lt.request('GET', '/v2/projects?pageSize=1&query=site');
      assert.notEqual(first.body.nextPageToken, '');
      assert.equal(
        (await lt.request('GET', `/v2/projects?pageSize=1&pageToken=${first.body.nextPageToken}`)).status,
        400,
      );
    });

    it('a project member lists only its own projects', async () => {
      const sa = await lt.createServiceAccount({ roles: ['roles/project.user'], memberOf: ids[2] });
      const res = await lt.request('GET', '/v2/projects', { auth: sa.auth });
      assert.deepEqual(res.body, {
        projects: [(await lt.request('GET', `/v2/projects/${ids[2]}`)).body],
        nextPageToken: '',
      });
      const none = await lt.createServiceAccount();
      assert.deepEqual((await lt.request('GET', '/v2/projects', { auth: none.auth })).body, {
        projects: [],
        nextPageToken: '',
      });
    });
  });

  describe('errors', () => {
    it('create validates displayName, organization and location', async () => {
      const org = t.boot.organization;
      const cases: unknown[] = [
        { organization: org },
        { organization: org, displayName: '' },
        { organization: org, displayName: 'x'.repeat(257) },
        { organization: org, displayName: 42 },
        { displayName: 'No org' },
        { organization: 7, displayName: 'x' },
        { organization: 'projects/x/y', displayName: 'x' },
        { organization: org, displayName: 'x', location: { latitude: 91 } },
        { organization: org, displayName: 'x', location: { longitude: -181 } },
        { organization: org, displayName: 'x', location: { latitude: '12' } },
        { organization: org, displayName: 'x', location: 'here' },
      ];
      for (const body of cases) {
        const res = await create(body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.code, 400);
      }
      assert.equal((await create({ organization: org, displayName: 'x'.repeat(256) })).status, 200);
    });

    it('malformed and missing bodies are 400', async () => {
      assert.equal((await t.request('POST', '/v2/projects', { rawBody: '{"displayName":' })).status, 400);
      assert.equal((await t.request('POST', '/v2/projects', { rawBody: '[1,2]' })).status, 400);
      assert.equal((await t.request('POST', '/v2/projects')).status, 400);
      assert.equal((await t.request('PATCH', `/v2/projects/${t.projectId}`, { rawBody: 'nope' })).status, 400);
    });

    it('creating in an unknown organization is 404', async () => {
      assert.equal(
        (await create({ organization: 'organizations/d0000000000000000000', displayName: 'x' })).status,
        404,
      );
    });

    it('PATCH refuses a differing organization, unknown mask paths and invalid values', async () => {
      const id = await t.createProject('Patchy');
      const url = `/v2/projects/${id}`;
      assert.equal((await t.request('PATCH', url, { body: { organization: 'organizations/other' } })).status, 400);
      assert.equal((await t.request('PATCH', `${url}?update_mask=color`, { body: { displayName: 'x' } })).status, 400);
      assert.equal((await t.request('PATCH', `${url}?update_mask=displayName`, { body: {} })).status, 400);
      assert.equal((await t.request('PATCH', url, { body: { displayName: '' } })).status, 400);
      assert.equal((await t.request('PATCH', url, { body: { displayName: ['x'] } })).status, 400);
      assert.equal((await t.request('PATCH', url, { body: { location: { latitude: -90.5 } } })).status, 400);
      assert.equal((await t.request('GET', url)).body.displayName, 'Patchy');
    });

    it('DELETE is refused while a device remains', async () => {
      const id = await t.createProject('Busy');
      const device = await t.createDevice({ projectId: id });
      const res = await t.request('DELETE', `/v2/projects/${id}`);
      assert.equal(res.status, 400);
      assert.match(res.body.error, /device/);
      assert.ok(await t.deps.store.devices.get(device.id));
      assert.equal((await t.request('GET', `/v2/projects/${id}`)).status, 200);
    });

    it('DELETE is refused while a data connector remains', async () => {
      const id = await t.createProject('Connected');
      const now = nowMicros(t.deps);
      await t.deps.store.dataConnectors.create({
        id: t.deps.ids.next(),
        projectId: id,
        displayName: '',
        status: 'ACTIVE',
        events: [],
        labels: [],
        url: 'https://example.org',
        headers: {},
        signatureSecretSealed: '',
        failingSince: null,
        createTime: now,
        updateTime: now,
      });
      const res = await t.request('DELETE', `/v2/projects/${id}`);
      assert.equal(res.status, 400);
      assert.match(res.body.error, /data connector/);
    });

    it('DELETE refuses to remove the last organization admin with the project', async () => {
      const lt = await createTestContext();
      try {
        // The bootstrap user and service account are the two admins; drop the user's admin membership.
        const users = (
          await lt.deps.store.memberships.listByScope('organization', lt.organizationId, { limit: 10 })
        ).filter((m) => m.accountType === 'USER');
        for (const m of users) await lt.deps.store.memberships.delete('organization', lt.organizationId, m.memberId);
        const res = await lt.request('DELETE', `/v2/projects/${lt.projectId}`);
        assert.equal(res.status, 400);
        assert.match(res.body.error, /last organization administrator/);
      } finally {
        await lt.close();
      }
    });

    it("'-' is refused on every single-project route", async () => {
      for (const [m, u] of [
        ['GET', '/v2/projects/-'],
        ['PATCH', '/v2/projects/-'],
        ['DELETE', '/v2/projects/-'],
        ['GET', '/v2/projects/-/permissions'],
      ] as const) {
        const res = await t.request(m, u, { body: m === 'PATCH' ? { displayName: 'x' } : undefined });
        assert.equal(res.status, 400, `${m} ${u}`);
      }
      assert.equal(
        (
          await t.request('POST', '/v2/projects:batchUpdate', {
            body: { projects: ['projects/-'], addLabels: { a: 'b' } },
          })
        ).status,
        400,
      );
    });

    it('unknown projects are 404 whatever the id format', async () => {
      for (const id of ['d0000000000000000000', 'not-an-id', 'x'.repeat(300)]) {
        assert.equal((await t.request('GET', `/v2/projects/${id}`)).status, 404);
        assert.equal((await t.request('DELETE', `/v2/projects/${id}`)).status, 404);
      }
    });

    it('batchUpdate validates its body and is all or nothing', async () => {
      const a = await t.createProject('Batch A');
      const p = `projects/${a}`;
      assert.equal((await t.request('POST', '/v2/projects:batchUpdate', { body: { projects: [p] } })).status, 400);
      assert.equal(
        (await t.request('POST', '/v2/projects:batchUpdate', { body: { projects: [], addLabels: { a: 'b' } } })).status,
        400,
      );
      assert.equal(
        (await t.request('POST', '/v2/projects:batchUpdate', { body: { projects: p, addLabels: { a: 'b' } } })).status,
        400,
      );
      assert.equal(
        (await t.request('POST', '/v2/projects:batchUpdate', { body: { projects: [p], addLabels: { 'a/b': 'c' } } }))
          .status,
        400,
      );
      assert.equal(
        (await t.request('POST', '/v2/projects:batchUpdate', { body: { projects: [p], addLabels: { a: 1 } } })).status,
        400,
      );
      assert.equal(
        (await t.request('POST', '/v2/projects:batchUpdate', { body: { projects: [p], removeLabels: 'a' } })).status,
        400,
      );
      const res = await t.request('POST', '/v2/projects:batchUpdate', {
        body: { projects: [p, 'projects/d0000000000000000000'], addLabels: { a: 'b' } },
      });
      assert.equal(res.status, 404);
      assert.deepEqual((await t.request('GET', `/v2/${p}`)).body.labels, {});
    });

    it('bad paging parameters are 400', async () => {
      assert.equal((await t.request('GET', '/v2/projects?pageSize=-3')).status, 400);
      assert.equal((await t.request('GET', '/v2/projects?page_size=abc')).status, 400);
      assert.equal((await t.request('GET', '/v2/projects?pageToken=%%%')).status, 400);
    });
  });

  describe('security', () => {
    it('requires credentials', async () => {
      assert.equal((await t.request('GET', '/v2/projects', { auth: null })).status, 401);
      assert.equal(
        (
          await t.request('POST', '/v2/projects', {
            auth: null,
            body: { organization: t.boot.organization, displayName: 'x' },
          })
        ).status,
        401,
      );
    });

    it('a project user reads but cannot change or delete (403); a stranger gets 404', async () => {
      const id = await t.createProject('Guarded');
      const user = await t.createServiceAccount({ roles: ['roles/project.user'], memberOf: id });
      const stranger = await t.createServiceAccount();
      assert.equal((await t.request('GET', `/v2/projects/${id}`, { auth: user.auth })).status, 200);
      assert.equal(
        (await t.request('PATCH', `/v2/projects/${id}`, { auth: user.auth, body: { displayName: 'x' } })).status,
        403,
      );
      assert.equal((await t.request('DELETE', `/v2/projects/${id}`, { auth: user.auth })).status, 403);
      for (const [m, u] of [
        ['GET', `/v2/projects/${id}`],
        ['PATCH', `/v2/projects/${id}`],
        ['DELETE', `/v2/projects/${id}`],
        ['GET', `/v2/projects/${id}/permissions`],
      ] as const) {
        assert.equal(
          (await t.request(m, u, { auth: stranger.auth, body: m === 'PATCH' ? { displayName: 'x' } : undefined }))
            .status,
          404,
          `${m} ${u}`,
        );
      }
      assert.equal((await t.request('GET', `/v2/projects/${id}`)).body.displayName, 'Guarded');
    });

    it('a project admin can update and delete its project but not create projects (403)', async () => {
      const id = await t.createProject('Own');
      const admin = await t.createServiceAccount({ roles: ['roles/project.admin'], memberOf: id });
      assert.equal(
        (await t.request('PATCH', `/v2/projects/${id}`, { auth: admin.auth, body: { displayName: 'Mine' } })).status,
        200,
      );
      assert.equal((await create({ organization: t.boot.organization, displayName: 'x' }, admin.auth)).status, 403);
      const stranger = await t.createServiceAccount();
      assert.equal((await create({ organization: t.boot.organization, displayName: 'x' }, stranger.auth)).status, 404);
      assert.equal((await t.request('DELETE', `/v2/projects/${id}`, { auth: admin.auth })).status, 200);
    });

    it('batchUpdate needs project.update on every project: nothing changes otherwise', async () => {
      const mine = await t.createProject('Mine');
      const theirs = await t.createProject('Theirs');
      const dev = await t.createServiceAccount({ roles: ['roles/project.admin'], memberOf: mine });
      await t.deps.store.memberships.create({
        scopeType: 'project',
        scopeId: theirs,
        memberId: dev.id,
        accountType: 'SERVICE_ACCOUNT',
        roles: ['roles/project.developer'],
        status: 'ACCEPTED',
        createTime: nowMicros(t.deps),
      });
      const res = await t.request('POST', '/v2/projects:batchUpdate', {
        auth: dev.auth,
        body: { projects: [`projects/${mine}`, `projects/${theirs}`], addLabels: { a: 'b' } },
      });
      assert.equal(res.status, 403);
      assert.deepEqual((await t.request('GET', `/v2/projects/${mine}`)).body.labels, {});
      const hidden = await t.createProject('Hidden');
      assert.equal(
        (
          await t.request('POST', '/v2/projects:batchUpdate', {
            auth: dev.auth,
            body: { projects: [`projects/${hidden}`], addLabels: { a: 'b' } },
          })
        ).status,
        404,
      );
    });

    it('a pending membership grants nothing', async () => {
      const id = await t.createProject('Pending');
      const sa = await t.createServiceAccount();
      await t.deps.store.memberships.create({
        scopeType: 'project',
        scopeId: id,
        memberId: sa.id,
        accountType: 'SERVICE_ACCOUNT',
        roles: ['roles/project.admin'],
        status: 'PENDING',
        createTime: nowMicros(t.deps),
      });
      assert.equal((await t.request('GET', `/v2/projects/${id}`, { auth: sa.auth })).status, 404);
    });
  });
});
