// Store contract: the promises a backend shared by several processes (several connections) must keep. Each test
// starts many calls at once and then checks totals and disjointness, so a backend with real parallelism is
// exercised by the same test as the single-writer one: two claimers never lease the same row, a lease that ends
// makes its row claimable again (by one claimer), a settings update racing the engine's state update loses
// neither, and concurrent increments of metrics and counters are all counted.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryRecord } from '../../../src/store/contract/connector-repos.ts';
import type { Store } from '../../../src/store/contract/store.ts';
import {
  MINUTE,
  row,
  seedConnector,
  seedProject,
  serviceAccount,
  sorted,
  T0,
  user,
  useStore,
  type OpenStore,
} from './fixtures.ts';

const CLAIMERS = 8;
const ROWS = 20;
const LIMIT = 3; // CLAIMERS × LIMIT > ROWS: every row is wanted by more than one claimer

/** Every id of the claims, once each; throws on a row leased twice. */
function disjointUnion(claims: DeliveryRecord[][]): number[] {
  const all = claims.flat().map((r) => r.id);
  const twice = all.filter((id, i) => all.indexOf(id) !== i);
  assert.deepEqual(twice, [], 'rows leased by two claimers');
  return sorted(all);
}

export function concurrencyContract(open: OpenStore): void {
  describe('concurrency', () => {
    const store = useStore(open);
    /** A connector with ROWS rows queued at T0, due from T0 on. */
    const queue = async (s: Store) => {
      const c = await seedConnector(s);
      const ids = await s.deliveries.insert(Array.from({ length: ROWS }, (_, i) => row(c.id, T0, { dueTime: T0 + i })));
      return { c, ids: sorted(ids) };
    };

    it('claimers racing never lease the same row; between them they lease every due row once', async () => {
      const { c, ids } = await queue(store());
      const claims = await Promise.all(
        Array.from({ length: CLAIMERS }, () => store().deliveries.claim(c.id, T0 + ROWS, 0, T0 + MINUTE, LIMIT)),
      );
      for (const claim of claims) assert.ok(claim.length <= LIMIT);
      // A backend that skips rows another claimer holds may leave some for a later claim; none is leased twice.
      const sweep = await store().deliveries.claim(c.id, T0 + ROWS, 0, T0 + MINUTE, ROWS);
      assert.deepEqual(disjointUnion([...claims, sweep]), ids);
    });

    it('claims inside concurrent transactions never lease the same row', async () => {
      const { c, ids } = await queue(store());
      const claims = await Promise.all(
        Array.from({ length: CLAIMERS }, () =>
          store().transaction((tx) => tx.deliveries.claim(c.id, T0 + ROWS, 0, T0 + MINUTE, LIMIT)),
        ),
      );
      const sweep = await store().transaction((tx) => tx.deliveries.claim(c.id, T0 + ROWS, 0, T0 + MINUTE, ROWS));
      assert.deepEqual(disjointUnion([...claims, sweep]), ids);
    });

    it('two claimers, each reading what is due then claiming it in a transaction, never lease the same row', async () => {
      const { c, ids } = await queue(store());
      const now = T0 + ROWS;
      // The engine's claim: a read of the connectors with due rows, then a transaction claiming for each.
      const engine = async () => {
        const due = await store().deliveries.connectorsWithDue(now, 0);
        return store().transaction(async (tx) => {
          const out: DeliveryRecord[] = [];
          for (const id of due) out.push(...(await tx.deliveries.claim(id, now, 0, now + MINUTE, LIMIT)));
          return out;
        });
      };
      const claims = await Promise.all(Array.from({ length: CLAIMERS }, engine));
      const mine = claims.map((claim) => claim.filter((r) => r.connectorId === c.id));
      const sweep = await store().deliveries.claim(c.id, now, 0, now + MINUTE, ROWS);
      assert.deepEqual(disjointUnion([...mine, sweep]), ids);
    });

    it('a lease that ended is claimed again by exactly one of the claimers racing for it', async () => {
      const { c, ids } = await queue(store());
      const lease = T0 + MINUTE;
      assert.equal((await store().deliveries.claim(c.id, T0 + ROWS, 0, lease, ROWS)).length, ROWS);
      const early = await Promise.all(
        Array.from({ length: CLAIMERS }, () => store().deliveries.claim(c.id, lease - 1, 0, lease + MINUTE, LIMIT)),
      );
      assert.deepEqual(early.flat(), [], 'still leased');
      const claims = await Promise.all(
        Array.from({ length: CLAIMERS }, () => store().deliveries.claim(c.id, lease, 0, lease + MINUTE, LIMIT)),
      );
      const sweep = await store().deliveries.claim(c.id, lease, 0, lease + MINUTE, ROWS);
      assert.deepEqual(disjointUnion([...claims, sweep]), ids);
      for (const r of claims.flat()) assert.equal(r.leaseUntil, lease + MINUTE);
    });

    it("a settings update (read, then write in a transaction) racing the engine's state update loses neither", async () => {
      const c = await seedConnector(store());
      // Rounds, each starting both transactions at once, in turn one or the other first; with real parallelism (or
      // transactions that interleave) their reads and writes interleave.
      for (let round = 1; round <= 10; round++) {
        const patch = () =>
          store().transaction(async (tx) => {
            const before = await tx.dataConnectors.getForUpdate(c.id);
            await tx.dataConnectors.update({
              ...before!,
              displayName: `round ${round}`,
              url: `https://r${round}.example.com/`,
              updateTime: T0 + round,
            });
          });
        const engine = () =>
          store().transaction(async (tx) => {
            const current = await tx.dataConnectors.getForUpdate(c.id);
            await tx.dataConnectors.updateState(c.id, current!.status, T0 - round, T0 + round);
          });
        await Promise.all(round % 2 === 0 ? [patch(), engine()] : [engine(), patch()]);
        const after = await store().dataConnectors.get(c.id);
        assert.deepEqual(
          [after?.displayName, after?.url, after?.failingSince],
          [`round ${round}`, `https://r${round}.example.com/`, T0 - round],
          `round ${round}`,
        );
      }
    });

    it('a project update (read, then write in a transaction) racing a label batch loses neither', async () => {
      const p = await seedProject(store());
      for (let round = 1; round <= 10; round++) {
        const rename = () =>
          store().transaction(async (tx) => {
            const before = await tx.projects.getForUpdate(p.id);
            await tx.projects.update({ ...before!, displayName: `round ${round}`, updateTime: T0 + round });
          });
        const label = () =>
          store().transaction(async (tx) => {
            const before = await tx.projects.getForUpdate(p.id);
            await tx.projects.update({
              ...before!,
              labels: { ...before!.labels, [`r${round}`]: '' },
              updateTime: T0 + round,
            });
          });
        await Promise.all(round % 2 === 0 ? [rename(), label()] : [label(), rename()]);
        const after = await store().projects.getForUpdate(p.id);
        assert.equal(after?.displayName, `round ${round}`, `round ${round}`);
        assert.deepEqual(
          Object.keys(after!.labels).sort(),
          Array.from({ length: round }, (_, i) => `r${i + 1}`).sort(),
          `round ${round}`,
        );
      }
    });

    it('service account updates of different fields (read, then write in a transaction) racing lose neither', async () => {
      const p = await seedProject(store());
      const sa = serviceAccount(p.id);
      await store().serviceAccounts.create(sa);
      for (let round = 1; round <= 10; round++) {
        const rename = () =>
          store().transaction(async (tx) => {
            const before = await tx.serviceAccounts.getForUpdate(sa.id);
            await tx.serviceAccounts.update({ ...before!, displayName: `round ${round}`, updateTime: T0 + round });
          });
        const toggle = () =>
          store().transaction(async (tx) => {
            const before = await tx.serviceAccounts.getForUpdate(sa.id);
            await tx.serviceAccounts.update({ ...before!, enableBasicAuth: round % 2 === 0, updateTime: T0 + round });
          });
        await Promise.all(round % 2 === 0 ? [rename(), toggle()] : [toggle(), rename()]);
        const after = await store().serviceAccounts.get(sa.id);
        assert.deepEqual(
          [after?.displayName, after?.enableBasicAuth],
          [`round ${round}`, round % 2 === 0],
          `round ${round}`,
        );
      }
    });

    it('of transactions marking one invitation used at once, exactly one succeeds', async () => {
      const u = user({ active: false });
      await store().users.create(u);
      const invite = {
        tokenHash: `race-${u.id}`,
        userId: u.id,
        organizationId: null,
        expireTime: T0 + MINUTE,
        usedTime: null,
      };
      await store().invites.create(invite);
      // Each reads it first, as the accept does: on a backend with concurrent writers several may find it unused.
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          store().transaction(async (tx) => {
            await tx.invites.get(invite.tokenHash);
            return tx.invites.markUsed(invite.tokenHash, T0 + i);
          }),
        ),
      );
      assert.equal(results.filter(Boolean).length, 1);
    });

    it("the engine's state update never undoes settings written meanwhile", async () => {
      const c = await seedConnector(store(), { events: ['touch'] });
      const results = await Promise.all([
        store().dataConnectors.updateState(c.id, 'ACTIVE', T0 - 1, T0 + 1),
        store().dataConnectors.update({ ...c, events: ['co2'], headers: { a: 'b' }, updateTime: T0 + 2 }),
        store().dataConnectors.updateState(c.id, 'ACTIVE', T0 - 3, T0 + 3),
      ]);
      assert.equal(results.length, 3);
      const after = await store().dataConnectors.get(c.id);
      assert.deepEqual([after?.events, after?.headers], [['co2'], { a: 'b' }]);
    });

    it('concurrent metric adds to one bucket, alone and in transactions, are all counted', async () => {
      const c = await seedConnector(store());
      const N = 25;
      await Promise.all(
        Array.from({ length: N }, (_, i) => {
          const hist = new Map([
            ['100', 1],
            [`k${i % 5}`, 2],
          ]);
          return i % 2 === 0
            ? store().connectorMetrics.add(c.id, T0, 1, 2, hist)
            : store().transaction((tx) => tx.connectorMetrics.add(c.id, T0, 1, 2, hist));
        }),
      );
      const [bucket] = await store().connectorMetrics.listSince(c.id, 0);
      assert.deepEqual([bucket?.successCount, bucket?.errorCount], [N, 2 * N]);
      assert.deepEqual({ ...bucket?.latencyHist }, { 100: N, k0: 10, k1: 10, k2: 10, k3: 10, k4: 10 });
    });

    it('concurrent adds to the delivery counters, alone and in transactions, are all counted', async () => {
      const N = 25;
      const deltas = { 'race_total{outcome="ack"}': 1, race_seconds_sum: 0.5 };
      const before = await store().connectorMetrics.counters();
      await Promise.all(
        Array.from({ length: N }, (_, i) =>
          i % 2 === 0
            ? store().connectorMetrics.addCounters(deltas)
            : store().transaction((tx) => tx.connectorMetrics.addCounters(deltas)),
        ),
      );
      const after = await store().connectorMetrics.counters();
      assert.equal(after['race_total{outcome="ack"}'], (before['race_total{outcome="ack"}'] ?? 0) + N);
      assert.equal(after.race_seconds_sum, (before.race_seconds_sum ?? 0) + N * 0.5);
    });
  });
}
