// The hand-off's lines alone (lines.ts): rows waiting leased in queue order for a free slot, with bounded places.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClaimedDelivery } from '../../src/delivery/claim.ts';
import { Lines } from '../../src/delivery/lines.ts';

describe('lines', () => {
  const row = (connectorId: string, id: number): ClaimedDelivery => ({
    delivery: {
      id,
      connectorId,
      eventId: `e${id}`,
      body: Buffer.from('{}'),
      enqueueTime: 0,
      dueTime: 0,
      attempts: 0,
      leaseUntil: 1,
    },
    connector: { id: connectorId } as ClaimedDelivery['connector'],
  });

  it('places are bounded per connector and overall', () => {
    const lines = new Lines(2, 3);
    lines.place('a');
    lines.place('a');
    assert.equal(lines.hasRoom('a'), false);
    assert.equal(lines.hasRoom('b'), true);
    lines.place('b');
    assert.equal(lines.hasRoom('b'), false); // 3 places overall
    lines.unplace('a');
    assert.equal(lines.hasRoom('b'), true);
  });

  it('rows leave in queue order, giving their places back; an empty line is gone', () => {
    const lines = new Lines(4, 4);
    for (const id of [1, 2]) {
      lines.place('a');
      lines.push(row('a', id));
    }
    assert.equal(lines.first('a')!.delivery.id, 1);
    assert.equal(lines.shift('a')!.delivery.id, 1);
    assert.equal(lines.waiting('a'), 1);
    assert.equal(lines.shift('a')!.delivery.id, 2);
    assert.equal(lines.has('a'), false);
    assert.equal(lines.waiting('a'), 0);
    assert.equal(lines.shift('a'), undefined);
  });

  it('dropping a line returns its rows and frees their places, reservations kept', () => {
    const lines = new Lines(4, 4);
    lines.place('a');
    lines.push(row('a', 1));
    lines.place('a'); // reserved, not committed yet
    assert.deepEqual(
      lines.drop('a')!.map((r) => r.delivery.id),
      [1],
    );
    assert.equal(lines.waiting('a'), 1);
    assert.equal(lines.drop('a'), undefined);
  });
});
