// The rows whose attempts ended here and whose outcomes are not yet committed (ended-rows.ts): what the cluster's count
// of a connector's attempts in flight leaves out (claim.ts, InFlightCap.ended).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EndedRows } from '../../src/delivery/ended-rows.ts';

/** A promise settled when the test says. */
function later() {
  let settle!: () => void;
  const promise = new Promise<void>((resolve) => (settle = resolve));
  return { promise, settle };
}

describe('ended rows', () => {
  it('a row counts until its outcome is recorded; a connector with none left is forgotten', async () => {
    const ended = new EndedRows();
    const [a, b, c] = [later(), later(), later()];
    ended.add('c1', 1, a.promise);
    ended.add('c1', 2, b.promise);
    ended.add('c2', 3, c.promise);
    assert.deepEqual([...ended.of('c1')!], [1, 2]);
    a.settle();
    await a.promise;
    await null;
    assert.deepEqual([...ended.of('c1')!], [2]);
    b.settle();
    await b.promise;
    await null;
    assert.equal(ended.of('c1'), undefined);
    assert.deepEqual([...ended.of('c2')!], [3], 'each connector on its own');
  });
});
