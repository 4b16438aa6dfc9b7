// The backlog alone (backlog.ts): which connectors may have due rows in the queue, settled by what each claim found.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backlog } from '../../src/delivery/backlog.ts';

describe('backlog', () => {
  it('a claim that drained a connector takes it out; one that left rows keeps it', () => {
    const backlog = new Backlog();
    backlog.mark('a');
    backlog.mark('b');
    const seen = backlog.snapshot();
    backlog.settle(seen, new Set(['a', 'b']), new Set(['a']));
    assert.equal(backlog.has('a'), false);
    assert.equal(backlog.has('b'), true);
  });

  it('a connector no longer due leaves; one due but never marked joins', () => {
    const backlog = new Backlog();
    backlog.mark('gone');
    backlog.settle(backlog.snapshot(), new Set(['new']), new Set());
    assert.equal(backlog.has('gone'), false);
    assert.equal(backlog.has('new'), true);
    assert.equal(backlog.size, 1);
  });

  it('a mark made after the claim read the queue survives that claim', () => {
    const backlog = new Backlog();
    backlog.mark('a');
    const seen = backlog.snapshot();
    backlog.mark('a'); // a fresh row was queued as due while the claim ran
    backlog.settle(seen, new Set(), new Set());
    assert.equal(backlog.has('a'), true);
  });
});
