// Shared Store contract: notification rules and alerts of several processes. Two stores on one database (two
// processes): one open alert per rule and target whoever writes it; transitions of one alert take turns; a condition
// fired by both is removed by one; the outbox is never leased twice; a rule's delete takes an alert another process
// is writing meanwhile; and a rule written by one process is in the other's enabled list once it checks the versions,
// as every request does first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../../../src/store/contract/store.ts';
import { alert, condition, id, MINUTE, notification, rule, seedAlert, seedProject, seedRule, T0 } from '../fixtures.ts';
import { sleep } from '../../../helpers/until.ts';
import { useSharedStores, type OpenSharedStore } from './fixtures.ts';

export function sharedAlertingContract(openShared: OpenSharedStore): void {
  describe('alerts shared by two processes', () => {
    const { stores } = useSharedStores(openShared, 2);

    it('createIfNone for one rule and target from both processes at once: exactly one writes, every round', async () => {
      const [a, b] = [stores()[0]!, stores()[1]!];
      const r = await seedRule(a);
      for (let round = 0; round < 20; round++) {
        const target = id('d');
        const racers = Array.from({ length: 4 }, (_, i) => alert(r, target, { lastValue: `{"racer":${i}}` }));
        // Half inside transactions that stay open a moment after writing, so a racer meets one uncommitted.
        const results = await Promise.all(
          racers.map((x, i) => {
            const s = i % 2 === 0 ? a : b;
            return i < 2
              ? s.alerts.createIfNone(x)
              : s.transaction(async (tx) => {
                  const written = await tx.alerts.createIfNone(x);
                  await sleep(2);
                  return written;
                });
          }),
        );
        assert.equal(results.filter(Boolean).length, 1, `round ${round}: ${results.join(', ')}`);
        const winner = racers[results.indexOf(true)]!;
        assert.deepEqual(await b.alerts.openFor(r.id, target), winner);
        assert.deepEqual(
          (await a.alerts.list({ projectId: r.projectId, targetId: target }, { limit: 10 })).map((x) => x.id),
          [winner.id],
        );
      }
    });

    it("transitions of one alert in both processes take turns: getForUpdate's read-modify-writes are never overtaken", async () => {
      const [a, b] = [stores()[0]!, stores()[1]!];
      const { alert: x } = await seedAlert(a);
      const sent = {
        time: 0,
        level: 0,
        type: 'EMAIL',
        target: 'ops@example.com',
        transition: 'ESCALATED',
        outcome: 'SENT' as const,
        error: '',
      };
      const step = (s: Store, viaOpenFor: boolean) =>
        s.transaction(async (tx) => {
          const now = viaOpenFor ? await tx.alerts.openFor(x.ruleId, x.targetId) : await tx.alerts.getForUpdate(x.id);
          assert.ok(now);
          await sleep(1);
          await tx.alerts.update({
            ...now,
            escalationLevel: now.escalationLevel + 1,
            notifications: [...now.notifications, { ...sent, time: now.escalationLevel }],
          });
        });
      await Promise.all(Array.from({ length: 12 }, (_, i) => step(i % 2 === 0 ? a : b, i % 4 >= 2)));
      const after = await b.alerts.get(x.id);
      assert.equal(after?.escalationLevel, 12, 'no increment lost');
      assert.deepEqual(
        after?.notifications.map((n) => n.time),
        Array.from({ length: 12 }, (_, i) => i),
      );
    });

    it('a condition fired by both processes at once is removed by exactly one', async () => {
      const [a, b] = [stores()[0]!, stores()[1]!];
      const r = await seedRule(a);
      for (let round = 0; round < 10; round++) {
        const target = id('d');
        await a.conditions.put(condition(r, target, { due: T0 }));
        const removed = await Promise.all([
          a.conditions.delete(r.id, target),
          b.conditions.delete(r.id, target),
          a.transaction((tx) => tx.conditions.delete(r.id, target)),
          b.transaction((tx) => tx.conditions.delete(r.id, target)),
        ]);
        assert.equal(removed.filter(Boolean).length, 1, `round ${round}: ${removed.join(', ')}`);
      }
    });

    it('8 claim loops over 600 due notifications never lease a row twice, and lease them all', async () => {
      const [a] = [stores()[0]!];
      const { alert: x } = await seedAlert(a);
      const ROWS = 600;
      const added: number[] = [];
      for (let from = 0; from < ROWS; from += 200)
        added.push(
          ...(await a.outbox.add(
            Array.from({ length: 200 }, (_, i) =>
              notification(x.id, T0, { entry: from + i, dueTime: T0 - (from + i) }),
            ),
          )),
        );
      const lease = T0 + MINUTE;
      const loop = async (n: number) => {
        const s = stores()[n % 2]!;
        const mine: number[] = [];
        for (;;) {
          const batch =
            n % 4 < 2 ? await s.outbox.claim(T0, lease, 7) : await s.transaction((tx) => tx.outbox.claim(T0, lease, 7));
          if (batch.length === 0) return mine;
          assert.ok(batch.length <= 7);
          for (const o of batch) assert.equal(o.leaseUntil, lease);
          mine.push(...batch.map((o) => o.id));
        }
      };
      const claims = await Promise.all(Array.from({ length: 8 }, (_, n) => loop(n)));
      const all = claims.flat();
      assert.equal(new Set(all).size, all.length, 'a row leased twice');
      assert.deepEqual(
        [...all].sort((p, q) => p - q),
        [...added].sort((p, q) => p - q),
      );
      assert.ok(claims.filter((c) => c.length > 0).length > 1, 'the loops shared the work');
      // Once the lease is over, the rows are claimed again, each by one of the claimers racing for them.
      const again = await Promise.all(
        Array.from({ length: 6 }, (_, i) => stores()[i % 2]!.outbox.claim(lease, lease + MINUTE, 150)),
      );
      const second = again.flat().map((o) => o.id);
      assert.equal(new Set(second).size, second.length, 'a row leased twice');
      assert.equal(second.length, ROWS);
      // An outcome under the first lease is refused: every row is another claim's now.
      assert.equal(await stores()[1]!.outbox.delete(added[0]!, lease), false);
      assert.equal(await stores()[0]!.outbox.reschedule(added[1]!, 1, lease + 5, lease), false);
      for (const o of second) assert.equal(await stores()[0]!.outbox.delete(o, lease + MINUTE), true);
    });

    it('a rule deleted while another process writes its alert and condition takes them: nothing is left', async () => {
      const [a, b] = [stores()[0]!, stores()[1]!];
      const queued = await a.outbox.count();
      for (let round = 0; round < 3; round++) {
        const r = await seedRule(a);
        const x = alert(r, id('d'));
        let release!: () => void;
        const held = new Promise<void>((resolve) => (release = resolve));
        let wrote!: () => void;
        const written = new Promise<void>((resolve) => (wrote = resolve));
        // A: the alert's transition, its outbox row and a condition, in one transaction that stays open.
        const transition = a.transaction(async (tx) => {
          const created = await tx.alerts.createIfNone(x);
          if (created) await tx.outbox.add([notification(x.id, T0)]);
          await tx.conditions.put(condition(r, 'other-target'));
          wrote();
          await held;
          return created;
        });
        await written;
        // B deletes the rule meanwhile; A commits a moment later.
        const deleting = b.rules.delete(r.id);
        await sleep(50);
        release();
        assert.equal(await transition, true);
        await deleting;
        assert.equal(await a.rules.get(r.id), null);
        assert.equal(await a.alerts.get(x.id), null, 'the alert went with its rule');
        assert.equal(await b.conditions.get(r.id, 'other-target'), null, 'the condition went with its rule');
        assert.deepEqual(await a.alerts.list({ projectId: r.projectId }, { limit: 10 }), []);
      }
      assert.equal(await a.outbox.count(), queued, 'the notifications went with their alerts');
    });

    it("a rule written by one process is in the other's enabled list once it checks the versions, as every request does first", async () => {
      const [a, b] = [stores()[0]!, stores()[1]!];
      const p = await seedProject(a);
      const enabledAtB = async () => {
        await b.authVersion();
        return (await b.rules.listEnabledByProject(p.id)).map((r) => [r.id, r.displayName, r.spec]);
      };
      assert.deepEqual(await enabledAtB(), []);
      assert.deepEqual(await enabledAtB(), [], 'read twice: cached where the store caches');
      const r = rule(p.id);
      await a.rules.create(r);
      assert.deepEqual(await enabledAtB(), [[r.id, r.displayName, r.spec]]);
      await a.transaction((tx) => tx.rules.update({ ...r, displayName: 'Renamed', spec: '{"v":2}' }));
      assert.deepEqual(await enabledAtB(), [[r.id, 'Renamed', '{"v":2}']]);
      await a.rules.update({ ...r, enabled: false });
      assert.deepEqual(await enabledAtB(), []);
      await a.rules.update({ ...r, enabled: true });
      assert.deepEqual(await enabledAtB(), [[r.id, r.displayName, r.spec]]);
      await a.rules.delete(r.id);
      assert.deepEqual(await enabledAtB(), []);
    });
  });
}
