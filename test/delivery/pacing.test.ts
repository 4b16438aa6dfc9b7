// Rate pacing (delivery/pacing.ts, extensions §X4 maxRate): how many start times fit before the claim's reach, start
// times spaced 1/maxRate apart across claims, the stored next start, and the memo that spares a claim's read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimPaced, PACE_AHEAD_MICROS, PaceMemo, spacingOf, startsWithin } from '../../src/delivery/pacing.ts';
import { createTestContext } from '../helpers/context.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createConnector } from './engine-setup.ts';

describe('start times', () => {
  it('count the starts before now + PACE_AHEAD, at the spacing, none when the next start is beyond it', () => {
    assert.equal(PACE_AHEAD_MICROS, 250_000);
    assert.equal(spacingOf(5), 200_000);
    assert.equal(startsWithin(0, 0, spacingOf(5)), 2, '0 and 200 ms');
    assert.equal(startsWithin(50_000, 0, spacingOf(5)), 1, '50 ms; 250 ms is out of reach');
    assert.equal(startsWithin(250_000, 0, spacingOf(5)), 0);
    assert.equal(startsWithin(0, 0, spacingOf(10_000)), 2500);
    assert.equal(startsWithin(0, 0, spacingOf(0.5)), 1, 'one every 2 s');
    assert.equal(startsWithin(249_999, 0, spacingOf(0.5)), 1);
  });

  it('the memo skips a connector whose next start is out of reach, until forgotten or reached', () => {
    const memo = new PaceMemo();
    assert.equal(memo.reachable('c', 0), true, 'nothing learnt: the claim reads');
    memo.learnt('c', 1_000_000);
    assert.equal(memo.reachable('c', 0), false);
    assert.equal(memo.reachable('c', 750_001), true);
    memo.forget('c');
    assert.equal(memo.reachable('c', 0), true);
  });
});

describe('claimPaced', () => {
  it('gives claimed rows start times spaced 1/maxRate apart, continuing across claims, in due order', async () => {
    const t = await createTestContext();
    try {
      const dc = await createConnector(t);
      const now = nowMicros(t.deps);
      await t.deps.store.deliveries.insert(
        Array.from({ length: 9 }, (_, i) => ({
          connectorId: dc.id,
          eventId: `e${i}`,
          body: Buffer.from('{}'),
          enqueueTime: now,
          dueTime: now,
        })),
      );
      const claim = (at: number, limit = 64) =>
        t.deps.store.transaction((tx) =>
          claimPaced(tx, { connectorId: dc.id, limit, maxRate: 10 }, at, at - 3_600_000_000, at + 60_000_000),
        );
      let got = await claim(now);
      assert.deepEqual(
        got.rows.map((r) => [r.delivery.eventId, r.startAt - now]),
        [
          ['e0', 0],
          ['e1', 100_000],
          ['e2', 200_000],
        ],
      );
      assert.equal(got.next, now + 300_000);
      assert.equal(got.wanted, 3);
      // At the same now nothing more fits.
      got = await claim(now);
      assert.deepEqual(got.rows, []);
      assert.equal(got.next, now + 300_000);
      // 100 ms on, the starts continue from the stored next start; the limit bounds them too.
      got = await claim(now + 100_000, 1);
      assert.deepEqual(
        got.rows.map((r) => [r.delivery.eventId, r.startAt - now]),
        [['e3', 300_000]],
      );
      // Long after, the next start is past: starts begin at now, not in a burst to catch up.
      got = await claim(now + 10_000_000);
      assert.deepEqual(
        got.rows.map((r) => r.startAt - now),
        [10_000_000, 10_100_000, 10_200_000],
      );
      // Fewer rows due than the pace allows: all of them, and `wanted` says more would have fitted.
      got = await claim(now + 20_000_000);
      assert.deepEqual(
        got.rows.map((r) => r.delivery.eventId),
        ['e7', 'e8'],
      );
      assert.equal(got.wanted, 3);
      assert.equal(got.next, now + 20_200_000, 'moved on by the rows taken only');
    } finally {
      await t.close();
    }
  });
});
