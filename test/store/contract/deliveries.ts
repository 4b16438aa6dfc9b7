// Store contract: the delivery queue. "Due at now" means dueTime <= now, not leased past now, and enqueued after
// the 12-hour cutoff; a claim leases due rows (earliest due first) until leaseUntil, and a lease that has ended
// leaves the row due again. Rows are queued (as the service does) in enqueue-time order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryRecord } from '../../../src/store/contract/connector-repos.ts';
import { row, seedConnector, sorted, useStore, withFreshStore, type OpenStore } from './fixtures.ts';

const idsOf = (rows: DeliveryRecord[]) => sorted(rows.map((r) => r.id));

export function deliveryContract(open: OpenStore): void {
  describe('deliveries', () => {
    const store = useStore(open);

    it("insert returns the new rows' ids in order; get reads a row back as queued, not yet attempted", async () => {
      const c = await seedConnector(store());
      const plain = row(c.id, 100, { body: Buffer.from([0, 1, 2, 255]) });
      const leased = row(c.id, 101, { dueTime: 900, leaseUntil: 900 }); // the hand-off: queued already leased
      const ids = await store().deliveries.insert([plain, leased]);
      assert.equal(ids.length, 2);
      assert.notEqual(ids[0], ids[1]);
      assert.deepEqual(
        [plain.queued, leased.queued],
        [
          { id: ids[0], leased: false },
          { id: ids[1], leased: true },
        ],
      );
      const { leaseUntil: _, queued: _q, ...rest } = leased;
      const { queued: _p, ...plainRest } = plain;
      assert.deepEqual(await store().deliveries.get(ids[0]!), {
        ...plainRest,
        id: ids[0],
        attempts: 0,
        leaseUntil: null,
      });
      assert.deepEqual(await store().deliveries.get(ids[1]!), { ...rest, id: ids[1], attempts: 0, leaseUntil: 900 });
      assert.equal(await store().deliveries.get(-1), null);
      assert.deepEqual(await store().deliveries.insert([]), []);
    });

    it('add queues rows as insert does, inside a transaction and outside one', async () => {
      const c = await seedConnector(store());
      await store().deliveries.add([row(c.id, 100), row(c.id, 101)]);
      await store().transaction(async (tx) => {
        await tx.deliveries.add([row(c.id, 102)]);
        await tx.deliveries.add([]);
      });
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.deliveries.add([row(c.id, 103)]);
          throw new Error('undo');
        }),
        /undo/,
      );
      const claimed = await store().deliveries.claim(c.id, 1_000, 0, 2_000, 10);
      assert.deepEqual(
        claimed.map((d) => d.enqueueTime),
        [100, 101, 102],
      );
    });

    it("add sets each row's queued (its id, and whether it is leased) by the time the transaction commits", async () => {
      const c = await seedConnector(store());
      const outside = [row(c.id, 100), row(c.id, 101, { dueTime: 900, leaseUntil: 900 })];
      await store().deliveries.add(outside);
      const inside = [row(c.id, 102, { dueTime: 900, leaseUntil: 900 }), row(c.id, 103)];
      await store().transaction((tx) => tx.deliveries.add(inside), { rerunnable: true });
      const rows = [...outside, ...inside];
      assert.deepEqual(
        rows.map((r) => r.queued?.leased),
        [false, true, true, false],
      );
      const ids = rows.map((r) => r.queued!.id);
      assert.deepEqual(ids, sorted(ids), 'ids follow the order rows were queued in');
      for (const r of rows) assert.equal((await store().deliveries.get(r.queued!.id))?.eventId, r.eventId);
      // A store one process owns ignores leaseIf: its engine counts its own attempts.
      if (store().exclusive) {
        const capped = row(c.id, 104, {
          dueTime: 900,
          leaseUntil: 900,
          leaseIf: { cap: { max: 0, whileHanging: 0, hangingIfLeasedBefore: 0 }, enqueuedAfter: 0 },
        });
        await store().deliveries.add([capped]);
        assert.equal(capped.queued?.leased, true);
      }
    });

    it("pacing: a connector's next start is null until set, then what was set; deleting the connector forgets it", async () => {
      const c = await seedConnector(store());
      const other = await seedConnector(store());
      assert.equal(await store().transaction((tx) => tx.deliveries.pacingForUpdate(c.id)), null);
      await store().transaction((tx) => tx.deliveries.setPacing(c.id, 1_748_779_200_250_000));
      await store().transaction((tx) => tx.deliveries.setPacing(other.id, 5));
      assert.equal(await store().transaction((tx) => tx.deliveries.pacingForUpdate(c.id)), 1_748_779_200_250_000);
      await store().transaction((tx) => tx.deliveries.setPacing(c.id, 1_748_779_200_450_000));
      assert.equal(await store().transaction((tx) => tx.deliveries.pacingForUpdate(c.id)), 1_748_779_200_450_000);
      await store().dataConnectors.delete(c.id);
      assert.equal(await store().transaction((tx) => tx.deliveries.pacingForUpdate(c.id)), null);
      assert.equal(await store().transaction((tx) => tx.deliveries.pacingForUpdate(other.id)), 5);
    });

    it('delete removes one row and says whether it was there', async () => {
      const c = await seedConnector(store());
      const [a, b] = await store().deliveries.insert([row(c.id, 100), row(c.id, 100)]);
      assert.equal(await store().deliveries.delete(a!), true);
      assert.equal(await store().deliveries.get(a!), null);
      assert.equal(await store().deliveries.delete(a!), false);
      assert.ok(await store().deliveries.get(b!));
    });

    it('deleteMany removes the rows still there and counts them', async () => {
      const c = await seedConnector(store());
      const [a, b, d] = await store().deliveries.insert([row(c.id, 100), row(c.id, 100), row(c.id, 100)]);
      assert.equal(await store().deliveries.delete(a!), true);
      assert.equal(await store().deliveries.deleteMany([a!, b!, -1]), 1);
      assert.equal(await store().deliveries.get(b!), null);
      assert.ok(await store().deliveries.get(d!));
      assert.equal(await store().deliveries.deleteMany([]), 0);
    });

    it('deleteCounted removes the rows still there and adds how many to a delivery counter, alone and in a transaction', async () => {
      const c = await seedConnector(store());
      const series = `counted_total{n="${c.id}"}`;
      const [a, b, d, e] = await store().deliveries.insert([
        row(c.id, 100),
        row(c.id, 100),
        row(c.id, 100),
        row(c.id, 100),
      ]);
      assert.equal(await store().deliveries.delete(a!), true);
      await store().deliveries.deleteCounted([a!, b!, -1], series);
      assert.equal(await store().deliveries.get(b!), null);
      assert.equal((await store().connectorMetrics.counters())[series], 1, 'the row deleted before is not counted');
      await store().deliveries.deleteCounted([a!, b!], series);
      await store().deliveries.deleteCounted([], series);
      assert.equal((await store().connectorMetrics.counters())[series], 1, 'nothing deleted, nothing added');
      await store().transaction(
        async (tx) => {
          await tx.deliveries.deleteCounted([d!], series);
          await tx.connectorMetrics.addCounters({ [series]: 10 });
          await tx.deliveries.deleteCounted([e!], series);
        },
        { rerunnable: true, background: true },
      );
      assert.equal(await store().deliveries.get(d!), null);
      assert.equal(await store().deliveries.get(e!), null);
      assert.equal((await store().connectorMetrics.counters())[series], 13);
    });

    it('deleteCounted in transactions racing for the same rows counts each row once', async () => {
      const c = await seedConnector(store());
      const series = `raced_total{n="${c.id}"}`;
      const ids = await store().deliveries.insert(Array.from({ length: 20 }, () => row(c.id, 100)));
      await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          store().transaction((tx) => tx.deliveries.deleteCounted(i % 2 === 0 ? ids : [...ids].reverse(), series), {
            rerunnable: true,
            background: i % 3 === 0,
          }),
        ),
      );
      assert.equal((await store().connectorMetrics.counters())[series], 20);
      for (const id of ids) assert.equal(await store().deliveries.get(id), null);
    });

    it('claim leases up to `limit` due rows of one connector, earliest due first, until leaseUntil', async () => {
      const c = await seedConnector(store());
      const other = await seedConnector(store());
      // Queued at 40-44 with due times 300, 100, 200, 400 (not due at 350), and one of another connector.
      const [due300, due100, due200, due400] = await store().deliveries.insert([
        row(c.id, 40, { dueTime: 300 }),
        row(c.id, 41, { dueTime: 100 }),
        row(c.id, 42, { dueTime: 200 }),
        row(c.id, 43, { dueTime: 400 }),
      ]);
      const [othersRow] = await store().deliveries.insert([row(other.id, 44)]);
      const first = await store().deliveries.claim(c.id, 350, 0, 1000, 2);
      assert.deepEqual(idsOf(first), sorted([due100!, due200!]));
      for (const r of first) assert.deepEqual([r.connectorId, r.leaseUntil, r.attempts], [c.id, 1000, 0]);
      assert.equal((await store().deliveries.get(due100!))?.leaseUntil, 1000);
      assert.deepEqual(
        idsOf(await store().deliveries.claim(c.id, 350, 0, 1000, 10)),
        [due300],
        'leased rows are not due',
      );
      assert.deepEqual(await store().deliveries.claim(c.id, 350, 0, 1000, 10), []);
      assert.deepEqual(idsOf(await store().deliveries.claim(c.id, 400, 0, 1000, 10)), [due400], 'due at its due time');
      assert.equal((await store().deliveries.get(othersRow!))?.leaseUntil, null, "another connector's row");
    });

    it('claimMany claims for each ask in turn, each at most what the asks before it left of the total', async () => {
      const [a, b, c] = [await seedConnector(store()), await seedConnector(store()), await seedConnector(store())];
      const ids = new Map<string, number[]>();
      for (const x of [a, b, c]) {
        // Due times descending against ids: earliest due first is not id order.
        ids.set(
          x.id,
          await store().deliveries.insert([50, 40, 30, 20, 10].map((due, i) => row(x.id, 40 + i, { dueTime: due }))),
        );
      }
      const asks = [
        { connectorId: b.id, limit: 3 },
        { connectorId: c.id, limit: 10 },
        { connectorId: a.id, limit: 10 },
      ];
      const claimed = await store().deliveries.claimMany(asks, 9, 100, 0, 1000);
      assert.deepEqual(
        claimed.map((rows) => rows.length),
        [3, 5, 1],
      );
      assert.deepEqual(
        claimed.map((rows) => rows.map((r) => r.connectorId)),
        [[b.id, b.id, b.id], Array(5).fill(c.id), [a.id]],
      );
      assert.deepEqual(
        claimed[0]!.map((r) => r.id),
        sorted(ids.get(b.id)!.slice(2)),
        'earliest due first, answered in id order',
      );
      assert.deepEqual(
        claimed[2]!.map((r) => r.id),
        [ids.get(a.id)![4]],
      );
      for (const r of claimed.flat()) assert.equal(r.leaseUntil, 1000);
      // What is left: b's two, a's four; nothing without a total, or without asks.
      assert.deepEqual(await store().deliveries.claimMany(asks, 0, 100, 0, 1000), [[], [], []]);
      assert.deepEqual(await store().deliveries.claimMany([], 10, 100, 0, 1000), []);
      const rest = await store().deliveries.claimMany(asks, 100, 100, 0, 1000);
      assert.deepEqual(
        rest.map((rows) => rows.length),
        [2, 0, 4],
      );
    });

    it('claim skips rows enqueued at or before `enqueuedAfter` (older than 12 hours)', async () => {
      const c = await seedConnector(store());
      const [old, edge, fresh] = await store().deliveries.insert([row(c.id, 10), row(c.id, 50), row(c.id, 51)]);
      assert.deepEqual(idsOf(await store().deliveries.claim(c.id, 100, 50, 1000, 10)), [fresh]);
      assert.equal((await store().deliveries.get(old!))?.leaseUntil, null);
      assert.equal((await store().deliveries.get(edge!))?.leaseUntil, null);
    });

    it('a lease that ends makes the row due again, at the lease end and not before', async () => {
      const c = await seedConnector(store());
      const [a] = await store().deliveries.insert([row(c.id, 100)]);
      assert.deepEqual(idsOf(await store().deliveries.claim(c.id, 100, 0, 500, 10)), [a]);
      assert.deepEqual(await store().deliveries.claim(c.id, 499, 0, 900, 10), []);
      assert.ok(!(await store().deliveries.connectorsWithDue(499, 0)).includes(c.id));
      assert.ok((await store().deliveries.connectorsWithDue(500, 0)).includes(c.id));
      const again = await store().deliveries.claim(c.id, 500, 0, 900, 10);
      assert.deepEqual(
        again.map((r) => [r.id, r.leaseUntil, r.attempts]),
        [[a, 900, 0]],
        "a new lease; the attempt count is the engine's",
      );
    });

    it('reschedule records an attempt: the count, the next due time, and the lease released', async () => {
      const c = await seedConnector(store());
      const [a] = await store().deliveries.insert([row(c.id, 100)]);
      await store().deliveries.claim(c.id, 100, 0, 500, 10);
      assert.equal(await store().deliveries.reschedule(a!, 1, 700, 500), true);
      const r = await store().deliveries.get(a!);
      assert.deepEqual([r?.attempts, r?.dueTime, r?.leaseUntil], [1, 700, null]);
      assert.deepEqual(await store().deliveries.claim(c.id, 699, 0, 2000, 10), [], 'not due before its new due time');
      const claimed = await store().deliveries.claim(c.id, 700, 0, 2000, 10);
      assert.deepEqual(
        claimed.map((x) => [x.id, x.attempts]),
        [[a, 1]],
      );
      assert.equal(await store().deliveries.delete(a!), true);
      assert.equal(await store().deliveries.reschedule(a!, 2, 800, 2000), false, 'gone');
    });

    it("reschedule leaves a row that another claim took after the attempt's lease ended (a process paused past its lease)", async () => {
      const c = await seedConnector(store());
      const ids = await store().deliveries.insert([row(c.id, 100), row(c.id, 100)]);
      // Both attempted under a lease to 500; the process then stops for a while.
      assert.equal((await store().deliveries.claim(c.id, 100, 0, 500, 10)).length, 2);
      // Its lease over, another claim takes one row (limit 1) and attempts it under a lease to 1100.
      const again = await store().deliveries.claim(c.id, 600, 0, 1100, 1);
      assert.deepEqual(
        again.map((r) => r.leaseUntil),
        [1100],
      );
      const taken = again[0]!.id;
      const kept = ids.find((id) => id !== taken);
      // The paused process's failures arrive: the row taken over stays leased to the attempt in flight.
      assert.equal(await store().deliveries.reschedule(taken, 1, 700, 500), false, 'held under another lease');
      const held = await store().deliveries.get(taken);
      assert.deepEqual([held?.attempts, held?.dueTime, held?.leaseUntil], [0, 1100, 1100]);
      // The row nobody took is the paused process's still, lease over or not: its failure is recorded.
      assert.equal(await store().deliveries.reschedule(kept!, 1, 700, 500), true);
      const later = await store().deliveries.claim(c.id, 800, 0, 1500, 10);
      assert.deepEqual(
        later.map((r) => r.id),
        [kept],
        'the retry is due; the row in flight is not claimed a third time',
      );
      assert.equal(
        await store().deliveries.delete(taken, 500),
        false,
        "nor is it dropped by the paused process's 12-hour drop",
      );
      // The attempt under the new lease records its own outcome.
      assert.equal(await store().deliveries.reschedule(taken, 1, 1200, 1100), true);
      const r = await store().deliveries.get(taken);
      assert.deepEqual([r?.attempts, r?.dueTime, r?.leaseUntil], [1, 1200, null]);
      assert.equal(await store().deliveries.delete(taken, null), true, 'dropped under the lease it holds (none)');
    });

    it("deleteByConnector drops up to a limit of one connector's rows, leased ones included, and counts them", async () => {
      const c = await seedConnector(store());
      const other = await seedConnector(store());
      const mine = await store().deliveries.insert([
        row(c.id, 100),
        row(c.id, 100),
        row(c.id, 100),
        row(c.id, 100, { dueTime: 900, leaseUntil: 900 }),
      ]);
      const [kept] = await store().deliveries.insert([row(other.id, 100)]);
      await store().deliveries.claim(c.id, 100, 0, 500, 1);
      assert.equal(await store().deliveries.deleteByConnector(c.id, 3), 3);
      const left = (await Promise.all(mine.map((id) => store().deliveries.get(id)))).filter((r) => r !== null);
      assert.equal(left.length, 1, 'one row of the four is left');
      assert.equal(await store().deliveries.deleteByConnector(c.id, 3), 1);
      assert.deepEqual(await store().deliveries.claim(c.id, 10_000, 0, 20_000, 10), []);
      assert.ok(await store().deliveries.get(kept!));
      assert.equal(await store().deliveries.deleteByConnector(c.id, 3), 0);
      // Two leased rows and one waiting row, in pieces of one: each piece takes what is there, whichever kind.
      const again = await store().deliveries.insert([
        row(c.id, 100),
        row(c.id, 100, { leaseUntil: 900 }),
        row(c.id, 100, { leaseUntil: 900 }),
      ]);
      assert.deepEqual(
        [await store().deliveries.deleteByConnector(c.id, 1), await store().deliveries.deleteByConnector(c.id, 1)],
        [1, 1],
      );
      assert.equal(await store().deliveries.deleteByConnector(c.id, 1), 1);
      assert.equal(await store().deliveries.deleteByConnector(c.id, 1), 0);
      for (const id of again) assert.equal(await store().deliveries.get(id), null);
    });

    it('connectorsWithDue names each connector with a due row once: not future, leased, or expired ones', () =>
      withFreshStore(open, async (s) => {
        const [due, future, leased, handedOff, expired, mixed, leaseOver, edge] = await Promise.all(
          Array.from({ length: 8 }, () => seedConnector(s)),
        );
        await s.deliveries.insert([row(expired!.id, 10)]);
        await s.deliveries.insert([row(edge!.id, 50)]); // enqueued exactly at the cutoff: expired
        await s.deliveries.insert([row(leased!.id, 60), row(leaseOver!.id, 60)]);
        await s.deliveries.claim(leased!.id, 60, 0, 900, 10);
        await s.deliveries.claim(leaseOver!.id, 60, 0, 150, 10);
        await s.deliveries.insert([
          row(due!.id, 100),
          row(due!.id, 100),
          row(future!.id, 100, { dueTime: 500 }),
          row(handedOff!.id, 100, { dueTime: 900, leaseUntil: 900 }),
          row(mixed!.id, 100, { dueTime: 500 }),
          row(mixed!.id, 100, { dueTime: 200 }),
        ]);
        assert.deepEqual(
          sorted(await s.deliveries.connectorsWithDue(200, 50)),
          sorted([due!.id, mixed!.id, leaseOver!.id]),
        );
        assert.deepEqual(
          sorted(await s.deliveries.connectorsWithDue(100, 50)),
          [due!.id],
          'due at exactly its due time',
        );
        assert.deepEqual(sorted(await s.deliveries.connectorsWithDue(99, 0)), sorted([expired!.id, edge!.id]));
        assert.deepEqual(await s.deliveries.connectorsWithDue(0, 0), []);
      }));

    it('count counts every queued row', () =>
      withFreshStore(open, async (s) => {
        assert.equal(await s.deliveries.count(), 0);
        const [c, d] = [await seedConnector(s), await seedConnector(s)];
        const [a] = await s.deliveries.insert([
          row(c.id, 100),
          row(d.id, 100),
          row(d.id, 101, { dueTime: 900, leaseUntil: 900 }),
        ]);
        assert.equal(await s.deliveries.count(), 3);
        await s.deliveries.delete(a!);
        assert.equal(await s.deliveries.count(), 2);
      }));

    it('deleteExpired drops rows queued at or before the cutoff, oldest first, at most `limit`, never one in flight', () =>
      withFreshStore(open, async (s) => {
        const c = await seedConnector(s);
        const other = await seedConnector(s);
        // The second row is due first, and in flight (leased until 500): it stays until its outcome is recorded.
        const ids = await s.deliveries.insert([
          row(c.id, 100),
          row(c.id, 101, { dueTime: 90 }),
          row(other.id, 102),
          row(c.id, 150),
          row(c.id, 151),
        ]);
        const [inFlight] = await s.deliveries.claim(c.id, 101, 0, 500, 1);
        assert.equal(inFlight?.id, ids[1]);
        assert.equal(await s.deliveries.deleteExpired(150, 300, 1), 1, 'at most the limit');
        assert.equal(await s.deliveries.get(ids[0]!), null, 'oldest first');
        assert.equal(await s.deliveries.deleteExpired(150, 300, 10), 2, 'of every connector, the cutoff included');
        assert.ok(await s.deliveries.get(ids[1]!), 'in flight: kept');
        assert.equal(await s.deliveries.get(ids[3]!), null);
        assert.ok(await s.deliveries.get(ids[4]!), 'queued after the cutoff: kept');
        assert.equal(await s.deliveries.deleteExpired(150, 300, 10), 0);
        assert.equal(await s.deliveries.deleteExpired(150, 500, 10), 1, 'once its lease is over');
        assert.equal(await s.deliveries.count(), 1);
      }));

    it('releaseLeases of given rows makes those that are leased due now; others and unknown ids are left alone', async () => {
      const c = await seedConnector(store());
      const handedOff = (enqueueTime: number) => row(c.id, enqueueTime, { dueTime: 900, leaseUntil: 900 });
      const ids = await store().deliveries.insert([handedOff(100), handedOff(100), row(c.id, 100), handedOff(100)]);
      assert.equal(await store().deliveries.releaseLeases(150, [ids[0]!, ids[2]!, ids[3]!, -1]), 2);
      const rows = await Promise.all(ids.map((i) => store().deliveries.get(i)));
      assert.deepEqual(
        rows.map((r) => [r?.leaseUntil, r?.dueTime]),
        [
          [null, 150],
          [900, 900],
          [null, 100],
          [null, 150],
        ],
      );
      assert.deepEqual(
        idsOf(await store().deliveries.claim(c.id, 150, 0, 500, 10)),
        sorted([ids[0]!, ids[2]!, ids[3]!]),
      );
      assert.equal(await store().deliveries.releaseLeases(150, []), 0);
    });

    it('releaseLeases without ids makes every leased row of every connector due now', () =>
      withFreshStore(open, async (s) => {
        const [c, d] = [await seedConnector(s), await seedConnector(s)];
        const [claimedC, claimedD, waiting] = await s.deliveries.insert([
          row(c.id, 100),
          row(d.id, 100),
          row(c.id, 100, { dueTime: 250 }),
        ]);
        const [handedOff] = await s.deliveries.insert([row(d.id, 110, { dueTime: 900, leaseUntil: 900 })]);
        await s.deliveries.claim(c.id, 100, 0, 800, 1);
        await s.deliveries.claim(d.id, 100, 0, 800, 1);
        assert.equal(await s.deliveries.releaseLeases(200), 3);
        for (const id of [claimedC!, claimedD!, handedOff!]) {
          const r = await s.deliveries.get(id);
          assert.deepEqual([r?.leaseUntil, r?.dueTime], [null, 200]);
        }
        assert.deepEqual(
          [(await s.deliveries.get(waiting!))?.dueTime, (await s.deliveries.get(waiting!))?.leaseUntil],
          [250, null],
        );
        assert.deepEqual(sorted(await s.deliveries.connectorsWithDue(200, 0)), sorted([c.id, d.id]));
        assert.equal(await s.deliveries.releaseLeases(200), 0);
      }));
  });
}
