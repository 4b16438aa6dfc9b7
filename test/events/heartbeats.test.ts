// Emulated heartbeats and demo mode, driven by the fake clock through tickOnce().
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { DEVICE_TYPES } from '../../src/domain/device-types.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { createDemo, DEMO_DEVICES, findBootstrapProject } from '../../src/emulator/demo.ts';
import { createHeartbeats } from '../../src/emulator/heartbeats.ts';
import type { EmittedEvent } from '../../src/events/types.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

const WEEK_MICROS = 7 * 86400 * 1_000_000;

describe('emulated heartbeats', () => {
  let t: TestContext;
  let sensor: DeviceRecord;
  let ccon: DeviceRecord;
  let real: DeviceRecord;
  const seen: EmittedEvent[] = [];
  const history = async (d: DeviceRecord) =>
    (
      await t.deps.store.events.listByDevice({
        deviceId: d.id,
        eventTypes: [],
        startTime: 0,
        endTime: nowMicros(t.deps) + WEEK_MICROS,
        limit: 100,
      })
    ).map((r) => JSON.parse(r.body));

  before(async () => {
    t = await createTestContext();
    t.deps.events.subscribe((e) => seen.push(e));
    sensor = await t.createDevice({ type: 'temperature' });
    ccon = await t.createDevice({ type: 'ccon', productNumber: '100011' });
    real = await t.createDevice({ id: 'cvq2b1b0l4l9s3f2a9h0', emulated: false, type: 'touch', labels: {} });
  });
  after(() => t.close());

  describe('happy', () => {
    it('a sensor emits networkStatus and batteryStatus, ccon connectionStatus, real devices nothing', async () => {
      const hb = createHeartbeats(t.deps, { intervalSeconds: 60 });
      seen.length = 0;
      assert.equal(await hb.tickOnce(), 3);
      const now = formatTimestamp(nowMicros(t.deps));
      assert.deepEqual(
        seen.map((e) => [e.device.id, e.event.eventType]),
        [
          [sensor.id, 'networkStatus'],
          [sensor.id, 'batteryStatus'],
          [ccon.id, 'connectionStatus'],
        ].sort((x, y) => (x[0]! < y[0]! ? -1 : x[0]! > y[0]! ? 1 : 0)),
      );

      const s = (await t.deps.store.devices.get(sensor.id))!;
      assert.deepEqual(s.reported.networkStatus, {
        signalStrength: 99,
        rssi: 0,
        updateTime: now,
        cloudConnectors: [{ id: 'emulated-ccon', signalStrength: 99, rssi: 0 }],
        transmissionMode: 'LOW_POWER_STANDARD_MODE',
      });
      assert.deepEqual(Object.keys(s.reported.networkStatus as object), [
        'signalStrength',
        'rssi',
        'updateTime',
        'cloudConnectors',
        'transmissionMode',
      ]);
      assert.deepEqual(s.reported.batteryStatus, { percentage: 100, updateTime: now });
      const c = (await t.deps.store.devices.get(ccon.id))!;
      assert.deepEqual(c.reported.connectionStatus, {
        connection: 'ETHERNET',
        available: ['ETHERNET', 'CELLULAR'],
        updateTime: now,
      });
      assert.equal(c.reported.networkStatus, undefined);
      assert.equal(c.reported.batteryStatus, undefined);
      assert.deepEqual(await history(real), []);

      const events = await history(sensor);
      assert.deepEqual(events.map((e) => e.eventType).sort(), ['batteryStatus', 'networkStatus']);
      for (const e of events) {
        assert.equal(e.timestamp, now);
        assert.equal(e.targetName, `projects/${t.projectId}/devices/${sensor.id}`);
      }
    });

    it('the next heartbeat comes one interval after the last one', async () => {
      const hb = createHeartbeats(t.deps, { intervalSeconds: 60 });
      assert.equal(await hb.tickOnce(), 0);
      t.clock.advance(59_999);
      assert.equal(await hb.tickOnce(), 0);
      t.clock.advance(1);
      assert.equal(await hb.tickOnce(), 3);
      const s = (await t.deps.store.devices.get(sensor.id))!;
      assert.equal((s.reported.batteryStatus as { updateTime: string }).updateTime, formatTimestamp(nowMicros(t.deps)));
      assert.equal(await hb.tickOnce(), 0);
    });

    it('a heartbeat repeats the values last reported, with a new updateTime', async () => {
      const hb = createHeartbeats(t.deps, { intervalSeconds: 60 });
      await t.deps.events.transaction(async (tx, emit) => {
        const device = (await tx.devices.get(sensor.id))!;
        const now = nowMicros(t.deps);
        const at = formatTimestamp(now);
        const d2 = (await emit(device, 'batteryStatus', { batteryStatus: { percentage: 12, updateTime: at } }, now))
          .device;
        await emit(
          d2,
          'networkStatus',
          {
            networkStatus: {
              signalStrength: 40,
              rssi: -80,
              updateTime: at,
              cloudConnectors: [{ id: 'c1', signalStrength: 40, rssi: -80 }],
              transmissionMode: 'HIGH_POWER_BOOST_MODE',
            },
          },
          now,
        );
      });
      t.clock.advance(60_000);
      await hb.tickOnce();
      const s = (await t.deps.store.devices.get(sensor.id))!;
      const now = formatTimestamp(nowMicros(t.deps));
      assert.deepEqual(s.reported.batteryStatus, { percentage: 12, updateTime: now });
      assert.deepEqual(s.reported.networkStatus, {
        signalStrength: 40,
        rssi: -80,
        updateTime: now,
        cloudConnectors: [{ id: 'c1', signalStrength: 40, rssi: -80 }],
        transmissionMode: 'HIGH_POWER_BOOST_MODE',
      });
      // Other reported types are untouched.
      assert.equal(s.reported.temperature, undefined);
    });

    it('pages through many emulated devices', async () => {
      const extra = [];
      for (let i = 0; i < 5; i++) extra.push(await t.createDevice({ type: 'touch' }));
      const hb = createHeartbeats(t.deps, { intervalSeconds: 60, pageSize: 2 });
      t.clock.advance(60_000);
      assert.equal(await hb.tickOnce(), 2 + 1 + 5 * 2);
      for (const d of extra) assert.notEqual((await t.deps.store.devices.get(d.id))!.reported.networkStatus, undefined);
    });
  });

  describe('errors', () => {
    it('interval 0 disables heartbeats (the test configuration default)', async () => {
      assert.equal(t.deps.config.heartbeatIntervalSeconds, 0);
      const hb = createHeartbeats(t.deps);
      t.clock.advance(86_400_000);
      assert.equal(await hb.tickOnce(), 0);
      hb.start(); // no timer is created
      await hb.stop();
    });

    it('start and stop with a timer do not leave work running', async () => {
      const hb = createHeartbeats(t.deps, { intervalSeconds: 3600 });
      t.clock.advance(3_600_000);
      hb.start();
      await hb.stop();
      assert.equal(await hb.tickOnce(), 0, 'the first check ran at start');
    });
  });
});

