// The group commit's gap between batches (store/postgres/batching/group-commit.ts, GroupCommitOptions.gapMs), against a fake
// pool: transactions requested while a gap runs wait for it and share one batch; without a gap each batch starts as
// soon as the one before ended. Real timers, with margins wide enough for a busy machine.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { createGroupCommit } from '../../src/store/postgres/batching/group-commit.ts';
import type { Repos } from '../../src/store/contract/store.ts';
import { sleep } from '../helpers/until.ts';

/** A group commit on a pool whose connections answer at once; records when each batch began and how big it was. */
function fakeGroupCommit(gapMs: number) {
  const batches: Array<{ at: number; size: number }> = [];
  let current: { at: number; size: number } | null = null;
  const client = { query: async () => ({ rows: [], rowCount: 0 }), release: () => undefined };
  // A batch begins when it asks for its connection, the moment the gap is counted from. (Timed later, at its repos,
  // a busy machine's delay before the first batch got there shortened the gap measured: 44.7 ms of 50 once in CI.)
  let connectedAt = 0;
  const pool = {
    connect: async () => {
      connectedAt = performance.now();
      return client;
    },
  } as unknown as pg.Pool;
  const commit = createGroupCommit(
    {
      pool,
      batchRepos() {
        current = { at: connectedAt, size: 0 };
        batches.push(current);
        return {
          repos: {} as Repos,
          readAhead: async () => undefined,
          beforeCommit: async () => undefined,
          committed: () => undefined,
          stale: () => undefined,
        };
      },
      mayRunUnlocked: () => false,
      isStale: () => false,
      alone: () => Promise.reject(new Error('not expected')),
      retryable: () => false,
    },
    { gapMs },
  );
  const run = () =>
    commit.run(async () => {
      current!.size++;
    });
  return { batches, run, commit };
}

describe('group commit: the gap between batches', () => {
  it('transactions requested during the gap wait for it and share one batch', async () => {
    const { batches, run, commit } = fakeGroupCommit(50);
    const first = run();
    await first;
    const later: Array<Promise<unknown>> = [];
    for (let i = 0; i < 5; i++) {
      later.push(run());
      await sleep(2);
    }
    await Promise.all(later);
    await commit.idle();
    assert.deepEqual(
      batches.map((b) => b.size),
      [1, 5],
    );
    assert.ok(
      batches[1]!.at - batches[0]!.at >= 45,
      `the second batch began ${batches[1]!.at - batches[0]!.at} ms after the first`,
    );
  });

  it('without a gap each transaction requested after the last batch ended runs at once, in a batch of its own', async () => {
    const { batches, run, commit } = fakeGroupCommit(0);
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await run();
      assert.ok(performance.now() - started < 40, 'ran at once');
      await sleep(2);
    }
    await commit.idle();
    assert.deepEqual(
      batches.map((b) => b.size),
      [1, 1, 1, 1, 1],
    );
  });

  it('a transaction requested long after the last batch is not held', async () => {
    // A gap long enough that being held for it cannot pass for a busy machine's delay.
    const { run, commit } = fakeGroupCommit(200);
    await run();
    await sleep(300);
    const started = performance.now();
    await run();
    assert.ok(performance.now() - started < 150, `held ${performance.now() - started} ms`);
    await commit.idle();
  });
});
