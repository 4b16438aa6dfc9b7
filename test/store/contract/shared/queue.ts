// Shared Store contract: the delivery queue of several processes. Two stores on one database (two processes) claim
// from one backlog without leasing a row twice; with a cap (InFlightCap), claims, claimMany and rows queued leased
// under leaseIf keep each connector's rows in flight within the limit for the whole cluster; and an attempt's
// outcome written under a lease another process has since taken over leaves that process's attempt alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryRecord, NewDelivery } from '../../../../src/store/contract/connector-repos.ts';
import { MINUTE, row, seedConnector, T0 } from '../fixtures.ts';
import { sleep } from '../../../helpers/until.ts';
import { useSharedStores, type OpenSharedStore } from './fixtures.ts';

export function sharedQueueContract(openShared: OpenSharedStore): void {
  describe('queue shared by two processes', () => {
    const { stores } = useSharedStores(openShared, 2);
    /** A connector stored (through the first process), for its queue rows. */
    const newConnector = async () => (await seedConnector(stores()[0]!)).id;

    it('8 claim loops over 2,000 due rows of one connector never lease a row twice, and lease them all', async () => {
      const ROWS = 2_000;
      const connectorId = await newConnector();
      const ids: number[] = [];
      // Due times descending against ids, so "earliest due first" is not simply id order.
      for (let from = 0; from < ROWS; from += 500) {
        ids.push(
          ...(await stores()[0]!.deliveries.insert(
            Array.from({ length: 500 }, (_, i) => ({
              connectorId,
              eventId: `e${from + i}`,
              body: Buffer.from(`{"n":${from + i}}`),
              enqueueTime: T0,
              dueTime: T0 + ROWS - (from + i),
            })),
          )),
        );
      }
      const now = T0 + ROWS;
      // Each loop claims small batches until a claim comes back empty; loops alternate between the two stores, half
      // of them claiming inside transactions.
      const loop = async (n: number): Promise<DeliveryRecord[]> => {
        const store = stores()[n % 2]!;
        const mine: DeliveryRecord[] = [];
        for (;;) {
          const batch =
            n % 4 < 2
              ? await store.deliveries.claim(connectorId, now, 0, now + MINUTE, 7)
              : await store.transaction((tx) => tx.deliveries.claim(connectorId, now, 0, now + MINUTE, 7));
          if (batch.length === 0) return mine;
          assert.ok(batch.length <= 7);
          mine.push(...batch);
        }
      };
      const claims = await Promise.all(Array.from({ length: 8 }, (_, n) => loop(n)));
      const all = claims.flat().map((r) => r.id);
      assert.equal(new Set(all).size, all.length, 'a row leased twice');
      assert.deepEqual(
        [...all].sort((a, b) => a - b),
        [...ids].sort((a, b) => a - b),
      );
      assert.ok(claims.filter((c) => c.length > 0).length > 1, 'the loops shared the work');
      for (const r of claims.flat()) assert.equal(r.leaseUntil, now + MINUTE);
      assert.ok(!(await stores()[1]!.deliveries.connectorsWithDue(now, 0)).includes(connectorId));
      assert.deepEqual(await stores()[0]!.deliveries.claim(connectorId, now, 0, now + MINUTE, ROWS), []);
    });

    it('a lease that ended is claimed again by exactly one of the claimers racing for it from both processes', async () => {
      const connectorId = await newConnector();
      const ids = await stores()[0]!.deliveries.insert(Array.from({ length: 20 }, () => row(connectorId, T0)));
      const lease = T0 + MINUTE;
      assert.equal((await stores()[0]!.deliveries.claim(connectorId, T0, 0, lease, 20)).length, 20);
      const early = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          stores()[i % 2]!.deliveries.claim(connectorId, lease - 1, 0, lease + MINUTE, 20),
        ),
      );
      assert.deepEqual(early.flat(), [], 'still leased');
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          stores()[i % 2]!.deliveries.claim(connectorId, lease, 0, lease + MINUTE, 3),
        ),
      );
      const sweep = await stores()[1]!.deliveries.claim(connectorId, lease, 0, lease + MINUTE, 20);
      const all = [...claims.flat(), ...sweep].map((r) => r.id);
      assert.equal(new Set(all).size, all.length, 'a row leased twice');
      assert.deepEqual(
        all.sort((a, b) => a - b),
        [...ids].sort((a, b) => a - b),
      );
      for (const r of claims.flat()) assert.equal(r.leaseUntil, lease + MINUTE);
    });

    it("an outcome written under a lease another process took over is refused, and leaves that process's lease", async () => {
      const [a, b] = [stores()[0]!, stores()[1]!];
      const connectorId = await newConnector();
      const ids = await a.deliveries.insert([row(connectorId, T0), row(connectorId, T0)]);
      // A attempts both under a lease to 500 s, then stops for a while (a paused process, a frozen machine).
      const leaseA = T0 + 500;
      assert.equal((await a.deliveries.claim(connectorId, T0, 0, leaseA, 10)).length, 2);
      // Its lease over, B takes one row (limit 1) and attempts it under a lease of its own.
      const leaseB = leaseA + 600;
      const [taken] = await b.deliveries.claim(connectorId, leaseA, 0, leaseB, 1);
      assert.equal(taken?.leaseUntil, leaseB);
      const kept = ids.find((id) => id !== taken!.id)!;
      // A's failure of that row, and its 12-hour drop, arrive late: both refused, B's attempt keeps its lease.
      assert.equal(
        await a.deliveries.reschedule(taken!.id, 1, leaseA + 200, leaseA),
        false,
        'held under another lease',
      );
      assert.equal(await a.deliveries.delete(taken!.id, leaseA), false, 'not dropped under a lease it no longer holds');
      const held = await b.deliveries.get(taken!.id);
      assert.deepEqual([held?.attempts, held?.dueTime, held?.leaseUntil], [0, leaseB, leaseB]);
      // The row B did not take is still A's, lease over or not: its failure is recorded.
      assert.equal(await a.deliveries.reschedule(kept, 1, leaseA + 200, leaseA), true);
      const retried = await a.deliveries.claim(connectorId, leaseA + 300, 0, leaseB + MINUTE, 10);
      assert.deepEqual(
        retried.map((r) => [r.id, r.attempts]),
        [[kept, 1]],
        'the retry is due; the row in flight is not claimed a third time',
      );
      // B's attempt records its own outcome.
      assert.equal(await b.deliveries.reschedule(taken!.id, 1, leaseB + 200, leaseB), true);
      const recorded = await a.deliveries.get(taken!.id);
      assert.deepEqual([recorded?.attempts, recorded?.dueTime, recorded?.leaseUntil], [1, leaseB + 200, null]);
    });

    it("of a late outcome and another process's claim racing for a row whose lease ended, exactly one has it", async () => {
      const [a, b] = [stores()[0]!, stores()[1]!];
      const connectorId = await newConnector();
      const ids = await a.deliveries.insert(Array.from({ length: 20 }, () => row(connectorId, T0)));
      const leaseA = T0 + MINUTE;
      assert.equal((await a.deliveries.claim(connectorId, T0, 0, leaseA, 20)).length, 20);
      // A's failures, each under its lease that ended, while B claims: a row B took keeps B's lease (A's outcome is
      // refused); a row whose failure was recorded first is due only at its retry, after B's claims.
      const now = leaseA + 1;
      const leaseB = now + MINUTE;
      const retryAt = now + 10 * MINUTE;
      const [outcomes, claims] = await Promise.all([
        Promise.all(ids.map((id) => a.deliveries.reschedule(id, 1, retryAt, leaseA))),
        Promise.all(Array.from({ length: 4 }, () => b.deliveries.claim(connectorId, now, 0, leaseB, 3))),
      ]);
      const claimed = claims.flat().map((r) => r.id);
      assert.equal(new Set(claimed).size, claimed.length, 'a row leased twice');
      for (const [i, id] of ids.entries()) {
        const mine = claimed.includes(id);
        assert.equal(
          outcomes[i],
          !mine,
          `row ${id}: the outcome was ${outcomes[i] ? 'recorded' : 'refused'}, B ${mine ? 'took' : 'did not take'} it`,
        );
        const r = await b.deliveries.get(id);
        assert.deepEqual(
          [r?.attempts, r?.dueTime, r?.leaseUntil],
          mine ? [0, leaseB, leaseB] : [1, retryAt, null],
          `row ${id}`,
        );
      }
    });

    it('claims with a cap hold the per-connector limit for the cluster: in flight at most max, or whileHanging', async () => {
      const connectorId = await newConnector();
      await stores()[0]!.deliveries.insert(
        Array.from({ length: 300 }, (_, i) => ({
          connectorId,
          eventId: `cap${i}`,
          body: Buffer.from('{}'),
          enqueueTime: T0,
          dueTime: T0,
        })),
      );
      const LEASE = MINUTE;
      const cap = (now: number) => ({ max: 10, whileHanging: 2, hangingIfLeasedBefore: now + LEASE - 1_000_000 });
      // 12 claimers at once over both stores, each asking for 8: together they may take 10.
      const now = T0 + 1;
      const claims = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          stores()[i % 2]!.transaction((tx) =>
            tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now)),
          ),
        ),
      );
      // Claimers of one connector wait for each other: together they took the 10, none went past the limit.
      const taken = claims.flat();
      assert.equal(taken.length, 10);
      assert.deepEqual(
        await stores()[0]!.transaction((tx) =>
          tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now)),
        ),
        [],
      );
      assert.equal(new Set(taken.map((r) => r.id)).size, 10);
      // Nothing more while those 10 are in flight.
      assert.deepEqual(
        await stores()[1]!.transaction((tx) =>
          tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now)),
        ),
        [],
      );
      // Two answered: two more may start.
      for (const r of taken.slice(0, 2)) assert.equal(await stores()[0]!.deliveries.delete(r.id), true);
      assert.equal(
        (
          await stores()[0]!.transaction((tx) =>
            tx.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now)),
          )
        ).length,
        2,
      );
      // Two seconds on, the oldest leases have been in flight for over a second: the connector hangs, 2 at most, and
      // 10 are in flight already.
      const later = now + 2_000_000;
      assert.deepEqual(
        await stores()[1]!.transaction((tx) =>
          tx.deliveries.claim(connectorId, later, T0 - MINUTE, later + LEASE, 8, cap(later)),
        ),
        [],
      );
      // Once every lease has ended (their process died), the rows are due again and the limit counts nothing.
      const afterLeases = now + LEASE + 1;
      assert.equal(
        (
          await stores()[1]!.transaction((tx) =>
            tx.deliveries.claim(connectorId, afterLeases, T0 - MINUTE, afterLeases + LEASE, 8, cap(afterLeases)),
          )
        ).length,
        8,
      );
    });

    it("claims of several connectors in one statement hold each connector's cluster limit, beside leased writes, without deadlocks", async () => {
      const all: string[] = [];
      for (let i = 0; i < 6; i++) all.push(await newConnector());
      const connectors = all.slice(0, 4);
      const now = T0 + 1;
      const LEASE = MINUTE;
      for (const connectorId of connectors) {
        await stores()[0]!.deliveries.insert(
          Array.from({ length: 200 }, (_, i) => ({
            connectorId,
            eventId: `m${i}`,
            body: Buffer.from('{}'),
            enqueueTime: T0,
            dueTime: T0,
          })),
        );
      }
      const cap = { max: 10, whileHanging: 2, hangingIfLeasedBefore: now };
      // 16 claims at once over both stores, each of these four connectors and two more with nothing due, in a rotation
      // of its own, beside transactions writing leased rows of all six in reverse order: claimMany takes its
      // connectors' claim locks in the order every process takes them, whatever the order of its asks.
      const claims = Array.from({ length: 16 }, (_, i) => {
        const order = all.map((_, k) => all[(i + k) % all.length]!);
        return stores()[i % 2]!.deliveries.claimMany(
          order.map((connectorId) => ({ connectorId, limit: 4, cap })),
          1000,
          now,
          T0 - MINUTE,
          now + LEASE,
        );
      });
      const writes = Array.from({ length: 8 }, (_, i) =>
        stores()[i % 2]!.transaction(
          (tx) =>
            tx.deliveries.add(
              [...all].reverse().map((connectorId) => ({
                connectorId,
                eventId: `w${i}`,
                body: Buffer.from('{}'),
                enqueueTime: now,
                dueTime: now + LEASE,
                leaseUntil: now + LEASE,
                leaseIf: { cap, enqueuedAfter: T0 - MINUTE },
              })),
            ),
          { rerunnable: true },
        ),
      );
      const claimed = (await Promise.all(claims)).flat(2);
      await Promise.all(writes);
      const ids = claimed.map((r) => r.id);
      assert.equal(new Set(ids).size, ids.length, 'a row leased twice');
      // A connector's rows due go first: the writes found them and queued theirs due. So each such connector's 10 in
      // flight are its claimed rows (and the writes leased theirs for the other two).
      for (const connectorId of connectors)
        assert.equal(claimed.filter((r) => r.connectorId === connectorId).length, 10, connectorId);
      assert.equal(claimed.filter((r) => !connectors.includes(r.connectorId)).length, 0);
      // What an attempt here has ended frees its slot for this process's claims, connector by connector.
      const [a, b] = [
        claimed.find((r) => r.connectorId === connectors[0])!,
        claimed.find((r) => r.connectorId === connectors[1])!,
      ];
      const more = await stores()[0]!.deliveries.claimMany(
        [
          { connectorId: connectors[1]!, limit: 4, cap },
          { connectorId: connectors[0]!, limit: 4, cap: { ...cap, ended: new Set([a.id]) } },
        ],
        1000,
        now,
        T0 - MINUTE,
        now + LEASE,
      );
      assert.deepEqual(
        more.map((rows) => rows.length),
        [0, 1],
        `${b.id} ended nowhere`,
      );
    });

    it('rows queued leased under leaseIf keep the limit with each other and with claims; the rest are queued due', async () => {
      const connectorId = await newConnector();
      const now = T0 + 1;
      const LEASE = MINUTE;
      const cap = (at: number) => ({ max: 10, whileHanging: 2, hangingIfLeasedBefore: at + LEASE - 1_000_000 });
      const leased = (name: string, at = now): NewDelivery => ({
        connectorId,
        eventId: name,
        body: Buffer.from('{}'),
        enqueueTime: at,
        dueTime: at + LEASE,
        leaseUntil: at + LEASE,
        leaseIf: { cap: cap(at), enqueuedAfter: T0 - MINUTE },
      });
      const read = async (r: NewDelivery) => {
        const d = (await stores()[0]!.deliveries.get(r.queued!.id))!;
        return [d.leaseUntil, d.dueTime];
      };
      // 12 transactions at once over both stores, 3 rows each: alone, in a transaction, in a rerunnable one.
      const batches = Array.from({ length: 12 }, (_, b) => [0, 1, 2].map((k) => leased(`l${b}-${k}`)));
      await Promise.all(
        batches.map((rows, b) => {
          const store = stores()[b % 2]!;
          return b % 3 === 0
            ? store.deliveries.add(rows)
            : store.transaction((tx) => tx.deliveries.add(rows), { rerunnable: b % 3 === 2 });
        }),
      );
      const all = batches.flat();
      const kept = all.filter((r) => r.queued!.leased);
      assert.equal(kept.length, 10);
      for (const r of kept) assert.deepEqual(await read(r), [now + LEASE, now + LEASE]);
      // The others are due at once, for a claim to take when there is room.
      for (const r of all.filter((x) => !x.queued!.leased)) assert.deepEqual(await read(r), [null, now]);
      // Two answered: there is room for two, but rows are due, and they go first.
      for (const r of kept.slice(0, 2)) assert.equal(await stores()[0]!.deliveries.delete(r.queued!.id), true);
      const late = leased('late');
      await stores()[1]!.deliveries.add([late]);
      assert.equal(late.queued!.leased, false);
      assert.equal(
        (await stores()[1]!.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(now))).length,
        2,
      );
      // Once nothing is due, a row is leased again when there is room, and leases that have hung for over a second
      // cut the limit to whileHanging.
      await stores()[0]!.deliveries.deleteByConnector(connectorId, 100);
      const fresh = [leased('f1'), leased('f2'), leased('f3')];
      await stores()[0]!.deliveries.add(fresh);
      assert.deepEqual(
        fresh.map((r) => r.queued!.leased),
        [true, true, true],
      );
      const later = now + 2_000_000;
      const hung = leased('h', later);
      await stores()[1]!.deliveries.add([hung]);
      assert.equal(hung.queued!.leased, false);
    });

    it('rows named as ended (attempt over, outcome not yet recorded) are left out of the count, by claims and leased writes', async () => {
      const connectorId = await newConnector();
      const now = T0 + 1;
      const LEASE = MINUTE;
      const inFlight = await stores()[0]!.deliveries.insert(
        Array.from({ length: 10 }, (_, i) => ({
          connectorId,
          eventId: `e${i}`,
          body: Buffer.from('{}'),
          enqueueTime: now,
          dueTime: now + LEASE,
          leaseUntil: now + LEASE,
        })),
      );
      // In no order, as a live set holds them.
      const ended = new Set(inFlight.slice(0, 4).reverse());
      const cap = (names?: ReadonlySet<number>) => ({
        max: 10,
        whileHanging: 2,
        hangingIfLeasedBefore: now,
        ended: names,
      });
      const leased = (name: string, names?: ReadonlySet<number>): NewDelivery => ({
        connectorId,
        eventId: name,
        body: Buffer.from('{}'),
        enqueueTime: now,
        dueTime: now + LEASE,
        leaseUntil: now + LEASE,
        leaseIf: { cap: cap(names), enqueuedAfter: T0 - MINUTE },
      });
      // 10 in flight: nothing more, unless some of them have ended.
      const refused = leased('refused');
      await stores()[0]!.deliveries.add([refused]);
      assert.equal(refused.queued!.leased, false);
      await stores()[0]!.deliveries.deleteMany([refused.queued!.id]);
      // 4 of them ended: room for 4 (in a rerunnable transaction, from the other store); the fifth is queued due.
      const rows = [leased('a', ended), leased('b', ended), leased('c', ended), leased('d', ended), leased('e', ended)];
      await stores()[1]!.transaction((tx) => tx.deliveries.add(rows), { rerunnable: true });
      assert.deepEqual(
        rows.map((r) => r.queued!.leased),
        [true, true, true, true, false],
      );
      // A claim counts the same way: 10 leased and not ended (6 + the 4 above), no room; one more ended, room for one.
      // Ids that name no leased row of the connector (here, none at all), below and above its own, change nothing.
      assert.deepEqual(
        await stores()[0]!.deliveries.claim(connectorId, now, T0 - MINUTE, now + LEASE, 8, cap(ended)),
        [],
      );
      const claimed = await stores()[1]!.deliveries.claim(
        connectorId,
        now,
        T0 - MINUTE,
        now + LEASE,
        8,
        cap(new Set([1e12, inFlight[4]!, ...ended, 1])),
      );
      assert.deepEqual(
        claimed.map((r) => r.eventId),
        ['e'],
      );
    });

    it('a claim waits for a transaction queueing leased rows of its connector, then counts them', async () => {
      const connectorId = await newConnector();
      const now = T0 + 1;
      const cap = { max: 10, whileHanging: 2, hangingIfLeasedBefore: now };
      const rows: NewDelivery[] = Array.from({ length: 8 }, (_, i) => ({
        connectorId,
        eventId: `w${i}`,
        body: Buffer.from('{}'),
        enqueueTime: now,
        dueTime: now + MINUTE,
        leaseUntil: now + MINUTE,
        leaseIf: { cap, enqueuedAfter: T0 - MINUTE },
      }));
      let claim: Promise<DeliveryRecord[]> | null = null;
      let claimedEarly = false;
      await stores()[0]!.transaction(async (tx) => {
        await tx.deliveries.add(rows);
        // Rows due meanwhile (no lease asked: they wait for nothing), and a claim of them from the other store.
        await stores()[1]!.deliveries.add(
          Array.from({ length: 5 }, (_, i) => ({
            connectorId,
            eventId: `d${i}`,
            body: Buffer.from('{}'),
            enqueueTime: now,
            dueTime: now,
          })),
        );
        claim = stores()[1]!.deliveries.claim(connectorId, now, T0 - MINUTE, now + MINUTE, 8, cap);
        void claim.then(() => {
          claimedEarly = true;
        });
        await sleep(200);
        assert.equal(claimedEarly, false, 'the claim waits for the commit');
      });
      assert.deepEqual(
        rows.map((r) => r.queued!.leased),
        Array(8).fill(true),
      );
      assert.equal((await claim!).length, 2);
    });

    it('paced claims of one connector from both processes take turns: start times never closer than the spacing', async () => {
      const { claimPaced, spacingOf } = await import('../../../../src/delivery/pacing.ts');
      const connectorId = await newConnector();
      await stores()[0]!.deliveries.insert(
        Array.from({ length: 60 }, (_, i) => ({
          connectorId,
          eventId: `p${i}`,
          body: Buffer.from('{}'),
          enqueueTime: T0,
          dueTime: T0,
        })),
      );
      const maxRate = 40;
      const starts: number[] = [];
      // 8 claimers at the same now, alternating between the stores: only the first 250 ms of starts fit, 10 of them.
      await Promise.all(
        Array.from({ length: 8 }, (_, n) =>
          stores()[n % 2]!.transaction(async (tx) => {
            const got = await claimPaced(tx, { connectorId, limit: 4, maxRate }, T0, T0 - MINUTE, T0 + MINUTE);
            starts.push(...got.rows.map((r) => r.startAt));
          }),
        ),
      );
      starts.sort((a, b) => a - b);
      assert.equal(starts.length, 10);
      assert.deepEqual(
        starts,
        Array.from({ length: 10 }, (_, i) => T0 + i * spacingOf(maxRate)),
      );
    });
  });
}
