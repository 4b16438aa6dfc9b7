// Shared Store contract: the connector metrics and the delivery counters of several processes. Adds from two stores
// on one database (two processes) at once, into one bucket or one counter, lose no count.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seedConnector, T0 } from '../fixtures.ts';
import { useSharedStores, type OpenSharedStore } from './fixtures.ts';

export function sharedMetricContract(openShared: OpenSharedStore): void {
  describe('metrics shared by two processes', () => {
    const { stores } = useSharedStores(openShared, 2);

    it('metric adds from two stores into one bucket lose no count and merge the histograms exactly', async () => {
      const connectorId = (await seedConnector(stores()[0]!)).id;
      const N = 200;
      const expected: Record<string, number> = {};
      const adds = Array.from({ length: N }, (_, i) => {
        // Some keys every add shares, some only a few do: both the update and the new-key paths of the merge race.
        const hist = new Map<string, number>([
          ['612', 1],
          [`k${i % 7}`, (i % 3) + 1],
        ]);
        if (i % 50 === 0) hist.set(`rare${i}`, 5);
        for (const [k, v] of hist) expected[k] = (expected[k] ?? 0) + v;
        const store = stores()[i % 2]!;
        return i % 3 === 0
          ? store.transaction((tx) => tx.connectorMetrics.add(connectorId, T0, 1, 2, hist))
          : store.connectorMetrics.add(connectorId, T0, 1, 2, hist);
      });
      await Promise.all(adds);
      for (const s of stores()) {
        const buckets = await s.connectorMetrics.listSince(connectorId, 0);
        assert.equal(buckets.length, 1);
        assert.deepEqual([buckets[0]!.bucketStart, buckets[0]!.successCount, buckets[0]!.errorCount], [T0, N, 2 * N]);
        assert.deepEqual({ ...buckets[0]!.latencyHist }, expected);
        for (const v of Object.values(buckets[0]!.latencyHist)) assert.equal(typeof v, 'number');
      }
    });

    it('counter adds from two stores lose no increment', async () => {
      const N = 100;
      const before = await stores()[0]!.connectorMetrics.counters();
      // Keys in different orders per call: a store that locks them must not deadlock concurrent transactions.
      await Promise.all(
        Array.from({ length: N }, (_, i) => {
          const deltas =
            i % 2 === 0 ? { a_total: 1, b_total: 2, c_sum: 0.25 } : { c_sum: 0.25, b_total: 2, a_total: 1 };
          const store = stores()[i % 2]!;
          return i % 3 === 0
            ? store.transaction((tx) => tx.connectorMetrics.addCounters(deltas))
            : store.connectorMetrics.addCounters(deltas);
        }),
      );
      const after = await stores()[1]!.connectorMetrics.counters();
      const added = (key: string) => (after[key] ?? 0) - (before[key] ?? 0);
      assert.deepEqual(
        { a_total: added('a_total'), b_total: added('b_total'), c_sum: added('c_sum') },
        { a_total: N, b_total: 2 * N, c_sum: N * 0.25 },
      );
    });
  });
}
