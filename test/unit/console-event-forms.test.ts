// The emulator's publish forms (console/src/event-forms.ts) agree with the server: every publishable event type
// has a form, each device type offers exactly the types it emits, the defaults make a body the server accepts,
// and a value the form refuses for its range is one the server refuses too.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultValues, EVENT_FORMS, EVENTS_BY_DEVICE_TYPE, publishBody } from '../../console/src/event-forms.ts';
import { DEVICE_TYPES } from '../../src/domain/device-types.ts';
import { normalizePublishBody, PUBLISHABLE_EVENT_TYPES } from '../../src/domain/event-data.ts';

const NOW = 1_750_000_000_000_000;
/** A device type that emits the event type. */
const emitterOf = (eventType: string) =>
  Object.keys(DEVICE_TYPES).find((t) => DEVICE_TYPES[t]!.events.includes(eventType))!;

describe('happy', () => {
  it('has a form for each of the 18 publishable event types, and each device type offers what it emits', () => {
    assert.deepEqual(Object.keys(EVENT_FORMS).sort(), [...PUBLISHABLE_EVENT_TYPES].sort());
    assert.equal(PUBLISHABLE_EVENT_TYPES.length, 18);
    for (const [type, info] of Object.entries(DEVICE_TYPES))
      assert.deepEqual([...EVENTS_BY_DEVICE_TYPE[type]!].sort(), [...info.events].sort(), type);
  });

  it('the defaults of every form make a body the server accepts, with the values as typed', () => {
    for (const eventType of PUBLISHABLE_EVENT_TYPES) {
      const built = publishBody(eventType, defaultValues(eventType));
      assert.ok('body' in built, `${eventType}: ${'problem' in built ? built.problem : ''}`);
      const event = normalizePublishBody(emitterOf(eventType), built.body, NOW);
      assert.equal(event.eventType, eventType);
      for (const f of EVENT_FORMS[eventType]!) {
        if (f.kind === 'number')
          assert.equal((event.data[eventType] as Record<string, unknown>)[f.key], f.default, `${eventType}.${f.key}`);
      }
    }
  });

  it('an event time typed in the form becomes the event timestamp', () => {
    const built = publishBody('touch', { updateTime: '2026-01-02T03:04:05Z' });
    assert.ok('body' in built);
    assert.deepEqual(built.body, { touch: { updateTime: '2026-01-02T03:04:05.000Z' } });
  });
});

describe('sad', () => {
  it("a number outside a form's range is refused by the form and by the server alike", () => {
    let checked = 0;
    for (const eventType of PUBLISHABLE_EVENT_TYPES) {
      for (const f of EVENT_FORMS[eventType]!) {
        if (f.kind !== 'number') continue;
        for (const bad of [
          f.min === undefined ? null : f.min - 1,
          f.max === undefined ? null : f.max + 1,
          f.int ? f.default + 0.5 : null,
        ]) {
          if (bad === null) continue;
          const values = { ...defaultValues(eventType), [f.key]: String(bad) };
          assert.ok('problem' in publishBody(eventType, values), `${eventType}.${f.key}=${bad} passes the form`);
          const body = {
            [eventType]: {
              ...(publishBody(eventType, defaultValues(eventType)) as { body: Record<string, Record<string, unknown>> })
                .body[eventType],
              [f.key]: bad,
            },
          };
          assert.throws(
            () => normalizePublishBody(emitterOf(eventType), body, NOW),
            `${eventType}.${f.key}=${bad} passes the server`,
          );
          checked++;
        }
      }
    }
    assert.ok(checked >= 15, `${checked} cases`);
  });

  it('a missing required text field is refused before sending', () => {
    const built = publishBody('ethernetStatus', { ...defaultValues('ethernetStatus'), ipAddress: ' ' });
    assert.deepEqual(built, { problem: 'IP address is required.' });
  });
});
