// Store contract: users, service accounts, keys, memberships, invitations, and authVersion (which must move on
// every write that can change whom a credential authenticates as, and stay put under event traffic).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../../src/store/contract/store.ts';
import {
  connector,
  device,
  event,
  id,
  key,
  membership,
  organization,
  project,
  row,
  seedProject,
  serviceAccount,
  T0,
  user,
  useStore,
  type OpenStore,
} from './fixtures.ts';

export function accountContract(open: OpenStore): void {
  describe('users', () => {
    const store = useStore(open);

    it('round-trips a user, found by id and by email in any case; unknown ones are null', async () => {
      const u = user({
        email: 'ada.lovelace@example.com',
        displayName: 'Ada',
        passwordHash: 'scrypt$x',
        active: false,
      });
      await store().users.create(u);
      assert.deepEqual(await store().users.get(u.id), u);
      assert.deepEqual(await store().users.getByEmail('Ada.Lovelace@EXAMPLE.com'), u);
      assert.equal(await store().users.get('missing'), null);
      assert.equal(await store().users.getByEmail('nobody@example.com'), null);
    });

    it('update writes the display name, password hash, active flag and update time', async () => {
      const u = user({ active: false });
      await store().users.create(u);
      const next = { ...u, displayName: 'Grace', passwordHash: 'scrypt$y', active: true, updateTime: T0 + 1 };
      await store().users.update(next);
      assert.deepEqual(await store().users.get(u.id), next);
      await store().users.update({ ...next, passwordHash: null, updateTime: T0 + 2 });
      assert.equal((await store().users.get(u.id))?.passwordHash, null);
    });
  });

  describe('service accounts and keys', () => {
    const store = useStore(open);

    it('round-trips a service account, found by id and by email in any case', async () => {
      const p = await seedProject(store());
      const sa = serviceAccount(p.id, { enableBasicAuth: false, displayName: 'Ingest' });
      await store().serviceAccounts.create(sa);
      assert.deepEqual(await store().serviceAccounts.get(sa.id), sa);
      assert.deepEqual(await store().serviceAccounts.getByEmail(sa.email.toUpperCase()), sa);
      assert.equal(await store().serviceAccounts.get('missing'), null);
      assert.equal(await store().serviceAccounts.getByEmail('missing@example.com'), null);
    });

    it('update writes the display name, basic-auth flag and update time', async () => {
      const p = await seedProject(store());
      const sa = serviceAccount(p.id);
      await store().serviceAccounts.create(sa);
      const next = { ...sa, displayName: 'Renamed', enableBasicAuth: false, updateTime: T0 + 1 };
      await store().serviceAccounts.update(next);
      assert.deepEqual(await store().serviceAccounts.get(sa.id), next);
    });

    it("lists a project's service accounts in id order, keyset-paged", async () => {
      const p = await seedProject(store());
      const elsewhere = await seedProject(store());
      const [a, b, c] = [serviceAccount(p.id), serviceAccount(elsewhere.id), serviceAccount(p.id)];
      const d = serviceAccount(p.id);
      for (const sa of [d, c, b, a]) await store().serviceAccounts.create(sa);
      assert.deepEqual(await store().serviceAccounts.listByProject(p.id, { limit: 10 }), [a, c, d]);
      assert.deepEqual(
        (await store().serviceAccounts.listByProject(p.id, { limit: 2 })).map((s) => s.id),
        [a.id, c.id],
      );
      assert.deepEqual(
        (await store().serviceAccounts.listByProject(p.id, { after: c.id, limit: 2 })).map((s) => s.id),
        [d.id],
      );
      assert.deepEqual(await store().serviceAccounts.listByProject('missing', { limit: 10 }), []);
    });

    it('round-trips keys; lists and counts them per account, keyset-paged; delete removes one', async () => {
      const p = await seedProject(store());
      const sa = serviceAccount(p.id);
      const other = serviceAccount(p.id);
      for (const s of [sa, other]) await store().serviceAccounts.create(s);
      const [k1, k2, k3] = [key(sa.id, { secretEnc: 'one' }), key(sa.id), key(sa.id)];
      const otherKey = key(other.id);
      for (const k of [k3, otherKey, k1, k2]) await store().keys.create(k);
      assert.deepEqual(await store().keys.get(k1.id), k1);
      assert.equal(await store().keys.get('missing'), null);
      assert.deepEqual(await store().keys.listByServiceAccount(sa.id, { limit: 10 }), [k1, k2, k3]);
      assert.deepEqual(
        (await store().keys.listByServiceAccount(sa.id, { after: k1.id, limit: 1 })).map((k) => k.id),
        [k2.id],
      );
      assert.equal(await store().keys.countByServiceAccount(sa.id), 3);
      await store().keys.delete(k2.id);
      assert.equal(await store().keys.get(k2.id), null);
      assert.deepEqual(
        (await store().keys.listByServiceAccount(sa.id, { limit: 10 })).map((k) => k.id),
        [k1.id, k3.id],
      );
      assert.equal(await store().keys.countByServiceAccount(sa.id), 2);
      assert.equal(await store().keys.countByServiceAccount(other.id), 1);
    });

    it('delete takes the account with its keys and its memberships everywhere, and nothing else', async () => {
      const p = await seedProject(store());
      const other = project(p.organizationId);
      await store().projects.create(other);
      const sa = serviceAccount(p.id);
      const keep = serviceAccount(p.id);
      for (const s of [sa, keep]) await store().serviceAccounts.create(s);
      for (const k of [key(sa.id), key(sa.id), key(keep.id)]) await store().keys.create(k);
      const sam = (scopeType: 'project' | 'organization', scopeId: string, memberId: string) =>
        membership(scopeType, scopeId, memberId, { accountType: 'SERVICE_ACCOUNT' });
      for (const m of [
        sam('project', p.id, sa.id),
        sam('project', other.id, sa.id),
        sam('organization', p.organizationId, sa.id),
        sam('project', p.id, keep.id),
      ]) {
        await store().memberships.create(m);
      }
      await store().serviceAccounts.delete(sa.id);
      assert.equal(await store().serviceAccounts.get(sa.id), null);
      assert.equal(await store().serviceAccounts.getByEmail(sa.email), null);
      assert.equal(await store().keys.countByServiceAccount(sa.id), 0);
      assert.deepEqual(await store().memberships.listByMember(sa.id), []);
      assert.deepEqual(await store().serviceAccounts.get(keep.id), keep);
      assert.equal(await store().keys.countByServiceAccount(keep.id), 1);
      assert.equal((await store().memberships.listByMember(keep.id)).length, 1);
      assert.deepEqual(await store().projects.get(p.id), p);
    });
  });

  describe('memberships', () => {
    const store = useStore(open);
    /** A stored user's id, as a member. */
    const member = async () => {
      const u = user();
      await store().users.create(u);
      return u.id;
    };

    it('round-trips a membership by scope and member; unknown ones are null', async () => {
      const p = await seedProject(store());
      const u = user();
      await store().users.create(u);
      const m = membership('project', p.id, u.id, {
        roles: ['roles/project.user', 'roles/project.viewer'],
        status: 'PENDING',
        createTime: T0 + 3,
      });
      await store().memberships.create(m);
      assert.deepEqual(await store().memberships.get('project', p.id, u.id), m);
      assert.equal(
        await store().memberships.get('organization', p.id, u.id),
        null,
        'the scope type is part of the key',
      );
      assert.equal(await store().memberships.get('project', p.id, 'missing'), null);
    });

    it("lists one scope's memberships by creation time, then member id, after a [createTime, memberId] cursor", async () => {
      const p = await seedProject(store());
      const other = await seedProject(store());
      const [m1, m2, m3, m4, m5] = [await member(), await member(), await member(), await member(), await member()];
      // Created out of order; m2 and m3 share a creation time.
      const rows = [
        membership('project', p.id, m4, { createTime: 40 }),
        membership('project', p.id, m3, { createTime: 20 }),
        membership('project', p.id, m2, { createTime: 20 }),
        membership('project', p.id, m1, { createTime: 30 }),
        membership('organization', p.organizationId, m5, { createTime: 1 }),
        membership('project', other.id, m5, { createTime: 1 }),
      ];
      for (const m of rows) await store().memberships.create(m);
      const page = (after: [number, string] | null, limit: number) =>
        store()
          .memberships.listByScope('project', p.id, { after, limit })
          .then((ms) => ms.map((m) => m.memberId));
      assert.deepEqual(await page(null, 10), [m2, m3, m1, m4]);
      assert.deepEqual(await page(null, 2), [m2, m3]);
      assert.deepEqual(await page([20, m2], 2), [m3, m1], 'the cursor breaks a tie of creation times on the member id');
      assert.deepEqual(await page([30, m1], 2), [m4]);
      assert.deepEqual(await page([40, m4], 2), []);
      assert.deepEqual((await store().memberships.listByScope('project', p.id, { limit: 1 }))[0], rows[2]);
    });

    it('lists every membership of one member, of either scope', async () => {
      const p = await seedProject(store());
      const u = await member();
      const mine = [
        membership('project', p.id, u),
        membership('organization', p.organizationId, u, { roles: ['roles/organization.admin'] }),
      ];
      for (const m of [...mine, membership('project', p.id, await member())]) await store().memberships.create(m);
      const listed = await store().memberships.listByMember(u);
      assert.deepEqual(
        listed.map((m) => `${m.scopeType}/${m.scopeId}`).sort(),
        mine.map((m) => `${m.scopeType}/${m.scopeId}`).sort(),
      );
      assert.deepEqual(
        listed.find((m) => m.scopeType === 'organization'),
        mine[1],
      );
      assert.deepEqual(await store().memberships.listByMember('missing'), []);
    });

    it('updateRoles replaces the roles of one membership only', async () => {
      const p = await seedProject(store());
      const [u, v] = [await member(), await member()];
      const m = membership('project', p.id, u, { status: 'PENDING' });
      for (const x of [
        m,
        membership('project', p.id, v),
        membership('organization', p.organizationId, u, { roles: ['roles/organization.viewer'] }),
      ]) {
        await store().memberships.create(x);
      }
      await store().memberships.updateRoles('project', p.id, u, ['roles/project.admin', 'roles/project.viewer']);
      assert.deepEqual(await store().memberships.get('project', p.id, u), {
        ...m,
        roles: ['roles/project.admin', 'roles/project.viewer'],
      });
      assert.deepEqual((await store().memberships.get('project', p.id, v))?.roles, ['roles/project.user']);
      assert.deepEqual((await store().memberships.get('organization', p.organizationId, u))?.roles, [
        'roles/organization.viewer',
      ]);
    });

    it('delete removes one membership only', async () => {
      const p = await seedProject(store());
      const u = await member();
      for (const m of [membership('project', p.id, u), membership('organization', p.organizationId, u)])
        await store().memberships.create(m);
      await store().memberships.delete('project', p.id, u);
      assert.equal(await store().memberships.get('project', p.id, u), null);
      assert.ok(await store().memberships.get('organization', p.organizationId, u));
      await store().memberships.delete('project', p.id, u); // already gone: no error
    });

    it("acceptAll marks every PENDING membership of the member ACCEPTED, and no one else's", async () => {
      const p = await seedProject(store());
      const [u, v] = [await member(), await member()];
      const rows = [
        membership('project', p.id, u, { status: 'PENDING' }),
        membership('organization', p.organizationId, u, { status: 'PENDING' }),
        membership('project', p.id, v, { status: 'PENDING' }),
      ];
      for (const m of rows) await store().memberships.create(m);
      await store().memberships.acceptAll(u);
      assert.deepEqual(
        (await store().memberships.listByMember(u)).map((m) => m.status),
        ['ACCEPTED', 'ACCEPTED'],
      );
      assert.deepEqual(await store().memberships.get('project', p.id, u), { ...rows[0], status: 'ACCEPTED' });
      assert.equal((await store().memberships.get('project', p.id, v))?.status, 'PENDING');
    });

    it('accept marks one PENDING membership ACCEPTED, and says whether there was one', async () => {
      const p = await seedProject(store());
      const u = await member();
      const rows = [
        membership('project', p.id, u, { status: 'PENDING' }),
        membership('organization', p.organizationId, u, { status: 'PENDING' }),
      ];
      for (const m of rows) await store().memberships.create(m);
      assert.equal(await store().memberships.accept('project', p.id, u), true);
      assert.deepEqual(await store().memberships.get('project', p.id, u), { ...rows[0], status: 'ACCEPTED' });
      assert.equal((await store().memberships.get('organization', p.organizationId, u))?.status, 'PENDING');
      assert.equal(await store().memberships.accept('project', p.id, u), false, 'accepted already');
      assert.equal(await store().memberships.accept('project', 'missing', u), false);
    });

    it('counts the ACCEPTED organization admins of one organization only', async () => {
      const p = await seedProject(store());
      const org = p.organizationId;
      const otherOrg = organization();
      await store().organizations.create(otherOrg);
      const admin = ['roles/organization.admin'];
      for (const m of [
        membership('organization', org, await member(), { roles: admin }),
        membership('organization', org, await member(), { roles: ['roles/organization.viewer', ...admin] }),
        membership('organization', org, await member(), { roles: admin, status: 'PENDING' }), // not accepted
        membership('organization', org, await member(), { roles: ['roles/organization.viewer'] }), // not an admin
        membership('organization', otherOrg.id, await member(), { roles: admin }), // another organization
        membership('project', p.id, await member(), { roles: admin }), // a project scope
      ])
        await store().memberships.create(m);
      assert.equal(await store().memberships.countAcceptedOrganizationAdmins(org), 2);
      assert.equal(await store().memberships.countAcceptedOrganizationAdmins(otherOrg.id), 1);
      assert.equal(await store().memberships.countAcceptedOrganizationAdmins('missing'), 0);
    });
  });

  describe('invites', () => {
    const store = useStore(open);

    it('round-trips an invitation by token hash; markUsed records when it was used', async () => {
      const u = user({ active: false });
      await store().users.create(u);
      const invite = {
        tokenHash: id('h'),
        userId: u.id,
        organizationId: id('o'),
        expireTime: T0 + 1000,
        usedTime: null,
      };
      await store().invites.create(invite);
      assert.deepEqual(await store().invites.get(invite.tokenHash), invite);
      const unscoped = { ...invite, tokenHash: id('h'), organizationId: null };
      await store().invites.create(unscoped);
      assert.deepEqual(await store().invites.get(unscoped.tokenHash), unscoped);
      assert.equal(await store().invites.get('missing'), null);
      assert.equal(await store().invites.markUsed(invite.tokenHash, T0 + 10), true);
      assert.deepEqual(await store().invites.get(invite.tokenHash), { ...invite, usedTime: T0 + 10 });
      assert.equal(await store().invites.markUsed(invite.tokenHash, T0 + 20), false, 'used already');
      assert.deepEqual(await store().invites.get(invite.tokenHash), { ...invite, usedTime: T0 + 10 });
    });

    it("revokeUnused marks the user's unused invitations of one organization (and unscoped ones) used and counts them", async () => {
      const [u, v] = [user({ active: false }), user({ active: false })];
      for (const x of [u, v]) await store().users.create(x);
      const [org, otherOrg] = [id('o'), id('o')];
      const invite = (userId: string, usedTime: number | null = null, organizationId: string | null = org) => ({
        tokenHash: id('h'),
        userId,
        organizationId,
        expireTime: T0 + 1000,
        usedTime,
      });
      const [open1, unscoped, used, others, otherOrgs] = [
        invite(u.id),
        invite(u.id, null, null),
        invite(u.id, T0 + 1),
        invite(v.id),
        invite(u.id, null, otherOrg),
      ];
      for (const i of [open1, unscoped, used, others, otherOrgs]) await store().invites.create(i);
      assert.equal(await store().invites.revokeUnused(u.id, org, T0 + 50), 2);
      assert.equal((await store().invites.get(open1.tokenHash))?.usedTime, T0 + 50);
      assert.equal((await store().invites.get(unscoped.tokenHash))?.usedTime, T0 + 50);
      assert.equal((await store().invites.get(used.tokenHash))?.usedTime, T0 + 1);
      assert.equal((await store().invites.get(others.tokenHash))?.usedTime, null);
      assert.equal(
        (await store().invites.get(otherOrgs.tokenHash))?.usedTime,
        null,
        "another organization's link stays",
      );
      assert.equal(await store().invites.revokeUnused(u.id, org, T0 + 60), 0);
    });
  });

  describe('authVersion', () => {
    const store = useStore(open);
    /** Whether `write` moved the version. */
    const moves = async (write: (s: Store) => Promise<unknown>) => {
      const before = await store().authVersion();
      await write(store());
      return (await store().authVersion()) !== before;
    };

    it('moves on every write to users, service accounts, keys and memberships, and on a project delete', async () => {
      const p = await seedProject(store());
      const u = user();
      const sa = serviceAccount(p.id);
      const k = key(sa.id);
      const m = membership('project', p.id, u.id, { status: 'PENDING' });
      const writes: Array<[string, (s: Store) => Promise<unknown>]> = [
        ['users.create', (s) => s.users.create(u)],
        ['users.update', (s) => s.users.update({ ...u, active: false })],
        ['serviceAccounts.create', (s) => s.serviceAccounts.create(sa)],
        ['serviceAccounts.update', (s) => s.serviceAccounts.update({ ...sa, enableBasicAuth: false })],
        ['keys.create', (s) => s.keys.create(k)],
        ['keys.delete', (s) => s.keys.delete(k.id)],
        ['memberships.create', (s) => s.memberships.create(m)],
        ['memberships.updateRoles', (s) => s.memberships.updateRoles('project', p.id, u.id, ['roles/project.admin'])],
        ['memberships.acceptAll', (s) => s.memberships.acceptAll(u.id)],
        [
          'memberships.accept',
          async (s) => {
            await s.memberships.create(membership('organization', p.organizationId, u.id, { status: 'PENDING' }));
            const created = await s.authVersion(); // the create moved it: the accept must move it again
            assert.equal(await s.memberships.accept('organization', p.organizationId, u.id), true);
            assert.notEqual(await s.authVersion(), created, 'accept moved it');
          },
        ],
        ['memberships.delete', (s) => s.memberships.delete('project', p.id, u.id)],
        ['serviceAccounts.delete', (s) => s.serviceAccounts.delete(sa.id)],
        ['projects.delete', (s) => s.projects.delete(p.id)],
        ['a write inside a transaction', (s) => s.transaction((tx) => tx.users.update({ ...u, displayName: 'in tx' }))],
      ];
      const stayed = [];
      for (const [name, write] of writes) if (!(await moves(write))) stayed.push(name);
      assert.deepEqual(stayed, []);
    });

    it('stays put on reads and on writes that cannot change a principal (devices, events, queue, metrics, projects, invitations)', async () => {
      const p = await seedProject(store());
      const u = user();
      await store().users.create(u);
      const d = device(p.id);
      const e = event(d, T0);
      const c = connector(p.id);
      const writes: Array<[string, (s: Store) => Promise<unknown>]> = [
        ['organizations.create', (s) => s.organizations.create(organization())],
        ['projects.create', (s) => s.projects.create(project(p.organizationId))],
        ['projects.update', (s) => s.projects.update({ ...p, displayName: 'x' })],
        ['devices.create', (s) => s.devices.create(d)],
        ['events.insert', (s) => s.events.insert(e)],
        [
          'devices.updateReported',
          (s) => s.devices.updateReported(d.id, { touch: {} }, { touch: [e.timestamp, e.id] }, T0 + 1),
        ],
        ['devices.updateLabels', (s) => s.devices.updateLabels(d.id, { b: '2' }, T0 + 2)],
        ['dataConnectors.create', (s) => s.dataConnectors.create(c)],
        ['dataConnectors.updateState', (s) => s.dataConnectors.updateState(c.id, 'ACTIVE', T0, T0 + 3)],
        ['deliveries.insert', (s) => s.deliveries.insert([row(c.id, T0)])],
        ['connectorMetrics.add', (s) => s.connectorMetrics.add(c.id, T0, 1, 0, new Map([['612', 1]]))],
        ['connectorMetrics.addCounters', (s) => s.connectorMetrics.addCounters({ 'x_total{outcome="ack"}': 1 })],
        [
          'invites.create',
          (s) =>
            s.invites.create({
              tokenHash: id('h'),
              userId: u.id,
              organizationId: p.organizationId,
              expireTime: T0,
              usedTime: null,
            }),
        ],
        [
          'an event in a transaction',
          (s) =>
            s.transaction(async (tx) => {
              await tx.events.insert(event(d, T0 + 5));
            }),
        ],
        [
          'reads',
          async (s) => {
            await s.users.get(u.id);
            await s.memberships.listByMember(u.id);
            await s.projects.list({ projectIds: [p.id], organizationIds: [] }, { limit: 1 });
          },
        ],
      ];
      const moved = [];
      for (const [name, write] of writes) if (await moves(write)) moved.push(name);
      assert.deepEqual(moved, [], 'the auth cache would be dropped by traffic that changes no principal');
    });
  });
}
