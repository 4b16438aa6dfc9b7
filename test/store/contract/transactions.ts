// Store contract: transactions (commit, rollback on throw, own writes visible inside, independence of concurrent
// ones, the `rerunnable` option: fn may be called again after a call whose writes were undone), ping and close.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  device,
  event,
  organization,
  project,
  row,
  seedConnector,
  seedProject,
  T0,
  useStore,
  withFreshStore,
  type OpenStore,
} from './fixtures.ts';

export function transactionContract(open: OpenStore): void {
  describe('transactions', () => {
    const store = useStore(open);

    it('commits what fn wrote when it resolves, and answers with its value', async () => {
      const org = organization();
      const p = project(org.id);
      const value = await store().transaction(async (tx) => {
        await tx.organizations.create(org);
        await tx.projects.create(p);
        return { created: p.id };
      });
      assert.deepEqual(value, { created: p.id });
      assert.deepEqual(await store().projects.get(p.id), p);
    });

    it('rolls back every write when fn throws, and rejects with what it threw', async () => {
      const p = await seedProject(store());
      const d = device(p.id);
      const c = await seedConnector(store(), { projectId: p.id });
      const failure = new Error('boom');
      const rejected = await store()
        .transaction(async (tx) => {
          await tx.devices.create(d);
          await tx.projects.update({ ...p, displayName: 'changed' });
          await tx.dataConnectors.updateState(c.id, 'SYSTEM_DISABLED', T0, T0);
          await tx.deliveries.insert([
            { connectorId: c.id, eventId: 'e', body: Buffer.from('{}'), enqueueTime: T0, dueTime: T0 },
          ]);
          await tx.connectorMetrics.add(c.id, T0, 1, 0, new Map([['1', 1]]));
          throw failure;
        })
        .then(
          () => null,
          (error: unknown) => error,
        );
      assert.equal(rejected, failure);
      assert.equal(await store().devices.get(d.id), null);
      assert.equal((await store().projects.get(p.id))?.displayName, p.displayName);
      assert.equal((await store().dataConnectors.get(c.id))?.status, 'ACTIVE');
      assert.equal((await store().dataConnectors.listActiveByProject(p.id)).length, 1);
      assert.deepEqual(await store().deliveries.claim(c.id, T0, 0, T0 + 1, 10), []);
      assert.deepEqual(await store().connectorMetrics.listSince(c.id, 0), []);
    });

    it('refuses a write of text holding NUL with a 400, all or nothing; a lookup by such text finds nothing', async () => {
      // PostgreSQL's text cannot hold U+0000: both backends refuse it, so they store the same things.
      const p = await seedProject(store());
      const d = device(p.id);
      const refused = await store()
        .transaction(async (tx) => {
          await tx.devices.create(d);
          await tx.projects.update({ ...p, displayName: 'a\u0000b' });
        })
        .then(
          () => null,
          (error: unknown) => error,
        );
      assert.equal((refused as { status?: number } | null)?.status, 400);
      assert.match(String((refused as Error).message), /NUL character/);
      assert.equal(await store().devices.get(d.id), null);
      assert.equal((await store().projects.get(p.id))?.displayName, p.displayName);
      await assert.rejects(
        store().projects.update({ ...p, displayName: '\u0000' }),
        (e: { status?: number }) => e.status === 400,
      );
      assert.equal(await store().projects.get(`${p.id}\u0000`), null);
      assert.equal(await store().devices.get('\u0000'), null);
      await store().devices.delete(`${d.id}\u0000`);
      assert.equal(await store().deliveries.deleteByConnector('\u0000', 10), 0);
    });

    it('reads its own writes inside, through every repository; reads after a rollback never see them', async () => {
      const p = await seedProject(store());
      const d = device(p.id, { labels: { v: '1' } });
      await store().devices.create(d);
      await store().projects.get(p.id); // read before: a cached copy must not outlive the rolled-back write
      await store().devices.get(d.id);
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.projects.update({ ...p, displayName: 'inside' });
          await tx.devices.updateReported(d.id, { touch: { n: 2 } }, { touch: [T0, 'e2'] }, T0 + 2);
          await tx.devices.updateLabels(d.id, { v: '2' }, T0 + 3);
          assert.equal((await tx.projects.get(p.id))?.displayName, 'inside');
          assert.equal((await tx.projects.getWithCounts(p.id))?.displayName, 'inside');
          const inside = await tx.devices.get(d.id);
          assert.deepEqual(
            [inside?.reported, inside?.labels, inside?.updateTime],
            [{ touch: { n: 2 } }, { v: '2' }, T0 + 3],
          );
          throw new Error('undo');
        }),
        /undo/,
      );
      assert.deepEqual(await store().projects.get(p.id), p);
      assert.deepEqual(await store().devices.get(d.id), d);
    });

    it('keeps concurrent transactions independent: one failing undoes only its own writes', async () => {
      const org = organization();
      await store().organizations.create(org);
      const [a, b, c] = [
        project(org.id, { displayName: 'a' }),
        project(org.id, { displayName: 'b' }),
        project(org.id, { displayName: 'c' }),
      ];
      const results = await Promise.allSettled([
        store().transaction(async (tx) => {
          await tx.projects.create(a);
          return 'a';
        }),
        store().transaction(async (tx) => {
          await tx.projects.create(b);
          throw new Error('b fails');
        }),
        store().transaction(async (tx) => {
          await tx.projects.create(c);
          return (await tx.projects.get(c.id))?.displayName;
        }),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      assert.equal((results[2] as PromiseFulfilledResult<string>).value, 'c');
      assert.deepEqual(await store().projects.get(a.id), a);
      assert.equal(await store().projects.get(b.id), null);
      assert.deepEqual(await store().projects.get(c.id), c);
    });

    it('isolates a call made while a transaction is open: it sees the state before or after the commit, never a part', async () => {
      const org = organization();
      await store().organizations.create(org);
      const [p, q] = [project(org.id), project(org.id)];
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      let opened!: () => void;
      const isOpen = new Promise<void>((r) => {
        opened = r;
      });
      const tx = store().transaction(async (t) => {
        await t.projects.create(p);
        opened();
        await gate;
        await t.projects.create(q);
        return 'done';
      });
      await isOpen;
      const read = store().projects.list({ projectIds: [p.id, q.id], organizationIds: [] }, { limit: 10 });
      release();
      assert.equal(await tx, 'done');
      const seen = (await read).map((x) => x.id);
      assert.ok(seen.length === 0 || seen.length === 2, `saw ${seen.length} of the transaction's two projects`);
      assert.equal(
        (await store().projects.list({ projectIds: [p.id, q.id], organizationIds: [] }, { limit: 10 })).length,
        2,
      );
    });

    describe('rerunnable', () => {
      it('commits each successful call once, beside failures, and calls a transaction that is not rerunnable once', async () => {
        const org = organization();
        await store().organizations.create(org);
        const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((n) => project(org.id, { displayName: n }));
        const calls = { a: 0, b: 0, c: 0, d: 0, e: 0 };
        const rerunnable = { rerunnable: true };
        const results = await Promise.allSettled([
          store().transaction(async (tx) => {
            calls.a++;
            await tx.projects.create(a!);
            return 'a';
          }, rerunnable),
          store().transaction(async (tx) => {
            calls.b++;
            await tx.projects.create(b!);
            return 'b';
          }),
          store().transaction(async (tx) => {
            calls.c++;
            assert.equal(await tx.projects.get(c!.id), null);
            throw new Error('c fails before writing');
          }, rerunnable),
          store().transaction(async (tx) => {
            calls.d++;
            await tx.projects.create(d!);
            throw new Error('d fails after writing');
          }, rerunnable),
          store().transaction(async (tx) => {
            calls.e++;
            await tx.projects.create(e!);
            return 'e';
          }, rerunnable),
        ]);
        assert.deepEqual(
          results.map((r) => r.status),
          ['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled'],
        );
        assert.deepEqual(
          results.map((r) => (r.status === 'fulfilled' ? r.value : null)),
          ['a', 'b', null, null, 'e'],
        );
        assert.match(String((results[3] as PromiseRejectedResult).reason), /d fails after writing/);
        for (const p of [a, b, e]) assert.deepEqual(await store().projects.get(p!.id), p);
        for (const p of [c, d]) assert.equal(await store().projects.get(p!.id), null);
        // A failure is answered at once, not retried; a transaction that is not rerunnable is never called twice.
        assert.deepEqual([calls.b, calls.c, calls.d], [1, 1, 1]);
        // A backend may have undone and repeated the calls of a and e (bounded here so a loop would show).
        assert.ok(calls.a >= 1 && calls.a <= 3 && calls.e >= 1 && calls.e <= 3, JSON.stringify(calls));
      });

      it('reads and writes a named device as without the name; many calls at once on a few devices lose no write', async () => {
        // The writes of an event (TransactionOptions.devices: a store may read the named devices ahead and hold
        // the writes to the end): a device read in a call sees what the calls before it wrote.
        const c = await seedConnector(store());
        const devices = [device(c.projectId), device(c.projectId)];
        for (const d of devices) await store().devices.create(d);
        const calls = Array.from({ length: 30 }, (_, i) =>
          store().transaction(
            async (tx) => {
              const d = devices[i % 2]!;
              const current = (await tx.devices.get(d.id))!;
              const e = event(d, T0 + i);
              await tx.events.insert(e);
              await tx.deliveries.add([row(c.id, T0 + i, { eventId: e.id })]);
              await tx.devices.updateReported(
                d.id,
                { n: ((current.reported.n as number | undefined) ?? 0) + 1 },
                { touch: [T0 + i, e.id] },
                T0 + i,
              );
              if (i === 7) throw new Error('7 fails after writing');
              return i;
            },
            { rerunnable: true, devices: [devices[i % 2]!.id] },
          ),
        );
        const results = await Promise.allSettled(calls);
        assert.deepEqual(results.filter((r) => r.status === 'rejected').length, 1);
        assert.match(String((results[7] as PromiseRejectedResult).reason), /7 fails after writing/);
        assert.deepEqual((await store().devices.get(devices[0]!.id))?.reported, { n: 15 });
        assert.deepEqual((await store().devices.get(devices[1]!.id))?.reported, { n: 14 });
        const stored = await Promise.all(
          devices.map((d) =>
            store().events.listByDevice({ deviceId: d.id, eventTypes: [], startTime: 0, endTime: T0 * 2, limit: 100 }),
          ),
        );
        assert.deepEqual(
          stored.map((s) => s.length),
          [15, 14],
        );
        assert.equal((await store().deliveries.claim(c.id, T0 * 2, 0, T0 * 2, 100)).length, 29);
      });

      it("undoes a call's writes before calling it again: increments made by repeated calls count once", () =>
        withFreshStore(open, async (s) => {
          const c = await seedConnector(s);
          const rerunnable = { rerunnable: true };
          const bump = (n: number) =>
            s.transaction(async (tx) => {
              await tx.connectorMetrics.addCounters({ bumps_total: n });
              await tx.connectorMetrics.add(c.id, T0, n, 0, new Map([['1', n]]));
            }, rerunnable);
          const results = await Promise.allSettled([
            bump(1),
            s.transaction(async (tx) => {
              await tx.connectorMetrics.addCounters({ bumps_total: 1000 });
              throw new Error('fails after writing');
            }, rerunnable),
            bump(10),
            s.transaction(async (tx) => {
              await tx.connectorMetrics.addCounters({ bumps_total: 100 });
            }),
          ]);
          assert.deepEqual(
            results.map((r) => r.status),
            ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
          );
          assert.deepEqual(await s.connectorMetrics.counters(), { bumps_total: 111 });
          const [bucket] = await s.connectorMetrics.listSince(c.id, 0);
          assert.deepEqual([bucket?.successCount, { ...bucket?.latencyHist }], [11, { 1: 11 }]);
        }));
    });

    it('answers ping', async () => {
      await store().ping();
    });
  });

  describe('close', () => {
    it('closes a store after its transactions have finished', () =>
      withFreshStore(open, async (s) => {
        const org = organization();
        await s.transaction((tx) => tx.organizations.create(org));
        assert.deepEqual(await s.organizations.get(org.id), org);
      }));
  });
}
