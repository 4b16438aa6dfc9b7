// What a notification rule makes of an event (domain/rule-evaluation.ts): the value each trigger reads, when a
// condition holds, scopes, and schedules in an IANA zone across a daylight saving time change.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conditionHolds, deviceInScope, inSchedule, triggerValue } from '../../src/domain/rule-evaluation.ts';
import type { ScheduleSpec } from '../../src/domain/rule-spec.ts';

const at = (iso: string) => Date.parse(iso) * 1000;
const slot = (days: ScheduleSpec['slots'][number]['days'], from: [number, number], to: [number, number]) => ({
  days,
  times: [{ start: { hour: from[0], minute: from[1] }, end: { hour: to[0], minute: to[1] } }],
});

describe('rule evaluation', () => {
  it('reads the value of its field only, relativeHumidity from humidity events', () => {
    const t = { field: 'temperature', range: { upper: 8, type: 'WITHIN' as const } };
    assert.equal(triggerValue(t, 'temperature', { temperature: { value: 4.5 } }), 4.5);
    assert.equal(triggerValue(t, 'humidity', { humidity: { relativeHumidity: 40 } }), undefined);
    const h = { field: 'relativeHumidity', range: { upper: 80, type: 'WITHIN' as const } };
    assert.equal(triggerValue(h, 'humidity', { humidity: { temperature: 20, relativeHumidity: 81 } }), 81);
    assert.equal(
      triggerValue({ field: 'contact', contact: 'OPEN' }, 'contact', { contact: { state: 'OPEN' } }),
      'OPEN',
    );
  });

  it('holds within or outside inclusive bounds, a missing bound unbounded; states as named', () => {
    const fridge = { field: 'temperature', range: { lower: 2, upper: 8, type: 'OUTSIDE' as const } };
    assert.deepEqual(
      [1.9, 2, 5, 8, 8.1].map((v) => conditionHolds(fridge, v)),
      [true, false, false, false, true],
    );
    const above = { field: 'co2', range: { lower: 1000, type: 'WITHIN' as const } };
    assert.deepEqual(
      [999, 1000, 5000].map((v) => conditionHolds(above, v)),
      [false, true, true],
    );
    const water = { field: 'waterPresent', presence: 'PRESENT' as const };
    assert.equal(conditionHolds(water, 'PRESENT'), true);
    assert.equal(conditionHolds({ ...water, presence: 'ABSENT' }, 'NOT_PRESENT'), true);
    assert.equal(conditionHolds(water, 'NOT_PRESENT'), false);
    const ccon = { field: 'connectionStatus', connection: 'CLOUD_CONNECTOR_OFFLINE' as const };
    assert.equal(conditionHolds(ccon, 'OFFLINE'), true);
    assert.equal(conditionHolds(ccon, 'ETHERNET'), false);
    assert.equal(conditionHolds({ field: 'touch' }, 'TOUCHED'), true);
  });

  it('scopes by device list and labels ("" = the key alone)', () => {
    const spec = { devices: [], deviceLabels: { site: 'oslo', fridge: '' } };
    assert.equal(deviceInScope(spec, 'd1', { site: 'oslo', fridge: 'x' }), true);
    assert.equal(deviceInScope(spec, 'd1', { site: 'oslo' }), false);
    assert.equal(deviceInScope(spec, 'd1', { site: 'bergen', fridge: '' }), false);
    assert.equal(deviceInScope({ devices: ['d2'], deviceLabels: {} }, 'd1', {}), false);
  });

  it("schedules follow the zone's clock, daylight saving time included; overnight slots; inverse; no days = every day", () => {
    const oslo = (slots: ScheduleSpec['slots'], inverse = false): ScheduleSpec => ({
      timezone: 'Europe/Oslo',
      slots,
      inverse,
    });
    const office = oslo([slot(['Monday'], [9, 0], [10, 0])]);
    // Winter (UTC+1) and summer (UTC+2): 09:30 local is 08:30Z, then 07:30Z.
    assert.equal(inSchedule(office, at('2025-01-06T08:30:00Z')), true);
    assert.equal(inSchedule(office, at('2025-01-06T09:30:00Z')), false);
    assert.equal(inSchedule(office, at('2025-06-02T07:30:00Z')), true);
    assert.equal(inSchedule(office, at('2025-06-02T08:30:00Z')), false);
    // The night of the change (Sunday 30 March 2025, 02:00 → 03:00): 01:30 CET, then 03:30 CEST, are both in 01-04.
    const night = oslo([slot(['Sunday'], [1, 0], [4, 0])]);
    assert.equal(inSchedule(night, at('2025-03-30T00:30:00Z')), true);
    assert.equal(inSchedule(night, at('2025-03-30T01:30:00Z')), true);
    assert.equal(inSchedule(night, at('2025-03-30T02:30:00Z')), false, '04:30 CEST');
    // Friday 22:00 to 06:00 runs into Saturday morning.
    const overnight = oslo([slot(['Friday'], [22, 0], [6, 0])]);
    assert.equal(inSchedule(overnight, at('2025-01-11T04:00:00Z')), true, 'Saturday 05:00');
    assert.equal(inSchedule(overnight, at('2025-01-11T06:00:00Z')), false, 'Saturday 07:00');
    assert.equal(inSchedule(oslo([slot(['Friday'], [22, 0], [6, 0])], true), at('2025-01-11T06:00:00Z')), true);
    assert.equal(inSchedule(oslo([slot([], [0, 0], [12, 0])]), at('2025-01-08T08:00:00Z')), true, 'every day');
    assert.equal(inSchedule(undefined, at('2025-01-08T08:00:00Z')), true);
  });
});
