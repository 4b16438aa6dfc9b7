// Store contract: notification rules and alerts (extensions §X5; src/store/contract/alerting.ts): rules with the
// enabled list every publish reads (cached, and right after every write), contact groups and contacts, alerts with one
// open alert per rule and target, timers, the pending conditions, the outbox of notifications (claim, lease, fencing),
// and a rule's delete taking its alerts, conditions and notifications with it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AlertFilter, AlertRecord, OutboxRecord } from '../../../src/store/contract/alerting.ts';
import {
  alert,
  condition,
  contact,
  contactGroup,
  id,
  MINUTE,
  notification,
  organization,
  rule,
  SECOND,
  seedAlert,
  seedProject,
  seedRule,
  T0,
  useStore,
  withFreshStore,
  type OpenStore,
} from './fixtures.ts';

const ids = (records: ReadonlyArray<{ id: string | number }>) => records.map((r) => r.id);

export function alertingContract(open: OpenStore): void {
  describe('rules', () => {
    const store = useStore(open);

    it('round-trips a rule with its spec as given, enabled or not; an unknown id is null', async () => {
      const p = await seedProject(store());
      const r = rule(p.id, {
        displayName: 'Kühlschrank ☃',
        spec: '{"trigger": {"field": "temperature"},  "escalationLevels": [], "note": "as written ☃"}',
        createTime: T0 - 20,
        updateTime: T0 - 10,
      });
      const off = rule(p.id, { enabled: false });
      await store().rules.create(r);
      await store().rules.create(off);
      assert.deepEqual(await store().rules.get(r.id), r);
      assert.deepEqual(await store().rules.get(off.id), off);
      assert.equal(await store().rules.get('missing'), null);
    });

    it("lists a project's rules in id order, keyset-paged, and counts them; other projects' stay out", async () => {
      const p = await seedProject(store());
      const other = await seedRule(store());
      const rules = [rule(p.id), rule(p.id, { enabled: false }), rule(p.id)];
      for (const r of [...rules].reverse()) await store().rules.create(r);
      assert.deepEqual(await store().rules.listByProject(p.id, { limit: 10 }), rules);
      assert.deepEqual(await store().rules.listByProject(p.id, { limit: 2 }), rules.slice(0, 2));
      assert.deepEqual(await store().rules.listByProject(p.id, { after: rules[1]!.id, limit: 2 }), rules.slice(2));
      assert.deepEqual(await store().rules.listByProject(p.id, { after: rules[2]!.id, limit: 2 }), []);
      assert.equal(await store().rules.countByProject(p.id), 3);
      assert.equal(await store().rules.countByProject(other.projectId), 1);
      assert.equal(await store().rules.countByProject('missing'), 0);
    });

    it('update writes the name, enabled flag, spec and update time; the project and create time stay', async () => {
      const r = await seedRule(store());
      const moved = await seedProject(store());
      await store().rules.update({
        ...r,
        projectId: moved.id,
        displayName: 'Renamed',
        enabled: false,
        spec: '{}',
        createTime: T0 + 5,
        updateTime: T0 + 9,
      });
      assert.deepEqual(await store().rules.get(r.id), {
        ...r,
        displayName: 'Renamed',
        enabled: false,
        spec: '{}',
        updateTime: T0 + 9,
      });
    });

    it('the enabled list follows every write at once (create, update, disable, enable, delete), in id order', async () => {
      const p = await seedProject(store());
      const enabled = async () => ids(await store().rules.listEnabledByProject(p.id));
      assert.deepEqual(await enabled(), []);
      const b = rule(p.id);
      const a = rule(p.id);
      const off = rule(p.id, { enabled: false });
      await store().rules.create(a);
      assert.deepEqual(await enabled(), [a.id]);
      await store().rules.create(b);
      await store().rules.create(off);
      assert.deepEqual(await enabled(), [b.id, a.id].sort());
      assert.deepEqual(
        await store().rules.listEnabledByProject(p.id),
        [b, a].sort((x, y) => (x.id < y.id ? -1 : 1)),
      );

      await store().rules.update({ ...a, spec: '{"v":2}', displayName: 'Two', updateTime: T0 + 1 });
      assert.deepEqual(
        (await store().rules.listEnabledByProject(p.id)).find((r) => r.id === a.id),
        { ...a, spec: '{"v":2}', displayName: 'Two', updateTime: T0 + 1 },
        'the cached record is the one written',
      );
      await store().rules.update({ ...a, enabled: false });
      assert.deepEqual(await enabled(), [b.id]);
      await store().rules.update({ ...off, enabled: true });
      assert.deepEqual(await enabled(), [b.id, off.id].sort());
      await store().rules.delete(b.id);
      assert.deepEqual(await enabled(), [off.id]);
      assert.equal(await store().rules.get(b.id), null);
      assert.deepEqual(await store().rules.listEnabledByProject('missing'), []);
    });

    it("listEnabled pages every project's enabled rules in id order", async () => {
      const p = await seedProject(store());
      const q = await seedProject(store());
      const made = [rule(p.id), rule(q.id, { enabled: false }), rule(q.id), rule(p.id)];
      for (const r of made) await store().rules.create(r);
      const mine = new Set(made.map((r) => r.id));
      const all: string[] = [];
      for (let after: string | null = null; ; ) {
        const page = await store().rules.listEnabled({ after, limit: 2 });
        all.push(...page.map((r) => r.id));
        if (page.length < 2) break;
        after = page[page.length - 1]!.id;
      }
      assert.deepEqual(
        all.filter((id) => mine.has(id)),
        made
          .filter((r) => r.enabled)
          .map((r) => r.id)
          .sort(),
      );
      assert.deepEqual(all, [...all].sort(), 'in id order');
    });

    it('a transaction reads its own rule writes; one rolled back leaves the enabled list as it was', async () => {
      const p = await seedProject(store());
      const kept = await seedRule(store(), { projectId: p.id });
      assert.deepEqual(ids(await store().rules.listEnabledByProject(p.id)), [kept.id]);
      const undone = rule(p.id);
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.rules.create(undone);
          await tx.rules.update({ ...kept, enabled: false });
          assert.deepEqual(ids(await tx.rules.listEnabledByProject(p.id)), [undone.id]);
          throw new Error('undone');
        }),
        /undone/,
      );
      assert.deepEqual(ids(await store().rules.listEnabledByProject(p.id)), [kept.id]);
      assert.equal(await store().rules.get(undone.id), null);
      const added = rule(p.id);
      await store().transaction(async (tx) => {
        await tx.rules.create(added);
        assert.deepEqual(ids(await tx.rules.listEnabledByProject(p.id)), [kept.id, added.id]);
      });
      assert.deepEqual(ids(await store().rules.listEnabledByProject(p.id)), [kept.id, added.id]);
    });

    it("delete takes the rule's alerts (open and resolved), their outbox rows and its conditions; another rule's stay", async () => {
      const r = await seedRule(store());
      const other = await seedRule(store(), { projectId: r.projectId });
      const open1 = alert(r, id('d'), { timerDue: T0 });
      const resolved = alert(r, open1.targetId, { state: 'RESOLVED', resolveTime: T0 });
      const kept = alert(other, open1.targetId, { timerDue: T0 });
      for (const a of [resolved, open1, kept]) assert.equal(await store().alerts.createIfNone(a), true);
      const [gone1, gone2, stays] = await store().outbox.add([
        notification(open1.id, T0),
        notification(resolved.id, T0),
        notification(kept.id, T0),
      ]);
      await store().conditions.put(condition(r, 'd1', { due: T0 }));
      await store().conditions.put(condition(other, 'd1', { due: T0 }));
      assert.equal(await store().alerts.countOpen(r.projectId), 2);

      await store().rules.delete(r.id);
      assert.equal(await store().rules.get(r.id), null);
      assert.equal(await store().alerts.get(open1.id), null);
      assert.equal(await store().alerts.get(resolved.id), null);
      assert.equal(await store().alerts.openFor(r.id, open1.targetId), null);
      assert.equal(await store().conditions.get(r.id, 'd1'), null);
      assert.deepEqual(await store().alerts.list({ projectId: r.projectId }, { limit: 10 }), [kept]);
      assert.equal(await store().alerts.countOpen(r.projectId), 1);
      assert.deepEqual(await store().alerts.get(kept.id), kept);
      assert.notEqual(await store().conditions.get(other.id, 'd1'), null);
      // The outbox rows of the deleted rule's alerts are gone: their leases are refused, the other's is not.
      const lease = T0 + MINUTE;
      const claimed = await store().outbox.claim(T0, lease, 100);
      assert.ok(!claimed.some((o) => o.id === gone1 || o.id === gone2));
      assert.ok(claimed.some((o) => o.id === stays));
      for (const o of claimed) assert.equal(await store().outbox.delete(o.id, lease), true);
      // Deleting it again, or an unknown rule, does nothing.
      await store().rules.delete(r.id);
      await store().rules.delete('missing');
    });
  });

  describe('contacts', () => {
    const store = useStore(open);

    it("round-trips groups, lists an organization's in id order, keyset-paged, and updates one", async () => {
      const org = organization();
      const otherOrg = organization();
      await store().organizations.create(org);
      await store().organizations.create(otherOrg);
      const groups = [contactGroup(org.id, { description: 'first ☃' }), contactGroup(org.id), contactGroup(org.id)];
      for (const g of [...groups].reverse()) await store().contacts.createGroup(g);
      const theirs = contactGroup(otherOrg.id);
      await store().contacts.createGroup(theirs);
      assert.deepEqual(await store().contacts.getGroup(groups[0]!.id), groups[0]);
      assert.equal(await store().contacts.getGroup('missing'), null);
      assert.deepEqual(await store().contacts.listGroups(org.id, { limit: 10 }), groups);
      assert.deepEqual(await store().contacts.listGroups(org.id, { limit: 1 }), groups.slice(0, 1));
      assert.deepEqual(await store().contacts.listGroups(org.id, { after: groups[0]!.id, limit: 10 }), groups.slice(1));
      assert.deepEqual(await store().contacts.listGroups(otherOrg.id, { limit: 10 }), [theirs]);

      const updated = { ...groups[1]!, displayName: 'Night shift', description: 'after 22:00', updateTime: T0 + 1 };
      await store().contacts.updateGroup(updated);
      assert.deepEqual(await store().contacts.getGroup(updated.id), updated);
    });

    it("round-trips contacts, lists a project's in id order, keyset-paged; update and delete", async () => {
      const p = await seedProject(store());
      const other = await seedProject(store());
      const contacts = [
        contact(p.id, { phoneNumber: '+4712345678', displayName: 'Åse' }),
        contact(p.id),
        contact(p.id),
      ];
      for (const c of [...contacts].reverse()) await store().contacts.create(c);
      await store().contacts.create(contact(other.id));
      assert.deepEqual(await store().contacts.get(contacts[0]!.id), contacts[0]);
      assert.equal(await store().contacts.get('missing'), null);
      assert.deepEqual(await store().contacts.listByProject(p.id, { limit: 10 }), contacts);
      assert.deepEqual(await store().contacts.listByProject(p.id, { limit: 2 }), contacts.slice(0, 2));
      assert.deepEqual(await store().contacts.listByProject(p.id, { after: contacts[1]!.id, limit: 2 }), [contacts[2]]);

      const changed = {
        ...contacts[2]!,
        displayName: 'Changed',
        email: 'changed@example.com',
        phoneNumber: '+1',
        updateTime: T0 + 3,
      };
      await store().contacts.update({ ...changed, projectId: other.id, createTime: T0 + 7 });
      assert.deepEqual(await store().contacts.get(changed.id), changed, 'the project and create time stay');
      await store().contacts.delete(changed.id);
      assert.equal(await store().contacts.get(changed.id), null);
      assert.deepEqual(await store().contacts.listByProject(p.id, { limit: 10 }), contacts.slice(0, 2));
      await store().contacts.delete('missing');
    });

    it("a group's contacts: in a project (id order), counted in every project; its delete leaves them in no group", async () => {
      const org = organization();
      await store().organizations.create(org);
      const p = await seedProject(store(), { organizationId: org.id });
      const q = await seedProject(store(), { organizationId: org.id });
      const g = contactGroup(org.id);
      const h = contactGroup(org.id);
      await store().contacts.createGroup(g);
      await store().contacts.createGroup(h);
      const inP = [contact(p.id, { contactGroupId: g.id }), contact(p.id, { contactGroupId: g.id })];
      const inQ = contact(q.id, { contactGroupId: g.id });
      const inH = contact(p.id, { contactGroupId: h.id });
      const none = contact(p.id);
      for (const c of [inP[1]!, inQ, inH, none, inP[0]!]) await store().contacts.create(c);
      assert.deepEqual(await store().contacts.listInGroup(p.id, g.id), inP);
      assert.deepEqual(await store().contacts.listInGroup(q.id, g.id), [inQ]);
      assert.deepEqual(await store().contacts.listInGroup(p.id, h.id), [inH]);
      assert.deepEqual(await store().contacts.listInGroup(p.id, ''), [], "'' is no group");
      assert.deepEqual(await store().contacts.listInGroup(p.id, 'missing'), []);
      assert.equal(await store().contacts.countInGroup(g.id), 3);
      assert.equal(await store().contacts.countInGroup(h.id), 1);
      assert.equal(await store().contacts.countInGroup('missing'), 0);

      // Moved out of one group into none, then into the other.
      await store().contacts.update({ ...inP[1]!, contactGroupId: '' });
      assert.deepEqual(await store().contacts.listInGroup(p.id, g.id), [inP[0]]);
      await store().contacts.update({ ...inP[1]!, contactGroupId: h.id });
      assert.equal(await store().contacts.countInGroup(h.id), 2);

      await store().contacts.deleteGroup(g.id);
      assert.equal(await store().contacts.getGroup(g.id), null);
      assert.equal(await store().contacts.countInGroup(g.id), 0);
      assert.deepEqual(await store().contacts.listInGroup(p.id, g.id), []);
      assert.deepEqual(await store().contacts.get(inP[0]!.id), { ...inP[0]!, contactGroupId: '' });
      assert.deepEqual(await store().contacts.get(inQ.id), { ...inQ, contactGroupId: '' });
      assert.deepEqual(await store().contacts.get(inH.id), inH, "another group's contact stays in it");
      assert.deepEqual(await store().contacts.getGroup(h.id), h);
      await store().contacts.deleteGroup('missing');
    });
  });

  describe('alerts', () => {
    const store = useStore(open);

    it('round-trips an alert with its notifications, acknowledgement, last value and timer; an unknown id is null', async () => {
      const r = await seedRule(store());
      const a = alert(r, id('d'), {
        state: 'ACKNOWLEDGED',
        escalationLevel: 2,
        triggerTime: T0 - 3 * MINUTE,
        acknowledgeTime: T0 - MINUTE,
        acknowledgedBy: 'ops@example.com',
        lastValue: '{"value":9.5,"unit":"°C"}',
        notifications: [
          {
            time: T0 - 3 * MINUTE,
            level: 0,
            type: 'EMAIL',
            target: 'ops@example.com',
            transition: 'TRIGGERED',
            outcome: 'SENT',
            error: '',
          },
          {
            time: T0 - 2 * MINUTE,
            level: 1,
            type: 'WEBHOOK',
            target: 'https://hooks.example.com/a?b=c',
            transition: 'ESCALATED',
            outcome: 'FAILED',
            error: 'HTTP 500: "oops" ☃',
          },
        ],
        timerDue: T0 + 4 * 3_600 * SECOND,
        createTime: T0 - 3 * MINUTE,
        updateTime: T0 - MINUTE,
      });
      assert.equal(await store().alerts.createIfNone(a), true);
      assert.deepEqual(await store().alerts.get(a.id), a);
      assert.deepEqual(await store().alerts.getForUpdate(a.id), a);
      assert.deepEqual(await store().alerts.openFor(r.id, a.targetId), a);
      assert.equal(await store().alerts.get('missing'), null);
      assert.equal(await store().alerts.getForUpdate('missing'), null);
      // In a transaction, getForUpdate and openFor read the same.
      await store().transaction(async (tx) => {
        assert.deepEqual(await tx.alerts.getForUpdate(a.id), a);
        assert.deepEqual(await tx.alerts.openFor(r.id, a.targetId), a);
        assert.equal(await tx.alerts.getForUpdate('missing'), null);
      });
    });

    it('createIfNone refuses a second open alert of the rule and target (TRIGGERED or ACKNOWLEDGED), and writes one once the first is RESOLVED', async () => {
      const r = await seedRule(store());
      const other = await seedRule(store(), { projectId: r.projectId });
      const target = id('d');
      const first = alert(r, target);
      assert.equal(await store().alerts.createIfNone(first), true);
      const second = alert(r, target, { state: 'TRIGGERED' });
      assert.equal(await store().alerts.createIfNone(second), false);
      assert.equal(await store().alerts.get(second.id), null, 'nothing written');
      // Another target of the rule, and the same target of another rule: alerts of their own.
      const elsewhere = alert(r, id('d'));
      const ofOther = alert(other, target);
      assert.equal(await store().alerts.createIfNone(elsewhere), true);
      assert.equal(await store().alerts.createIfNone(ofOther), true);

      const acknowledged = { ...first, state: 'ACKNOWLEDGED' as const, acknowledgeTime: T0 + 1, updateTime: T0 + 1 };
      await store().alerts.update(acknowledged);
      assert.equal(await store().alerts.createIfNone(alert(r, target)), false, 'an acknowledged alert is open');
      assert.deepEqual(await store().alerts.openFor(r.id, target), acknowledged);

      const resolved = { ...acknowledged, state: 'RESOLVED' as const, resolveTime: T0 + 2, updateTime: T0 + 2 };
      await store().alerts.update(resolved);
      assert.equal(await store().alerts.openFor(r.id, target), null);
      const next = alert(r, target, { triggerTime: T0 + 3 });
      assert.equal(await store().alerts.createIfNone(next), true);
      assert.deepEqual(await store().alerts.openFor(r.id, target), next);
      assert.equal(await store().alerts.createIfNone(alert(r, target)), false);
      assert.deepEqual(await store().alerts.get(first.id), resolved, 'the resolved one stays');
      // Every open alert of a target, of any rule, in one read; resolved ones left out.
      const sorted = (as: Array<{ id: string }>) => as.map((a) => a.id).sort();
      assert.deepEqual(sorted(await store().alerts.openForTarget(target)), sorted([next, ofOther]));
      assert.deepEqual(await store().alerts.openForTarget('nobody'), []);

      // Inside a transaction too, against its own write.
      const target2 = id('d');
      await store().transaction(async (tx) => {
        assert.equal(await tx.alerts.createIfNone(alert(r, target2)), true);
        assert.equal(await tx.alerts.createIfNone(alert(r, target2)), false);
      });
      assert.equal((await store().alerts.list({ projectId: r.projectId, targetId: target2 }, { limit: 10 })).length, 1);
    });

    it('createIfNone writes nothing for a rule that is gone', async () => {
      const r = await seedRule(store());
      await store().rules.delete(r.id);
      const a = alert(r, id('d'));
      assert.equal(await store().alerts.createIfNone(a), false);
      assert.equal(await store().alerts.get(a.id), null);
      assert.equal(await store().alerts.createIfNone(alert({ ...r, id: 'missing' }, id('d'))), false);
    });

    it('update writes the lifecycle fields and notifications; the project, rule, target and create time stay', async () => {
      const { rule: r, alert: a } = await seedAlert(store(), { timerDue: T0 + MINUTE });
      const next: AlertRecord = {
        ...a,
        targetName: 'projects/p/dataconnectors/c',
        state: 'RESOLVED',
        escalationLevel: 1,
        triggerTime: T0 + 1,
        acknowledgeTime: T0 + 2,
        acknowledgedBy: 'sa@p.example.com',
        resolveTime: T0 + 3,
        lastValue: '{"value":5}',
        notifications: [
          {
            time: T0 + 3,
            level: 1,
            type: 'EMAIL',
            target: 'a@example.com',
            transition: 'RESOLVED',
            outcome: 'RETRYING',
            error: 'timeout',
          },
        ],
        timerDue: null,
        updateTime: T0 + 3,
      };
      await store().alerts.update({ ...next, projectId: 'other', ruleId: 'other', targetId: 'other', createTime: 1 });
      assert.deepEqual(await store().alerts.get(a.id), next);
      assert.equal(await store().alerts.openFor(r.id, a.targetId), null);
    });

    it("lists a project's alerts newest first, keyset-paged, filtered by states, rule and target", async () => {
      const p = await seedProject(store());
      const r1 = await seedRule(store(), { projectId: p.id });
      const r2 = await seedRule(store(), { projectId: p.id });
      const [d1, d2] = [id('d'), id('d')];
      const a1 = alert(r1, d1, { state: 'RESOLVED', resolveTime: T0 });
      const a2 = alert(r1, d1);
      const a3 = alert(r2, d1, { state: 'ACKNOWLEDGED', acknowledgeTime: T0 });
      const a4 = alert(r1, d2);
      const a5 = alert(r2, d2, { state: 'RESOLVED', resolveTime: T0 });
      // Written out of order: the list is by id.
      for (const a of [a3, a1, a5, a2, a4]) assert.equal(await store().alerts.createIfNone(a), true);
      await seedAlert(store()); // another project's
      const list = (filter: Omit<AlertFilter, 'projectId'>, after?: string) =>
        store()
          .alerts.list({ projectId: p.id, ...filter }, { after, limit: 10 })
          .then((rows) => ids(rows));

      assert.deepEqual(await store().alerts.list({ projectId: p.id }, { limit: 10 }), [a5, a4, a3, a2, a1]);
      assert.deepEqual(ids(await store().alerts.list({ projectId: p.id }, { limit: 2 })), [a5.id, a4.id]);
      assert.deepEqual(ids(await store().alerts.list({ projectId: p.id }, { after: a4.id, limit: 2 })), [a3.id, a2.id]);
      assert.deepEqual(ids(await store().alerts.list({ projectId: p.id }, { after: a1.id, limit: 2 })), []);
      assert.deepEqual(await list({ states: [] }), [a5.id, a4.id, a3.id, a2.id, a1.id], 'no states: every state');
      assert.deepEqual(await list({ states: ['TRIGGERED'] }), [a4.id, a2.id]);
      assert.deepEqual(await list({ states: ['TRIGGERED', 'ACKNOWLEDGED'] }), [a4.id, a3.id, a2.id]);
      assert.deepEqual(await list({ states: ['RESOLVED'] }), [a5.id, a1.id]);
      assert.deepEqual(await list({ ruleId: r1.id }), [a4.id, a2.id, a1.id]);
      assert.deepEqual(await list({ targetId: d1 }), [a3.id, a2.id, a1.id]);
      assert.deepEqual(await list({ ruleId: r2.id, targetId: d2 }), [a5.id]);
      assert.deepEqual(await list({ ruleId: r1.id, states: ['RESOLVED'] }), [a1.id]);
      assert.deepEqual(await list({ ruleId: r1.id, targetId: d1, states: ['TRIGGERED'] }), [a2.id]);
      assert.deepEqual(await list({ ruleId: r1.id }, a4.id), [a2.id, a1.id]);
      assert.deepEqual(await list({ ruleId: 'missing' }), []);
      assert.deepEqual(ids(await store().alerts.list({ projectId: 'missing' }, { limit: 10 })), []);
      assert.equal(await store().alerts.countOpen(p.id), 3);
      assert.equal(await store().alerts.countOpen('missing'), 0);
    });

    it('due: the open alerts whose timer is at or before now, earliest first (then by id), at most `limit`', () =>
      withFreshStore(open, async (s) => {
        const r = await seedRule(s);
        const late = alert(r, id('d'), { timerDue: T0 + 30 });
        const early = alert(r, id('d'), { timerDue: T0 + 10, state: 'ACKNOWLEDGED', acknowledgeTime: T0 });
        const tieA = alert(r, id('d'), { timerDue: T0 + 20 });
        const tieB = alert(r, id('d'), { timerDue: T0 + 20 });
        const future = alert(r, id('d'), { timerDue: T0 + 31 });
        const none = alert(r, id('d'));
        const resolved = alert(r, id('d'), { state: 'RESOLVED', resolveTime: T0, timerDue: T0 });
        for (const a of [tieB, late, none, future, resolved, early, tieA])
          assert.equal(await s.alerts.createIfNone(a), true);
        assert.deepEqual(await s.alerts.due(T0 + 30, 10), [early.id, tieA.id, tieB.id, late.id]);
        assert.deepEqual(await s.alerts.due(T0 + 30, 2), [early.id, tieA.id]);
        assert.deepEqual(await s.alerts.due(T0 + 9, 10), []);
        assert.deepEqual(await s.alerts.due(T0 + 10, 10), [early.id], 'at now');
        // A timer moved on, cleared or resolved away leaves the list.
        await s.alerts.update({ ...early, timerDue: T0 + 100 });
        await s.alerts.update({ ...tieA, timerDue: null });
        await s.alerts.update({ ...tieB, state: 'RESOLVED', resolveTime: T0 + 1, timerDue: null });
        assert.deepEqual(await s.alerts.due(T0 + 31, 10), [late.id, future.id]);
        assert.deepEqual(await s.alerts.due(T0 + 100, 10), [late.id, future.id, early.id]);
      }));

    it('a transition in a transaction that throws leaves neither the alert nor its notifications', async () => {
      const r = await seedRule(store());
      const a = alert(r, id('d'));
      const before = await store().outbox.count();
      await assert.rejects(
        store().transaction(async (tx) => {
          assert.equal(await tx.alerts.createIfNone(a), true);
          await tx.outbox.add([notification(a.id, T0)]);
          await tx.conditions.delete(r.id, a.targetId);
          throw new Error('undone');
        }),
        /undone/,
      );
      assert.equal(await store().alerts.get(a.id), null);
      assert.equal(await store().outbox.count(), before);
      assert.equal(await store().alerts.createIfNone(a), true, 'the rule and target have no open alert');
    });
  });

  describe('conditions', () => {
    const store = useStore(open);

    it('put writes and replaces the condition of a rule and target; get reads it; delete says whether it was there', async () => {
      const r = await seedRule(store());
      const c = condition(r, 'd1', { since: T0 - 5, count: 2, due: null, lastValue: '{"value":"9 °C"}' });
      assert.equal(await store().conditions.get(r.id, 'd1'), null);
      await store().conditions.put(c);
      assert.deepEqual(await store().conditions.get(r.id, 'd1'), c);
      const replaced = { ...c, count: 3, due: T0 + MINUTE, lastValue: '{"value":10}' };
      await store().conditions.put(replaced);
      assert.deepEqual(await store().conditions.get(r.id, 'd1'), replaced);
      const otherTarget = condition(r, 'd2');
      await store().conditions.put(otherTarget);
      assert.deepEqual(await store().conditions.get(r.id, 'd2'), otherTarget);
      assert.equal(await store().conditions.delete(r.id, 'd1'), true);
      assert.equal(await store().conditions.delete(r.id, 'd1'), false);
      assert.equal(await store().conditions.get(r.id, 'd1'), null);
      assert.deepEqual(await store().conditions.get(r.id, 'd2'), otherTarget);
      assert.equal(await store().conditions.delete('missing', 'd2'), false);
      // Every pending condition of a target, of any rule, in one read.
      const other = await seedRule(store(), { projectId: r.projectId });
      const ofOther = condition(other, 'd2');
      await store().conditions.put(ofOther);
      const byRule = (cs: Array<{ ruleId: string }>) => cs.map((c) => c.ruleId).sort();
      assert.deepEqual(byRule(await store().conditions.listForTarget('d2')), [r.id, other.id].sort());
      assert.deepEqual(await store().conditions.listForTarget('d1'), []);
    });

    it('put writes nothing for a rule that is gone', async () => {
      const r = await seedRule(store());
      await store().rules.delete(r.id);
      await store().conditions.put(condition(r, 'd1'));
      assert.equal(await store().conditions.get(r.id, 'd1'), null);
    });

    it('due: the conditions whose due is at or before now, earliest first (then by rule and target), at most `limit`', () =>
      withFreshStore(open, async (s) => {
        const r1 = await seedRule(s);
        const r2 = await seedRule(s, { projectId: r1.projectId });
        const late = condition(r1, 'd9', { due: T0 + 30 });
        const tie1 = condition(r2, 'd1', { due: T0 + 20 });
        const tie2 = condition(r1, 'd2', { due: T0 + 20 });
        const tie3 = condition(r1, 'd1', { due: T0 + 20 });
        const early = condition(r2, 'd9', { due: T0 + 10 });
        const counting = condition(r2, 'd5', { due: null, count: 2 });
        const future = condition(r2, 'd6', { due: T0 + 31 });
        for (const c of [late, tie1, tie2, counting, future, tie3, early]) await s.conditions.put(c);
        assert.deepEqual(await s.conditions.due(T0 + 30, 10), [early, tie3, tie2, tie1, late]);
        assert.deepEqual(await s.conditions.due(T0 + 30, 2), [early, tie3]);
        assert.deepEqual(await s.conditions.due(T0 + 10, 10), [early], 'at now');
        assert.deepEqual(await s.conditions.due(T0 + 9, 10), []);
        await s.conditions.delete(early.ruleId, early.targetId);
        await s.conditions.put({ ...late, due: null });
        assert.deepEqual(await s.conditions.due(T0 + 31, 10), [tie3, tie2, tie1, future]);
      }));
  });

  describe('outbox', () => {
    const store = useStore(open);

    it('add answers the ids in order; claim leases the due rows earliest due first, then by id, at most `limit`', () =>
      withFreshStore(open, async (s) => {
        const { alert: a } = await seedAlert(s);
        assert.deepEqual(await s.outbox.add([]), []);
        const added = await s.outbox.add([
          notification(a.id, T0, { dueTime: T0 + 30, entry: 0 }),
          notification(a.id, T0, {
            dueTime: T0 + 10,
            entry: 1,
            type: 'WEBHOOK',
            payload: '{"url":"https://h.example.com","headers":{},"signatureSecretSealed":"s","body":"{\\"a\\":1}"}',
          }),
          notification(a.id, T0, { dueTime: T0 + 20, entry: 2 }),
          notification(a.id, T0, { dueTime: T0 + 20, entry: 3 }),
          notification(a.id, T0, { dueTime: T0 + 40, entry: 4 }),
        ]);
        assert.equal(added.length, 5);
        assert.deepEqual(
          [...added].sort((x, y) => x - y),
          added,
          'ascending, in the order given',
        );
        assert.equal(new Set(added).size, 5);
        assert.equal(await s.outbox.count(), 5);
        const [i30, i10, i20a, i20b, i40] = added as [number, number, number, number, number];

        const lease = T0 + 30 + MINUTE;
        assert.deepEqual(await s.outbox.claim(T0 + 9, lease, 10), [], 'none due');
        const first = await s.outbox.claim(T0 + 30, lease, 3);
        assert.deepEqual(ids(first), [i10, i20a, i20b]);
        const webhook = first[0]!;
        assert.deepEqual(webhook, {
          id: i10,
          alertId: a.id,
          entry: 1,
          type: 'WEBHOOK',
          payload: '{"url":"https://h.example.com","headers":{},"signatureSecretSealed":"s","body":"{\\"a\\":1}"}',
          enqueueTime: T0,
          dueTime: lease,
          attempts: 0,
          leaseUntil: lease,
        } satisfies OutboxRecord);
        for (const o of first) assert.deepEqual([o.leaseUntil, o.dueTime], [lease, lease]);
        const rest = await s.outbox.claim(T0 + 30, lease, 10);
        assert.deepEqual(ids(rest), [i30], 'a leased row is not claimed again; one not yet due waits');
        assert.deepEqual(await s.outbox.claim(T0 + 40, lease, 0), [], 'limit 0');
        assert.deepEqual(ids(await s.outbox.claim(T0 + 40, lease, 10)), [i40]);
        assert.deepEqual(await s.outbox.claim(lease - 1, lease + MINUTE, 10), [], 'every row leased');
        assert.equal(await s.outbox.count(), 5, 'a claim removes nothing');
      }));

    it("a lease that ended is claimed again; delete and reschedule hold only under the row's current lease", () =>
      withFreshStore(open, async (s) => {
        const { alert: a } = await seedAlert(s);
        const [x, y] = (await s.outbox.add([notification(a.id, T0), notification(a.id, T0, { entry: 1 })])) as [
          number,
          number,
        ];
        const lease1 = T0 + MINUTE;
        assert.deepEqual(ids(await s.outbox.claim(T0, lease1, 10)), [x, y]);
        // The first sender paused past its lease: another claim takes both.
        const lease2 = lease1 + MINUTE;
        assert.deepEqual(await s.outbox.claim(lease1 - 1, lease2, 10), [], 'still leased');
        assert.deepEqual(ids(await s.outbox.claim(lease1, lease2, 10)), [x, y]);
        // The first sender's outcomes arrive late: refused, the second's lease stays.
        assert.equal(await s.outbox.delete(x, lease1), false);
        assert.equal(await s.outbox.reschedule(y, 1, lease1 + 5, lease1), false);
        assert.equal(await s.outbox.count(), 2);
        // The second's outcomes: x sent, y failed and due again later with its attempt counted.
        assert.equal(await s.outbox.delete(x, lease2), true);
        assert.equal(await s.outbox.delete(x, lease2), false, 'gone');
        const retryAt = lease2 + 10 * SECOND;
        assert.equal(await s.outbox.reschedule(y, 1, retryAt, lease2), true);
        assert.equal(await s.outbox.reschedule(y, 2, retryAt, lease2), false, 'its lease was released');
        assert.equal(await s.outbox.delete(y, lease2), false, 'its lease was released');
        assert.equal(await s.outbox.count(), 1);
        assert.deepEqual(await s.outbox.claim(retryAt - 1, retryAt + MINUTE, 10), [], 'not due before its retry');
        const [again] = await s.outbox.claim(retryAt, retryAt + MINUTE, 10);
        assert.deepEqual(
          [again?.id, again?.attempts, again?.leaseUntil, again?.entry],
          [y, 1, retryAt + MINUTE, 1],
          'the retry, its attempt counted',
        );
        // A row never claimed holds no lease to fence with.
        const [z] = (await s.outbox.add([notification(a.id, T0)])) as [number];
        assert.equal(await s.outbox.delete(z, T0), false);
        assert.equal(await s.outbox.reschedule(z, 1, T0, T0), false);
        assert.equal(await s.outbox.delete(12345678, T0), false);
      }));

    it('rows added in a transaction are claimable once it commits, and gone if it throws', async () => {
      const { alert: a } = await seedAlert(store());
      const before = await store().outbox.count();
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.outbox.add([notification(a.id, T0)]);
          throw new Error('undone');
        }),
        /undone/,
      );
      assert.equal(await store().outbox.count(), before);
      const added = await store().transaction((tx) => tx.outbox.add([notification(a.id, T0), notification(a.id, T0)]));
      assert.equal(added.length, 2);
      assert.equal(await store().outbox.count(), before + 2);
    });
  });
}
