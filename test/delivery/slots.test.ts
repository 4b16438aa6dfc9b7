// Attempt slots and connector health alone, with the fake clock (slots.ts): per-connector and overall caps, the fair
// share, failing and suspect connectors, and the bound on the slots they hold together.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSlots } from '../../src/delivery/slots.ts';
import { FakeClock } from '../../src/runtime/clock.ts';

describe('slots', () => {
  const options = { perConnector: 4, perFailingConnector: 1, total: 6, suspectTotal: 3, suspectAfterMs: 1000 };

  it('failing and suspect connectors together hold at most suspectTotal slots, however many they are', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    const dead = ['d1', 'd2', 'd3', 'd4', 'd5'];
    for (const id of dead) {
      slots.started(id, clock.now());
      slots.ended(id, clock.now(), false);
    }
    let probes = 0;
    for (const id of dead) {
      while (slots.capacityOf(id, dead.length + 1) > 0) {
        slots.take(id);
        probes++;
      }
    }
    assert.equal(probes, 3, 'three probes in flight, not one per failing connector');
    assert.equal(slots.inFlightSuspect, 3);
    assert.equal(
      slots.capacityOf('healthy', dead.length + 1),
      1,
      'the rest of the overall cap stays for a connector that answers',
    );
    // A slot given back makes room for one more probe, of any failing connector.
    slots.give('d1');
    assert.equal(slots.capacityOf('d4', dead.length + 1), 1);
    // A connector that turns suspect while its slots are in flight: they were taken healthy, so they do not count;
    // what it takes from now on does.
    slots.take('h');
    slots.started('h', clock.now());
    clock.advance(1001);
    assert.equal(slots.suspect('h'), true);
    assert.equal(slots.inFlightSuspect, 2);
    slots.give('h');
    assert.equal(slots.inFlightSuspect, 2);
  });

  it('connectors that answer keep their reserve while slots taken before a connector turned suspect fill the cap', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options); // total 6, suspectTotal 3: 3 kept for connectors that answer
    // Six new endpoints of unknown health take every slot, and hang.
    for (const id of ['n1', 'n2', 'n3', 'n4', 'n5', 'n6']) {
      slots.take(id);
      slots.started(id, clock.now());
    }
    assert.equal(slots.room(), 0, 'the cap is full, and nobody is known to hang yet');
    clock.advance(1001); // now they are suspect
    assert.equal(slots.suspectHeld(), 6);
    assert.equal(slots.room(), 3, 'a connector that answers may start 3 beyond the cap');
    slots.take('healthy');
    slots.take('healthy');
    assert.equal(slots.room(), 1);
  });

  it('counts slots per connector and overall', () => {
    const slots = createSlots(new FakeClock(), options);
    assert.equal(slots.capacityOf('a'), 4);
    slots.take('a');
    slots.take('a');
    slots.take('b');
    assert.equal(slots.capacityOf('a'), 2);
    assert.equal(slots.inFlightTotal, 3);
    slots.give('a');
    assert.equal(slots.capacityOf('a'), 3);
    assert.equal(slots.inFlightTotal, 2);
  });

  it('gives a fair share of the overall cap among competitors while health is unknown', () => {
    const slots = createSlots(new FakeClock(), options);
    assert.equal(slots.capacityOf('a', 3), 2); // 6 / 3
    assert.equal(slots.capacityOf('a', 10), 1); // never below the failing share
  });

  it('a failed attempt makes the connector failing (one slot) until an attempt succeeds', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    slots.started('a', clock.now());
    slots.ended('a', clock.now(), false);
    assert.equal(slots.suspect('a'), true);
    assert.equal(slots.capacityOf('a'), 1);
    slots.started('a', clock.now());
    slots.ended('a', clock.now(), true);
    assert.equal(slots.suspect('a'), false);
    assert.equal(slots.capacityOf('a'), 4);
  });

  it('an attempt in flight for longer than suspectAfterMs makes the connector suspect; its end clears it', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    const start = clock.now();
    slots.started('a', start);
    clock.advance(1000);
    assert.equal(slots.suspect('a'), false);
    clock.advance(1);
    assert.equal(slots.suspect('a'), true);
    assert.equal(slots.suspect('b'), false);
    slots.ended('a', start, true);
    assert.equal(slots.suspect('a'), false);
  });

  it('the oldest attempt in flight decides, whichever order attempts end in', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    const first = clock.now();
    slots.started('a', first);
    clock.advance(600);
    const second = clock.now();
    slots.started('a', second);
    clock.advance(600);
    assert.equal(slots.suspect('a'), true); // the first has run 1,200 ms
    slots.ended('a', first, true);
    assert.equal(slots.suspect('a'), false); // the second has run 600 ms
    clock.advance(500);
    assert.equal(slots.suspect('a'), true);
    slots.ended('a', second, true);
    assert.equal(slots.suspect('a'), false);
  });
});
