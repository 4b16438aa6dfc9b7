// :publish (contract §5.2-5.3): every device type × every event type it emits, defaults, quirks, reported,
// and every class of bad input answered 4xx with nothing stored.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEVICE_TYPES, DEVICE_TYPE_NAMES } from '../../src/domain/device-types.ts';
import { PUBLISHABLE_EVENT_TYPES } from '../../src/domain/event-data.ts';
import { createTestContext, type Auth, type TestContext } from '../helpers/context.ts';

import { MINIMAL, T } from '../helpers/event-bodies.ts';

/** Minimal publish body per event type, and the data it must normalise to (key order as in §5.2). */

describe('publish', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  const createEmulated = async (type: string, labels: Record<string, string> = {}) => {
    const res = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type, labels } });
    assert.equal(res.status, 200, res.text);
    return { name: res.body.name as string, id: (res.body.name as string).split('/')[3]! };
  };
  const publish = (name: string, body: unknown, auth?: Auth) =>
    t.request('POST', `/v2/${name}:publish`, { body, auth });
  const history = async (name: string, query = '') => {
    const res = await t.request('GET', `/v2/${name}/events${query}`);
    assert.equal(res.status, 200, res.text);
    return res.body.events as Array<Record<string, any>>;
  };
  /** Everything stored for the device, whatever its time. */
  const stored = async (id: string) =>
    t.deps.store.events.listByDevice({
      deviceId: id,
      eventTypes: [],
      startTime: 0,
      endTime: Number.MAX_SAFE_INTEGER,
      limit: 1000,
    });
  /** `reported` as GET serves it. */
  const reportedOf = async (id: string): Promise<Record<string, unknown>> => {
    const res = await t.request('GET', `/v2/projects/${t.projectId}/devices/${id}`);
    assert.equal(res.status, 200, res.text);
    return res.body.reported;
  };

  describe('happy', () => {
    it('has a minimal body for every publishable event type', () => {
      assert.deepEqual(Object.keys(MINIMAL).sort(), [...PUBLISHABLE_EVENT_TYPES].sort());
    });

    for (const type of DEVICE_TYPE_NAMES) {
      it(`publishes every event type of a ${type} device, stored in history and reported in contract order`, async () => {
        const device = await createEmulated(type);
        for (const eventType of DEVICE_TYPES[type]!.events) {
          const res = await publish(device.name, { [eventType]: MINIMAL[eventType]!.body });
          assert.equal(res.status, 200, `${type}/${eventType}: ${res.text}`);
          assert.equal(res.text, '{}\n');
        }
        const events = await history(device.name);
        assert.equal(events.length, DEVICE_TYPES[type]!.events.length);
        for (const event of events) {
          assert.deepEqual(Object.keys(event), ['eventId', 'targetName', 'eventType', 'data', 'timestamp']);
          assert.match(event.eventId, /^[0-9a-v]{20}$/);
          assert.equal(event.targetName, device.name);
          assert.equal(event.timestamp, T);
          assert.equal(
            JSON.stringify(event.data),
            JSON.stringify({ [event.eventType]: MINIMAL[event.eventType]!.data }),
            `${type}/${event.eventType}`,
          );
        }
        const reported = await reportedOf(device.id);
        const expectedKeys = [...DEVICE_TYPES[type]!.reported];
        if (type === 'temperature') expectedKeys.push('probeWireStatus');
        assert.deepEqual(Object.keys(reported), expectedKeys);
        for (const eventType of DEVICE_TYPES[type]!.events) {
          assert.equal(
            JSON.stringify(reported[eventType]),
            JSON.stringify(MINIMAL[eventType]!.data),
            `reported ${type}/${eventType}`,
          );
        }
      });
    }

    it('keeps given values, drops unknown fields and normalises every timestamp to 6 digits UTC', async () => {
      const device = await createEmulated('temperature');
      const res = await publish(device.name, {
        temperature: {
          value: -4.25,
          updateTime: '2025-06-01T13:30:00.123456789+02:00',
          isBackfilled: true,
          extra: 'dropped',
          samples: [
            { value: -4.5, sampleTime: '2025-06-01T11:29:00Z', junk: 1 },
            { sampleTime: '2025-06-01T11:29:30.5Z' },
          ],
        },
      });
      assert.equal(res.status, 200, res.text);
      const [event] = await history(device.name);
      assert.equal(event!.timestamp, '2025-06-01T11:30:00.123456Z');
      assert.equal(
        JSON.stringify(event!.data),
        JSON.stringify({
          temperature: {
            value: -4.25,
            updateTime: '2025-06-01T11:30:00.123456Z',
            samples: [
              { value: -4.5, sampleTime: '2025-06-01T11:29:00.000000Z' },
              { value: -4.25, sampleTime: '2025-06-01T11:29:30.500000Z' },
            ],
            isBackfilled: true,
          },
        }),
      );
    });

    it('fills networkStatus defaults from the given values and tolerates the SDK form (cloud_connectors, no rssi)', async () => {
      const device = await createEmulated('proximity');
      const res = await publish(device.name, {
        networkStatus: {
          signalStrength: 45,
          rssi: -83,
          transmissionMode: 'HIGH_POWER_BOOST_MODE',
          updateTime: '2025-06-01T12:00:00+00:00',
          cloud_connectors: [{ id: 'ccon-1', signalStrength: 40 }, { id: 'ccon-2' }],
        },
      });
      assert.equal(res.status, 200, res.text);
      const [event] = await history(device.name);
      assert.equal(
        JSON.stringify(event!.data),
        JSON.stringify({
          networkStatus: {
            signalStrength: 45,
            rssi: -83,
            updateTime: T,
            cloudConnectors: [
              { id: 'ccon-1', signalStrength: 40, rssi: -83 },
              { id: 'ccon-2', signalStrength: 45, rssi: -83 },
            ],
            transmissionMode: 'HIGH_POWER_BOOST_MODE',
          },
        }),
      );
      const defaulted = await publish(device.name, { networkStatus: { signalStrength: 10 } });
      assert.equal(defaulted.status, 200);
      const [latest] = await history(device.name);
      assert.deepEqual(latest!.data.networkStatus.cloudConnectors, [
        { id: 'emulated-ccon', signalStrength: 10, rssi: 0 },
      ]);
    });

    it('reads `celsius` in humidity samples as temperature', async () => {
      const device = await createEmulated('humidity');
      const res = await publish(device.name, {
        humidity: {
          temperature: 21,
          relativeHumidity: 40,
          samples: [{ celsius: 20.5, relativeHumidity: 41, sampleTime: '2025-06-01T11:59:00Z' }],
        },
      });
      assert.equal(res.status, 200, res.text);
      const [event] = await history(device.name);
      assert.equal(
        JSON.stringify(event!.data.humidity.samples),
        JSON.stringify([{ temperature: 20.5, relativeHumidity: 41, sampleTime: '2025-06-01T11:59:00.000000Z' }]),
      );
    });

    it('accepts timestamps with 0 to 9 fractional digits and offsets', async () => {
      const device = await createEmulated('touch');
      const cases: Array<[string, string]> = [
        ['2025-06-01T12:00:01Z', '2025-06-01T12:00:01.000000Z'],
        ['2025-06-01T12:00:02.1Z', '2025-06-01T12:00:02.100000Z'],
        ['2025-06-01T12:00:03.123456789Z', '2025-06-01T12:00:03.123456Z'],
        ['2025-06-01T12:00:04.25+00:00', '2025-06-01T12:00:04.250000Z'],
        ['2025-06-01T07:00:05-05:00', '2025-06-01T12:00:05.000000Z'],
      ];
      for (const [input] of cases)
        assert.equal((await publish(device.name, { touch: { updateTime: input } })).status, 200, input);
      const events = await history(device.name, `?endTime=2025-06-01T12:00:10Z`);
      assert.deepEqual(
        events.map((e) => e.timestamp),
        cases.map(([, out]) => out).reverse(),
      );
      assert.deepEqual(
        events.map((e) => e.data.touch.updateTime),
        cases.map(([, out]) => out).reverse(),
      );
    });

    it('passes ccon errors lists through and keeps given lists', async () => {
      const device = await createEmulated('ccon');
      assert.equal(
        (
          await publish(device.name, {
            ethernetStatus: { macAddress: 'm', ipAddress: 'i', errors: [{ code: 7, message: 'link flap' }] },
          })
        ).status,
        200,
      );
      assert.equal(
        (
          await publish(device.name, {
            connectionStatus: { connection: 'CELLULAR', available: ['CELLULAR', 'ETHERNET'] },
          })
        ).status,
        200,
      );
      const reported = await reportedOf(device.id);
      assert.deepEqual((reported.ethernetStatus as any).errors, [{ code: 7, message: 'link flap' }]);
      assert.deepEqual((reported.connectionStatus as any).available, ['CELLULAR', 'ETHERNET']);
    });

    it('does not move reported back for an older event, but keeps it in history', async () => {
      const device = await createEmulated('temperature');
      assert.equal(
        (await publish(device.name, { temperature: { value: 20, updateTime: '2025-06-01T11:00:00Z' } })).status,
        200,
      );
      assert.equal(
        (await publish(device.name, { temperature: { value: 10, updateTime: '2025-06-01T10:00:00Z' } })).status,
        200,
      );
      assert.equal(
        (await reportedOf(device.id)).temperature && ((await reportedOf(device.id)).temperature as any).value,
        20,
      );
      // Same time is "not older": it replaces.
      assert.equal(
        (await publish(device.name, { temperature: { value: 30, updateTime: '2025-06-01T11:00:00Z' } })).status,
        200,
      );
      assert.equal(((await reportedOf(device.id)).temperature as any).value, 30);
      assert.equal((await stored(device.id)).length, 3);
    });

    it('loses no update of reported when publishes to one device run at once', async () => {
      // Every publish reads the device and writes its reported state back: on a backend whose transactions run
      // side by side, one that read before another committed must not overwrite what that one wrote.
      const device = await createEmulated('temperature');
      const types = ['temperature', 'networkStatus', 'batteryStatus', 'touch'];
      const minute = (i: number) => `2025-06-01T11:${String(i).padStart(2, '0')}:00Z`;
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => {
          const type = types[i % types.length]!;
          return publish(device.name, { [type]: { ...(MINIMAL[type]!.body as object), updateTime: minute(i) } });
        }),
      );
      for (const res of results) assert.equal(res.status, 200, res.text);
      const reported = await reportedOf(device.id);
      for (const [k, type] of types.entries()) {
        // The last of each type is the one published at minute 36 + k.
        assert.equal((reported[type] as { updateTime: string }).updateTime, `2025-06-01T11:${36 + k}:00.000000Z`, type);
      }
      assert.equal((await stored(device.id)).length, 40);
    });

    it('uses the server clock as the default updateTime', async () => {
      const device = await createEmulated('touch');
      t.clock.advance(1500.25);
      assert.equal((await publish(device.name, { touch: {} })).status, 200);
      const [event] = await stored(device.id);
      assert.equal(JSON.parse(event!.body).timestamp, '2025-06-01T12:00:01.500250Z');
    });

    it('accepts an encoded colon and a developer caller', async () => {
      const dev = await t.createServiceAccount({ roles: ['roles/project.developer'] });
      const device = await createEmulated('touch');
      const res = await t.request('POST', `/v2/${device.name}%3Apublish`, { body: { touch: {} }, auth: dev.auth });
      assert.equal(res.status, 200, res.text);
      assert.equal((await stored(device.id)).length, 1);
    });
  });

  describe('errors', () => {
    /** Publishes and asserts a 400 that names `mention`, with nothing stored and reported untouched. */
    const refused = async (name: string, id: string, body: unknown, mention: RegExp, status = 400) => {
      const before = await reportedOf(id);
      const res = await publish(name, body);
      assert.equal(res.status, status, `${JSON.stringify(body)} → ${res.text}`);
      assert.deepEqual(Object.keys(res.body), ['error', 'code', 'help']);
      assert.match(res.body.error, mention, JSON.stringify(body));
      assert.equal((await stored(id)).length, 0, JSON.stringify(body));
      assert.deepEqual(await reportedOf(id), before);
    };

    it('refuses every event type a device type does not emit', async () => {
      for (const type of DEVICE_TYPE_NAMES) {
        const device = await createEmulated(type);
        for (const eventType of PUBLISHABLE_EVENT_TYPES.filter((e) => !DEVICE_TYPES[type]!.events.includes(e))) {
          await refused(
            device.name,
            device.id,
            { [eventType]: MINIMAL[eventType]!.body },
            new RegExp(`${type}.*${eventType}`),
          );
        }
      }
    });

    it('refuses unknown, unpublishable and ambiguous top-level keys', async () => {
      const device = await createEmulated('temperature');
      await refused(device.name, device.id, { temprature: { value: 1 } }, /unknown event type "temprature"/);
      await refused(device.name, device.id, { labelsChanged: { added: {} } }, /labelsChanged/);
      await refused(device.name, device.id, { ping: {} }, /unknown event type "ping"/);
      await refused(
        device.name,
        device.id,
        { temperature: { value: 1 }, touch: {} },
        /exactly one top-level key.*temperature, touch/,
      );
      await refused(device.name, device.id, { temperature: { value: 1 }, eventType: 'temperature' }, /exactly one/);
      await refused(device.name, device.id, {}, /exactly one top-level key.*none/);
      await refused(device.name, device.id, { event: { temperature: { value: 1 } } }, /unknown event type "event"/);
      const noBody = await t.request('POST', `/v2/${device.name}:publish`);
      assert.equal(noBody.status, 400);
      const notJson = await t.request('POST', `/v2/${device.name}:publish`, {
        rawBody: '{"touch":',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(notJson.status, 400);
      const array = await t.request('POST', `/v2/${device.name}:publish`, { rawBody: '[{"touch":{}}]' });
      assert.equal(array.status, 400);
      assert.equal((await stored(device.id)).length, 0);
    });

    it('refuses missing required fields, wrong JSON types and unknown enum values, naming the field', async () => {
      const cases: Array<[string, unknown, RegExp]> = [
        ['temperature', { temperature: {} }, /temperature\.value is required/],
        ['temperature', { temperature: { value: '21.5' } }, /temperature\.value must be a number/],
        ['temperature', { temperature: 21.5 }, /temperature must be an object/],
        ['temperature', { temperature: { value: 1, samples: {} } }, /temperature\.samples must be an array/],
        [
          'temperature',
          { temperature: { value: 1, samples: [{ value: 'x' }] } },
          /temperature\.samples\[0\]\.value must be a number/,
        ],
        ['temperature', { temperature: { value: 1, samples: ['x'] } }, /temperature\.samples\[0\] must be an object/],
        ['temperature', { temperature: { value: 1, isBackfilled: 'no' } }, /temperature\.isBackfilled/],
        ['temperature', { probeWireStatus: { state: 'ONE_WIRE' } }, /probeWireStatus\.state must be one of/],
        ['temperature', { touch: [] }, /touch must be an object/],
        ['humidity', { humidity: { temperature: 20 } }, /humidity\.relativeHumidity is required/],
        ['humidity', { humidity: { relativeHumidity: 20 } }, /humidity\.temperature is required/],
        ['proximity', { objectPresent: {} }, /objectPresent\.state is required/],
        [
          'proximity',
          { objectPresent: { state: 'present' } },
          /objectPresent\.state must be one of PRESENT, NOT_PRESENT/,
        ],
        ['proximity', { networkStatus: { transmissionMode: 'TURBO' } }, /networkStatus\.transmissionMode/],
        ['proximity', { networkStatus: { rssi: 'strong' } }, /networkStatus\.rssi must be a number/],
        [
          'proximity',
          { networkStatus: { cloudConnectors: [{ id: 5 }] } },
          /networkStatus\.cloudConnectors\[0\]\.id must be a string/,
        ],
        ['proximity', { batteryStatus: {} }, /batteryStatus\.percentage is required/],
        ['proximity', { batteryStatus: { percentage: 50.5 } }, /batteryStatus\.percentage must be an integer/],
        ['proximityCounter', { objectPresentCount: { total: '3' } }, /objectPresentCount\.total must be a number/],
        ['touchCounter', { touchCount: {} }, /touchCount\.total is required/],
        ['waterDetector', { waterPresent: { state: true } }, /waterPresent\.state must be a string/],
        ['co2', { co2: {} }, /co2\.ppm is required/],
        ['co2', { pressure: { pascal: null } }, /pressure\.pascal is required/],
        ['motion', { motion: { state: 'MOVING' } }, /motion\.state must be one of/],
        [
          'deskOccupancy',
          { deskOccupancy: { state: 'OCCUPIED', remarks: [1] } },
          /deskOccupancy\.remarks\[0\] must be a string/,
        ],
        ['contact', { contact: { state: 'AJAR' } }, /contact\.state must be one of OPEN, CLOSED/],
        ['ccon', { connectionStatus: { connection: 'WIFI' } }, /connectionStatus\.connection must be one of/],
        ['ccon', { connectionStatus: { connection: 'SDS', available: ['WIFI'] } }, /connectionStatus\.available\[0\]/],
        ['ccon', { ethernetStatus: { macAddress: 'm' } }, /ethernetStatus\.ipAddress is required/],
        [
          'ccon',
          { ethernetStatus: { macAddress: 'm', ipAddress: 'i', errors: 'none' } },
          /ethernetStatus\.errors must be an array/,
        ],
        ['ccon', { cellularStatus: {} }, /cellularStatus\.signalStrength is required/],
      ];
      for (const [type, body, mention] of cases) {
        const device = await createEmulated(type);
        await refused(device.name, device.id, body, mention);
      }
    });

    it('refuses out-of-range values', async () => {
      const cases: Array<[string, unknown, RegExp]> = [
        [
          'proximity',
          { networkStatus: { signalStrength: 101 } },
          /networkStatus\.signalStrength must be between 0 and 100, got 101/,
        ],
        ['proximity', { networkStatus: { signalStrength: -1 } }, /networkStatus\.signalStrength/],
        [
          'proximity',
          { networkStatus: { cloudConnectors: [{ id: 'c', signalStrength: 150 }] } },
          /cloudConnectors\[0\]\.signalStrength/,
        ],
        ['proximity', { batteryStatus: { percentage: 101 } }, /batteryStatus\.percentage must be between 0 and 100/],
        ['proximityCounter', { objectPresentCount: { total: -1 } }, /objectPresentCount\.total must be at least 0/],
        ['touchCounter', { touchCount: { total: 1.5 } }, /touchCount\.total must be an integer/],
        ['co2', { co2: { ppm: -5 } }, /co2\.ppm must be at least 0/],
        ['co2', { pressure: { pascal: -1 } }, /pressure\.pascal must be at least 0/],
        [
          'humidity',
          { humidity: { temperature: 20, relativeHumidity: 100.5 } },
          /humidity\.relativeHumidity must be between 0 and 100/,
        ],
        [
          'humidity',
          { humidity: { temperature: 20, relativeHumidity: 50, samples: [{ relativeHumidity: -2 }] } },
          /humidity\.samples\[0\]\.relativeHumidity/,
        ],
        ['temperature', { temperature: { value: -300 } }, /temperature\.value must be at least -273\.15/],
        [
          'ccon',
          { cellularStatus: { signalStrength: 200 } },
          /cellularStatus\.signalStrength must be between 0 and 100/,
        ],
      ];
      for (const [type, body, mention] of cases) {
        const device = await createEmulated(type);
        await refused(device.name, device.id, body, mention);
      }
    });

    it('refuses unparseable timestamps', async () => {
      const device = await createEmulated('temperature');
      for (const bad of [
        'yesterday',
        '2025-06-01',
        '2025-06-01T12:00:00',
        '2025-13-01T00:00:00Z',
        '2025-02-30T00:00:00Z',
        '2025-06-01T12:00:00.1234567890Z',
        1748779200,
      ]) {
        await refused(
          device.name,
          device.id,
          { touch: { updateTime: bad } },
          /touch\.updateTime must be an RFC 3339 timestamp/,
        );
      }
      await refused(
        device.name,
        device.id,
        { temperature: { value: 1, samples: [{ value: 1, sampleTime: 'now' }] } },
        /temperature\.samples\[0\]\.sampleTime/,
      );
    });

    it('answers 404 for a deleted, unknown or foreign device, and 400 for a non-emulated one', async () => {
      const device = await createEmulated('touch');
      assert.equal((await t.request('DELETE', `/v2/${device.name}`)).status, 200);
      const gone = await publish(device.name, { touch: {} });
      assert.equal(gone.status, 404);
      assert.equal((await stored(device.id)).length, 0);

      assert.equal((await publish(`projects/${t.projectId}/devices/emu${'0'.repeat(20)}`, { touch: {} })).status, 404);
      assert.equal((await publish(`projects/${t.projectId}/devices/not-an-id`, { touch: {} })).status, 404);

      const other = await t.createProject('other');
      const foreign = await t.createDevice({ projectId: other, type: 'touch' });
      assert.equal((await publish(`projects/${t.projectId}/devices/${foreign.id}`, { touch: {} })).status, 404);
      assert.equal((await stored(foreign.id)).length, 0);

      const real = await t.createDevice({ emulated: false, id: t.deps.ids.next(), type: 'touch' });
      const res = await publish(`projects/${t.projectId}/devices/${real.id}`, { touch: {} });
      assert.equal(res.status, 400);
      assert.match(res.body.error, /not an emulated device/);
      assert.equal((await stored(real.id)).length, 0);
    });

    it('answers 404 for an unknown project and 400 for the wildcard', async () => {
      assert.equal(
        (await publish(`projects/${'0'.repeat(20)}/devices/emu${'0'.repeat(20)}`, { touch: {} })).status,
        404,
      );
      const device = await createEmulated('touch');
      assert.equal((await publish(`projects/-/devices/${device.id}`, { touch: {} })).status, 400);
      assert.equal((await stored(device.id)).length, 0);
    });
  });

  describe('security', () => {
    it('a project user cannot publish (403); an outsider sees 404; no credentials is 401', async () => {
      const device = await createEmulated('touch');
      const user = await t.createServiceAccount({ roles: ['roles/project.user'] });
      const forbidden = await publish(device.name, { touch: {} }, user.auth);
      assert.equal(forbidden.status, 403);
      const otherProject = await t.createProject('elsewhere');
      const outsider = await t.createServiceAccount({ projectId: otherProject, roles: ['roles/project.admin'] });
      assert.equal((await publish(device.name, { touch: {} }, outsider.auth)).status, 404);
      assert.equal((await publish(device.name, { touch: {} }, null)).status, 401);
      assert.equal((await stored(device.id)).length, 0);
    });
  });
});
