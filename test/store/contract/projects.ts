// Store contract: organizations and projects (lists, filters, counts, the cascade of a project delete).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { ProjectListFilter } from '../../../src/store/contract/store.ts';
import {
  connector,
  device,
  key,
  membership,
  organization,
  project,
  seedProject,
  serviceAccount,
  T0,
  user,
  useStore,
  withFreshStore,
  type OpenStore,
} from './fixtures.ts';

export function organizationContract(open: OpenStore): void {
  describe('organizations', () => {
    const store = useStore(open);

    it('round-trips an organization; an unknown id is null', async () => {
      const o = organization({ displayName: 'Örg ☃' });
      await store().organizations.create(o);
      assert.deepEqual(await store().organizations.get(o.id), o);
      assert.equal(await store().organizations.get('missing'), null);
    });

    it('lists only the given organizations, in id order whatever the order given, keyset-paged', async () => {
      const [a, b, c, d] = [organization(), organization(), organization(), organization()];
      for (const o of [a, b, c, d]) await store().organizations.create(o);
      const ids = [c.id, a.id, 'missing', d.id];
      assert.deepEqual(
        (await store().organizations.list(ids, { limit: 10 })).map((o) => o.id),
        [a.id, c.id, d.id],
      );
      assert.deepEqual(await store().organizations.list(ids, { limit: 2 }), [a, c]);
      assert.deepEqual(
        (await store().organizations.list(ids, { after: a.id, limit: 10 })).map((o) => o.id),
        [c.id, d.id],
      );
      assert.deepEqual(await store().organizations.list(ids, { after: d.id, limit: 10 }), []);
      assert.deepEqual(await store().organizations.list([], { limit: 10 }), []);
    });

    it('counts every organization', () =>
      withFreshStore(open, async (s) => {
        assert.equal(await s.organizations.count(), 0);
        for (let i = 0; i < 3; i++) await s.organizations.create(organization());
        assert.equal(await s.organizations.count(), 3);
      }));
  });
}

