// Store contract: per-connector metric buckets (counts and a merged latency histogram) and the service-wide
// delivery counters.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Repos } from '../../../src/store/contract/store.ts';
import { MINUTE, seedConnector, T0, useStore, withFreshStore, type OpenStore } from './fixtures.ts';

const B0 = T0; // a bucket start (T0 is on a minute)
const B1 = T0 + MINUTE;
const B2 = T0 + 2 * MINUTE;

export function connectorMetricContract(open: OpenStore): void {
  describe('connectorMetrics', () => {
    const store = useStore(open);

    it('add creates a bucket, then adds to its counts and merges its latency histogram', async () => {
      const c = await seedConnector(store());
      await store().connectorMetrics.add(
        c.id,
        B0,
        2,
        1,
        new Map([
          ['612', 1],
          ['z', 1],
        ]),
      );
      assert.deepEqual(await store().connectorMetrics.listSince(c.id, 0), [
        { bucketStart: B0, successCount: 2, errorCount: 1, latencyHist: { 612: 1, z: 1 } },
      ]);
      await store().connectorMetrics.add(
        c.id,
        B0,
        1,
        0,
        new Map([
          ['612', 2],
          ['40', 1],
        ]),
      );
      await store().connectorMetrics.add(c.id, B0, 0, 4, new Map());
      const [bucket] = await store().connectorMetrics.listSince(c.id, 0);
      assert.deepEqual(
        [bucket?.successCount, bucket?.errorCount, { ...bucket?.latencyHist }],
        [3, 5, { 40: 1, 612: 3, z: 1 }],
      );
    });

    it('keeps one bucket per start: adds to an older bucket after a newer one went on', async () => {
      const c = await seedConnector(store());
      await store().connectorMetrics.add(c.id, B1, 1, 0, new Map([['5', 1]]));
      await store().connectorMetrics.add(c.id, B0, 1, 0, new Map([['6', 1]])); // a late outcome of the minute before
      await store().connectorMetrics.add(c.id, B1, 1, 0, new Map([['5', 1]]));
      await store().connectorMetrics.add(c.id, B0, 0, 1, new Map([['6', 1]]));
      assert.deepEqual(await store().connectorMetrics.listSince(c.id, 0), [
        { bucketStart: B0, successCount: 1, errorCount: 1, latencyHist: { 6: 2 } },
        { bucketStart: B1, successCount: 2, errorCount: 0, latencyHist: { 5: 2 } },
      ]);
    });

    it("listSince reads one connector's buckets from the given start (inclusive), oldest first", async () => {
      const c = await seedConnector(store());
      const other = await seedConnector(store(), { projectId: c.projectId });
      for (const b of [B2, B0, B1]) await store().connectorMetrics.add(c.id, b, 1, 0, new Map());
      await store().connectorMetrics.add(other.id, B1, 9, 9, new Map());
      const starts = async (from: number) =>
        (await store().connectorMetrics.listSince(c.id, from)).map((b) => b.bucketStart);
      assert.deepEqual(await starts(0), [B0, B1, B2]);
      assert.deepEqual(await starts(B1), [B1, B2]);
      assert.deepEqual(await starts(B1 + 1), [B2]);
      assert.deepEqual(await starts(B2 + 1), []);
      assert.deepEqual(await store().connectorMetrics.listSince('missing', 0), []);
    });

    it("deleteByConnector removes one connector's buckets; a later add starts a bucket afresh", async () => {
      const c = await seedConnector(store());
      const other = await seedConnector(store(), { projectId: c.projectId });
      await store().connectorMetrics.add(c.id, B0, 5, 5, new Map([['612', 5]]));
      await store().connectorMetrics.add(other.id, B0, 1, 0, new Map());
      await store().connectorMetrics.deleteByConnector(c.id);
      assert.deepEqual(await store().connectorMetrics.listSince(c.id, 0), []);
      assert.equal((await store().connectorMetrics.listSince(other.id, 0)).length, 1);
      await store().connectorMetrics.add(c.id, B0, 1, 0, new Map([['40', 1]]));
      assert.deepEqual(await store().connectorMetrics.listSince(c.id, 0), [
        { bucketStart: B0, successCount: 1, errorCount: 0, latencyHist: { 40: 1 } },
      ]);
    });

    it('deleteBefore removes up to `limit` buckets of every connector that start before the time, and counts them', () =>
      withFreshStore(open, async (s) => {
        const c = await seedConnector(s);
        const d = await seedConnector(s, { projectId: c.projectId });
        for (const b of [B0, B1, B2]) await s.connectorMetrics.add(c.id, b, 1, 0, new Map([['7', 1]]));
        for (const b of [B0, B1]) await s.connectorMetrics.add(d.id, b, 1, 0, new Map());
        assert.equal(await s.connectorMetrics.deleteBefore(B0, 10), 0, 'strictly before');
        assert.equal(await s.connectorMetrics.deleteBefore(B2, 3), 3, 'the limit holds');
        assert.equal(await s.connectorMetrics.deleteBefore(B2, 3), 1);
        assert.deepEqual(
          (await s.connectorMetrics.listSince(c.id, 0)).map((b) => b.bucketStart),
          [B2],
        );
        assert.deepEqual(await s.connectorMetrics.listSince(d.id, 0), []);
        // A bucket deleted by the pass and then added to again starts afresh.
        await s.connectorMetrics.add(c.id, B1, 1, 0, new Map([['7', 1]]));
        assert.deepEqual((await s.connectorMetrics.listSince(c.id, 0))[0], {
          bucketStart: B1,
          successCount: 1,
          errorCount: 0,
          latencyHist: { 7: 1 },
        });
      }));

    it('keeps nothing of an add whose transaction rolled back', async () => {
      const c = await seedConnector(store());
      const add = (tx: Repos, n: number, hist: Array<[string, number]>) =>
        tx.connectorMetrics.add(c.id, B0, n, 0, new Map(hist));
      await store().transaction((tx) => add(tx, 1, [['612', 1]]));
      await assert.rejects(
        store().transaction(async (tx) => {
          await add(tx, 5, [
            ['612', 5],
            ['700', 1],
          ]);
          throw new Error('undo');
        }),
        /undo/,
      );
      await assert.rejects(
        store().transaction(
          async (tx) => {
            await add(tx, 5, [['612', 5]]);
            throw new Error('undo');
          },
          { rerunnable: true },
        ),
        /undo/,
      );
      await store().transaction((tx) => add(tx, 1, [['612', 1]]));
      const [bucket] = await store().connectorMetrics.listSince(c.id, 0);
      assert.deepEqual([bucket?.successCount, { ...bucket?.latencyHist }], [2, { 612: 2 }]);
    });

    it('adds to service-wide counters keyed by series text, creating a series on its first non-zero increment', () =>
      withFreshStore(open, async (s) => {
        assert.deepEqual(await s.connectorMetrics.counters(), {});
        await s.connectorMetrics.addCounters({
          'c_total{outcome="a"}': 2,
          'c_total{outcome="b"}': 1,
          c_seconds_sum: 0.25,
          c_zero: 0,
        });
        await s.connectorMetrics.addCounters({ 'c_total{outcome="a"}': 3, c_seconds_sum: 0.5 });
        await s.connectorMetrics.addCounters({});
        await s.transaction((tx) => tx.connectorMetrics.addCounters({ 'c_total{outcome="b"}': 1 }));
        assert.deepEqual(await s.connectorMetrics.counters(), {
          'c_total{outcome="a"}': 5,
          'c_total{outcome="b"}': 2,
          c_seconds_sum: 0.75,
        });
        await assert.rejects(
          s.transaction(async (tx) => {
            await tx.connectorMetrics.addCounters({ 'c_total{outcome="a"}': 100, c_new: 1 });
            throw new Error('undo');
          }),
          /undo/,
        );
        assert.deepEqual(await s.connectorMetrics.counters(), {
          'c_total{outcome="a"}': 5,
          'c_total{outcome="b"}': 2,
          c_seconds_sum: 0.75,
        });
      }));
  });
}