describe('demo mode', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  describe('happy', () => {
    it('finds the bootstrap project and creates the demo sensors once, labelled demo', async () => {
      const projectId = await findBootstrapProject(t.deps);
      assert.equal(projectId, t.projectId);
      const demo = await createDemo(t.deps, { projectId: projectId! });
      const devices = await demo.ensureDevices();
      assert.equal(devices.length, DEMO_DEVICES.length);
      assert.ok(devices.length >= 6);
      assert.equal(new Set(devices.map((d) => d.type)).size, devices.length);
      for (const d of devices) {
        assert.match(d.id, /^emu[0-9a-v]{20}$/);
        assert.equal(d.projectId, t.projectId);
        assert.equal(d.labels.demo, '');
        assert.equal(d.labels['virtual-sensor'], '');
        assert.match(d.labels.name!, /^Demo: /);
        assert.equal(d.productNumber, DEVICE_TYPES[d.type]!.productNumber);
      }
      const again = await (await createDemo(t.deps, { projectId: projectId! })).ensureDevices();
      assert.deepEqual(
        again.map((d) => d.id),
        devices.map((d) => d.id),
      );
    });

    it('produces well-formed events of each device type through the pipeline', async () => {
      const demo = await createDemo(t.deps, { projectId: t.projectId });
      const devices = await demo.ensureDevices();
      const seen: EmittedEvent[] = [];
      const unsubscribe = t.deps.events.subscribe((e) => seen.push(e));
      try {
        assert.ok((await demo.tickOnce()) >= devices.length, 'every device starts with its own event');
        for (let i = 0; i < 30; i++) {
          t.clock.advance(3000);
          assert.ok((await demo.tickOnce()) >= 1);
        }
      } finally {
        unsubscribe();
      }
      for (const d of devices) {
        const fresh = (await t.deps.store.devices.get(d.id))!;
        const primary = DEVICE_TYPES[d.type]!.reported[0]!;
        assert.notEqual(fresh.reported[primary], undefined, `${d.type} reported ${primary}`);
      }
      for (const e of seen) {
        const { eventType, data, timestamp } = e.event;
        assert.ok(DEVICE_TYPES[e.device.type]!.events.includes(eventType), `${e.device.type} emits ${eventType}`);
        const inner = (data as Record<string, Record<string, unknown>>)[eventType]!;
        assert.equal(inner.updateTime, timestamp);
        if (eventType === 'temperature') {
          assert.deepEqual(Object.keys(inner), ['value', 'updateTime', 'samples', 'isBackfilled']);
          assert.ok((inner.value as number) >= 15 && (inner.value as number) <= 30);
        }
        if (eventType === 'humidity')
          assert.deepEqual(Object.keys(inner), [
            'temperature',
            'relativeHumidity',
            'samples',
            'isBackfilled',
            'updateTime',
          ]);
        if (eventType === 'objectPresent') assert.ok(['PRESENT', 'NOT_PRESENT'].includes(inner.state as string));
        if (eventType === 'deskOccupancy') assert.deepEqual(Object.keys(inner), ['state', 'remarks', 'updateTime']);
        if (eventType === 'co2') assert.ok(Number.isInteger(inner.ppm));
      }
    });

    it('a deleted demo device is dropped from the rounds', async () => {
      const demo = await createDemo(t.deps, { projectId: t.projectId });
      const devices = await demo.ensureDevices();
      await t.deps.store.devices.delete(devices[0]!.id);
      for (let i = 0; i < 5; i++) await demo.tickOnce();
      assert.equal(await t.deps.store.devices.get(devices[0]!.id), null);
    });
  });
});