export function projectContract(open: OpenStore): void {
  describe('projects', () => {
    const store = useStore(open);

    it('round-trips a project with its location and labels; an unknown id is null', async () => {
      const org = organization({ displayName: 'Org A' });
      await store().organizations.create(org);
      const p = project(org.id, {
        displayName: 'Röom ☃',
        location: { latitude: 1.5, longitude: -2, timeLocation: 'Europe/Oslo' },
        labels: { k: 'v', '': '' },
      });
      await store().projects.create(p);
      assert.deepEqual(await store().projects.get(p.id), p);
      assert.equal(await store().projects.get('missing'), null);
      assert.deepEqual(await store().projects.getWithCounts(p.id), {
        ...p,
        organizationDisplayName: 'Org A',
        sensorCount: 0,
        cloudConnectorCount: 0,
      });
      assert.equal(await store().projects.getWithCounts('missing'), null);
    });

    it('update writes the display name, location, labels and update time', async () => {
      const p = await seedProject(store());
      const next = {
        ...p,
        displayName: 'Renamed',
        location: { latitude: 59.9, longitude: 10.7, timeLocation: 'Europe/Oslo' },
        labels: { x: 'y' },
        updateTime: T0 + 5,
      };
      await store().projects.update(next);
      assert.deepEqual(await store().projects.get(p.id), next);
      assert.equal((await store().projects.getWithCounts(p.id))?.displayName, 'Renamed');
    });

    it('counts sensors and cloud connectors (type ccon) per project, and its devices and data connectors', async () => {
      const p = await seedProject(store());
      await store().devices.create(device(p.id));
      await store().devices.create(device(p.id, { type: 'touch' }));
      await store().devices.create(device(p.id, { type: 'ccon' }));
      await store().dataConnectors.create(connector(p.id));
      const counted = await store().projects.getWithCounts(p.id);
      assert.deepEqual([counted?.sensorCount, counted?.cloudConnectorCount], [2, 1]);
      assert.deepEqual(await store().projects.countContents(p.id), { devices: 3, dataConnectors: 1 });
      assert.deepEqual(await store().projects.countContents('missing'), { devices: 0, dataConnectors: 0 });
    });

    describe('list', () => {
      // Two organizations: a, b and c in the first, d and e in the second.
      const o1 = organization({ displayName: 'First' });
      const o2 = organization({ displayName: 'Second' });
      const [a, b, c] = [
        project(o1.id, { displayName: 'Alpha' }),
        project(o1.id, { displayName: 'beta' }),
        project(o1.id, { displayName: 'ALPHABET' }),
      ];
      const [d, e] = [project(o2.id, { displayName: 'Delta' }), project(o2.id, { displayName: 'Ölhafen' })];
      const list = async (
        filter: Partial<ProjectListFilter>,
        range: { after?: string | null; limit: number } = { limit: 100 },
      ) => (await store().projects.list({ projectIds: [], organizationIds: [], ...filter }, range)).map((p) => p.id);
      before(async () => {
        for (const o of [o1, o2]) await store().organizations.create(o);
        for (const p of [a, b, c, d, e]) await store().projects.create(p);
      });

      it('finds projects through direct membership, in id order', async () => {
        assert.deepEqual(await list({ projectIds: [d.id, a.id] }), [a.id, d.id]);
        assert.deepEqual(await list({}), [], 'no scope: nothing');
      });

      it('finds every project of the organizations given', async () => {
        assert.deepEqual(await list({ organizationIds: [o2.id] }), [d.id, e.id]);
      });

      it('unites both scopes, each project once', async () => {
        assert.deepEqual(await list({ projectIds: [a.id, d.id], organizationIds: [o2.id] }), [a.id, d.id, e.id]);
      });

      it('restricts to one organization', async () => {
        assert.deepEqual(await list({ projectIds: [a.id, d.id], organizationIds: [o2.id], organizationId: o1.id }), [
          a.id,
        ]);
        assert.deepEqual(await list({ organizationIds: [o1.id, o2.id], organizationId: o2.id }), [d.id, e.id]);
      });

      it('filters on a case-insensitive substring of the display name', async () => {
        const all = { organizationIds: [o1.id, o2.id] };
        assert.deepEqual(await list({ ...all, query: 'alpha' }), [a.id, c.id]);
        assert.deepEqual(await list({ ...all, query: 'TA' }), [b.id, d.id]);
        assert.deepEqual(await list({ ...all, query: 'öL' }), [e.id], 'beyond ASCII too');
        assert.deepEqual(await list({ ...all, query: 'alpha', organizationId: o2.id }), []);
        assert.deepEqual(await list({ ...all, query: 'zzz' }), []);
      });

      it('takes the query literally: % and _ are characters, not patterns', async () => {
        const org = organization();
        await store().organizations.create(org);
        const [percent, digits, underscore, letter] = ['100% sure', '1000 sure', 'a_b', 'axb'].map((displayName) =>
          project(org.id, { displayName }),
        );
        for (const p of [percent, digits, underscore, letter]) await store().projects.create(p);
        const mine = { organizationIds: [org.id] };
        assert.deepEqual(await list({ ...mine, query: '0%' }), [percent.id]);
        assert.deepEqual(await list({ ...mine, query: 'a_b' }), [underscore.id]);
        assert.deepEqual(await list({ ...mine, query: '%' }), [percent.id]);
      });

      it('pages by id: rows strictly after `after`, at most `limit`', async () => {
        const all = { organizationIds: [o1.id, o2.id] };
        assert.deepEqual(await list(all, { limit: 2 }), [a.id, b.id]);
        assert.deepEqual(await list(all, { after: b.id, limit: 2 }), [c.id, d.id]);
        assert.deepEqual(await list(all, { after: d.id, limit: 2 }), [e.id]);
        assert.deepEqual(await list(all, { after: e.id, limit: 2 }), []);
        assert.deepEqual(await list({ ...all, query: 'alpha' }, { after: a.id, limit: 1 }), [c.id], 'after a filter');
      });

      it('carries the organization display name and the counts on each listed project', async () => {
        await store().devices.create(device(d.id, { type: 'ccon' }));
        await store().devices.create(device(d.id));
        await store().devices.create(device(d.id));
        const listed = await store().projects.list({ projectIds: [a.id, d.id], organizationIds: [] }, { limit: 10 });
        assert.deepEqual(listed, [
          { ...a, organizationDisplayName: 'First', sensorCount: 0, cloudConnectorCount: 0 },
          { ...d, organizationDisplayName: 'Second', sensorCount: 2, cloudConnectorCount: 1 },
        ]);
      });
    });

    it('delete takes the project, its service accounts with their keys and memberships, and its memberships', async () => {
      const p = await seedProject(store());
      const other = project(p.organizationId);
      await store().projects.create(other);
      const sa = serviceAccount(p.id);
      const otherSa = serviceAccount(other.id);
      const u = user();
      for (const s of [sa, otherSa]) await store().serviceAccounts.create(s);
      await store().users.create(u);
      const k = key(sa.id);
      const otherKey = key(otherSa.id);
      for (const x of [k, otherKey]) await store().keys.create(x);
      const memberships = [
        membership('project', p.id, sa.id, { accountType: 'SERVICE_ACCOUNT' }),
        membership('project', other.id, sa.id, { accountType: 'SERVICE_ACCOUNT' }), // the deleted project's account elsewhere
        membership('organization', p.organizationId, sa.id, {
          accountType: 'SERVICE_ACCOUNT',
          roles: ['roles/organization.admin'],
        }),
        membership('project', p.id, u.id),
        membership('project', p.id, otherSa.id, { accountType: 'SERVICE_ACCOUNT' }),
        membership('project', other.id, u.id),
        membership('project', other.id, otherSa.id, { accountType: 'SERVICE_ACCOUNT' }),
      ];
      for (const m of memberships) await store().memberships.create(m);

      const version = await store().authVersion();
      await store().projects.delete(p.id);
      assert.notEqual(await store().authVersion(), version, 'principals may have changed');
      assert.equal(await store().projects.get(p.id), null);
      assert.equal(await store().projects.getWithCounts(p.id), null);
      assert.equal(await store().serviceAccounts.get(sa.id), null);
      assert.equal(await store().keys.get(k.id), null);
      assert.equal(await store().keys.countByServiceAccount(sa.id), 0);
      assert.deepEqual(await store().memberships.listByMember(sa.id), []);
      assert.deepEqual(await store().memberships.listByScope('project', p.id, { limit: 10 }), []);
      // What belongs to the other project stays, and so does the user.
      assert.deepEqual(await store().projects.get(other.id), other);
      assert.deepEqual(await store().serviceAccounts.get(otherSa.id), otherSa);
      assert.deepEqual(await store().keys.get(otherKey.id), otherKey);
      assert.deepEqual(await store().users.get(u.id), u);
      assert.deepEqual(
        (await store().memberships.listByMember(u.id)).map((m) => m.scopeId),
        [other.id],
      );
      assert.deepEqual(
        (await store().memberships.listByMember(otherSa.id)).map((m) => m.scopeId),
        [other.id],
      );
    });
  });
}
