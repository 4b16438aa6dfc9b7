// `events publish` typed options for all 18 publishable event types: each body the CLI builds from its options is
// accepted by the service's own validator (normalizePublishBody) for a device type that emits it; wrong options
// and values are usage errors before anything is sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { publishBody } from '../../src/cli/publish-options.ts';
import { UsageError } from '../../src/cli/errors.ts';
import { DEVICE_TYPES } from '../../src/domain/device-types.ts';
import { PUBLISHABLE_EVENT_TYPES, normalizePublishBody } from '../../src/domain/event-data.ts';

/** commander's option values (camelCase) for one event of each type. */
const OPTIONS: Record<string, Record<string, unknown>> = {
  touch: {},
  temperature: { value: '21.5', backfilled: true },
  objectPresent: { state: 'PRESENT' },
  humidity: { temperature: '20', relativeHumidity: '45.5' },
  objectPresentCount: { total: '3' },
  touchCount: { total: '7' },
  waterPresent: { state: 'NOT_PRESENT' },
  networkStatus: { signalStrength: '80', rssi: '-70', transmissionMode: 'HIGH_POWER_BOOST_MODE' },
  batteryStatus: { percentage: '90' },
  connectionStatus: { connection: 'ETHERNET', available: ['ETHERNET', 'CELLULAR'] },
  ethernetStatus: { macAddress: 'f0:b3:ec:00:00:01', ipAddress: '10.0.0.2', error: ['LINK_DOWN'] },
  cellularStatus: { signalStrength: '60' },
  co2: { ppm: '612' },
  pressure: { pascal: '101325.5' },
  motion: { state: 'MOTION_DETECTED' },
  deskOccupancy: { state: 'OCCUPIED', remark: ['INCOMPLETE_DATA'] },
  contact: { state: 'OPEN' },
  probeWireStatus: { state: 'THREE_WIRE', updateTime: '2025-06-01T12:00:00Z' },
};

describe('happy', () => {
  it('covers the 18 publishable types, each accepted by the service for a device type that emits it', () => {
    assert.deepEqual(Object.keys(OPTIONS).sort(), [...PUBLISHABLE_EVENT_TYPES].sort());
    assert.equal(PUBLISHABLE_EVENT_TYPES.length, 18);
    for (const [eventType, options] of Object.entries(OPTIONS)) {
      const deviceType = Object.keys(DEVICE_TYPES).find((t) => DEVICE_TYPES[t]!.events.includes(eventType))!;
      const body = publishBody(eventType, options);
      const normalized = normalizePublishBody(deviceType, body, 1_748_779_200_000_000);
      assert.equal(normalized.eventType, eventType);
    }
    assert.deepEqual(publishBody('temperature', { value: '21.5', backfilled: true }), {
      temperature: { value: 21.5, isBackfilled: true },
    });
    assert.deepEqual(publishBody('deskOccupancy', { state: 'OCCUPIED', remark: ['INCOMPLETE_DATA'] }), {
      deskOccupancy: { state: 'OCCUPIED', remarks: ['INCOMPLETE_DATA'] },
    });
    assert.deepEqual(publishBody('touch', { data: '{"updateTime":"2025-06-01T12:00:00Z"}' }), {
      touch: { updateTime: '2025-06-01T12:00:00Z' },
    });
  });
});

describe('errors', () => {
  const usage = (eventType: string, options: Record<string, unknown>, message: RegExp) =>
    assert.throws(
      () => publishBody(eventType, options),
      (err: unknown) => err instanceof UsageError && message.test(err.message),
    );

  it('a missing required option, a stray option, a bad enum or number, an unknown type', () => {
    usage('co2', {}, /co2 events need --ppm/);
    usage('touch', { ppm: '3' }, /--ppm does not apply to touch events/);
    usage('motion', { state: 'MAYBE' }, /--state must be one of MOTION_DETECTED, NO_MOTION_DETECTED/);
    usage('batteryStatus', { percentage: 'full' }, /--percentage must be a number/);
    usage('co2', { ppm: '1.5' }, /--ppm must be an integer/);
    usage('sneeze', {}, /unknown event type "sneeze"/);
    usage('touch', { data: '[1]' }, /--data must be a JSON object/);
  });
});
