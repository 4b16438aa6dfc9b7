// Emulated devices (contract §4.10, §5.4, §5.5): create, replace labels (labelsChanged), delete.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEVICE_TYPES, DEVICE_TYPE_NAMES } from '../../src/domain/device-types.ts';
import { createEmulatedDevice, HISTORY_PIECE } from '../../src/emulator/devices.ts';
import { publishEvent } from '../../src/services/publish.ts';
import { createTestContext, type Auth, type TestContext } from '../helpers/context.ts';
import { createTestStoreWrapping } from '../helpers/store.ts';

describe('emulator', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  const devicesUrl = () => `/v2/projects/${t.projectId}/devices`;
  const create = (body: unknown, auth?: Auth) => t.request('POST', devicesUrl(), { body, auth });
  const stored = async (id: string) =>
    t.deps.store.events.listByDevice({
      deviceId: id,
      eventTypes: [],
      startTime: 0,
      endTime: Number.MAX_SAFE_INTEGER,
      limit: 1000,
    });

  describe('happy', () => {
    it('creates an emulated device of every type with default product number and null reported', async () => {
      for (const type of DEVICE_TYPE_NAMES) {
        const res = await create({ type, labels: { name: `My ${type}` } });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.body), ['name', 'type', 'productNumber', 'labels', 'reported']);
        assert.match(res.body.name, new RegExp(`^projects/${t.projectId}/devices/emu[0-9a-v]{20}$`));
        assert.equal(res.body.type, type);
        assert.equal(res.body.productNumber, DEVICE_TYPES[type]!.productNumber);
        assert.equal(JSON.stringify(res.body.labels), JSON.stringify({ name: `My ${type}`, 'virtual-sensor': '' }));
        assert.deepEqual(Object.keys(res.body.reported), [...DEVICE_TYPES[type]!.reported]);
        assert.ok(Object.values(res.body.reported).every((v) => v === null));
        const id = res.body.name.split('/')[3];
        const record = await t.deps.store.devices.get(id);
        assert.equal(record?.emulated, true);
        assert.equal((await stored(id)).length, 0, 'creation emits no labelsChanged');
      }
    });

    it('takes productNumber from the body, ignores name and read-only fields, keeps virtual-sensor empty', async () => {
      const res = await create({
        type: 'humidity',
        productNumber: '102081',
        name: 'projects/x/devices/y',
        reported: { humidity: 1 },
        labels: { 'virtual-sensor': 'yes', name: 'Lab', room: '4' },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.productNumber, '102081');
      assert.notEqual(res.body.name, 'projects/x/devices/y');
      assert.equal(JSON.stringify(res.body.labels), JSON.stringify({ 'virtual-sensor': '', name: 'Lab', room: '4' }));
      assert.equal(res.body.reported.humidity, null);
    });

    it('creates without labels', async () => {
      const res = await create({ type: 'touch' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.labels, { 'virtual-sensor': '' });
    });

    it('PUT replaces labels, keeps virtual-sensor and emits one labelsChanged with added, modified and removed', async () => {
      const created = await create({ type: 'temperature', labels: { name: 'A', room: '1', floor: '2' } });
      const name = created.body.name as string;
      t.clock.advance(2000);
      const res = await t.request('PUT', `/v2/${name}`, {
        body: { name, type: 'temperature', labels: { name: 'B', floor: '2', desk: '9' } },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(
        JSON.stringify(res.body.labels),
        JSON.stringify({ name: 'B', floor: '2', desk: '9', 'virtual-sensor': '' }),
      );
      assert.deepEqual(Object.keys(res.body.reported), ['temperature', 'touch', 'networkStatus', 'batteryStatus']);
      const events = await t.request('GET', `/v2/${name}/events`);
      assert.equal(events.body.events.length, 1);
      const [event] = events.body.events;
      assert.equal(event.eventType, 'labelsChanged');
      assert.equal(event.timestamp, '2025-06-01T12:00:02.000000Z');
      assert.equal(
        JSON.stringify(event.data),
        JSON.stringify({ added: { desk: '9' }, modified: { name: 'B' }, removed: ['room'] }),
      );
      const record = await t.deps.store.devices.get(name.split('/')[3]!);
      assert.deepEqual(record?.labels, { name: 'B', floor: '2', desk: '9', 'virtual-sensor': '' });
      assert.equal(record?.reported.labelsChanged, undefined, 'labelsChanged never enters reported');
    });

    it('PUT with the same labels (the IaC form, virtual-sensor included) emits nothing', async () => {
      const created = await create({ type: 'touch', labels: { name: 'Same' } });
      const name = created.body.name as string;
      const res = await t.request('PUT', `/v2/${name}`, {
        body: { type: 'touch', labels: { name: 'Same', 'virtual-sensor': '' } },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal((await stored(name.split('/')[3]!)).length, 0);
    });

    it('DELETE removes the device with its history and reported', async () => {
      const created = await create({ type: 'touch' });
      const name = created.body.name as string;
      const id = name.split('/')[3]!;
      assert.equal((await t.request('POST', `/v2/${name}:publish`, { body: { touch: {} } })).status, 200);
      assert.equal((await stored(id)).length, 1);
      const res = await t.request('DELETE', `/v2/${name}`, { headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 200);
      assert.equal(res.text, '{}\n');
      assert.equal(await t.deps.store.devices.get(id), null);
      assert.equal((await stored(id)).length, 0);
      assert.equal((await t.request('DELETE', `/v2/${name}`)).status, 404);
      assert.equal((await t.request('GET', `/v2/${name}/events`)).status, 404);
    });

    it('exports createEmulatedDevice and publishEvent for the demo and heartbeats', async () => {
      const device = await createEmulatedDevice(t.deps, t.projectId, { type: 'co2', labels: { name: 'Demo' } });
      assert.match(device.id, /^emu[0-9a-v]{20}$/);
      const emitted = await publishEvent(t.deps, device, { co2: { ppm: 612 } });
      assert.equal(emitted.event.eventType, 'co2');
      assert.deepEqual(emitted.device.reported.co2, { ppm: 612, updateTime: emitted.event.timestamp });
    });
  });

  describe('errors', () => {
    it('refuses an unknown or missing type, bad labels and a bad productNumber', async () => {
      const cases: Array<[unknown, RegExp]> = [
        [{ type: 'thermometer' }, /type must be one of/],
        [{ labels: { name: 'x' } }, /type/],
        [{ type: 5 }, /type/],
        [{ type: 'touch', labels: { 'a=b': 'x' } }, /must not contain/],
        [{ type: 'touch', labels: { 'a/b': 'x' } }, /must not contain/],
        [{ type: 'touch', labels: { '': 'x' } }, /1 to 128 characters/],
        [{ type: 'touch', labels: { ['k'.repeat(129)]: 'x' } }, /1 to 128 characters/],
        [{ type: 'touch', labels: { k: 'v'.repeat(1025) } }, /at most 1024/],
        [{ type: 'touch', labels: { k: 5 } }, /labels/],
        [{ type: 'touch', labels: ['x'] }, /labels/],
        [
          { type: 'touch', labels: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 'v'])) },
          /at most 100 labels/,
        ],
        [{ type: 'touch', productNumber: 102058 }, /productNumber/],
      ];
      for (const [body, mention] of cases) {
        const res = await create(body);
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)} → ${res.text}`);
        assert.match(res.body.error, mention);
      }
      assert.equal((await create(undefined)).status, 400);
    });

    it('PUT refuses a different type, a non-emulated device and an unknown device', async () => {
      const created = await create({ type: 'touch', labels: { name: 'T' } });
      const name = created.body.name as string;
      const changed = await t.request('PUT', `/v2/${name}`, { body: { type: 'temperature', labels: { name: 'X' } } });
      assert.equal(changed.status, 400);
      assert.match(changed.body.error, /type cannot be changed/);
      assert.deepEqual((await t.deps.store.devices.get(name.split('/')[3]!))?.labels, {
        name: 'T',
        'virtual-sensor': '',
      });

      const real = await t.createDevice({ emulated: false, id: t.deps.ids.next(), type: 'touch' });
      const notEmu = await t.request('PUT', `${devicesUrl()}/${real.id}`, {
        body: { type: 'touch', labels: { name: 'X' } },
      });
      assert.equal(notEmu.status, 400);
      assert.equal((await stored(real.id)).length, 0);
      assert.equal(
        (await t.request('PUT', `${devicesUrl()}/emu${'0'.repeat(20)}`, { body: { type: 'touch', labels: {} } }))
          .status,
        404,
      );
      assert.equal(
        (await t.request('PUT', `/v2/projects/-/devices/${real.id}`, { body: { type: 'touch', labels: {} } })).status,
        400,
      );
    });

    it('DELETE refuses a non-emulated device (400) and keeps it, with its history', async () => {
      const real = await t.createDevice({ emulated: false, id: t.deps.ids.next(), type: 'ccon' });
      await t.deps.events.transaction((_tx, emit) =>
        emit(
          real,
          'networkStatus',
          {
            networkStatus: {
              signalStrength: 50,
              rssi: -60,
              updateTime: '2025-06-01T12:00:00.000000Z',
              cloudConnectors: [],
              transmissionMode: 'LOW_POWER_STANDARD_MODE',
            },
          },
          1,
        ),
      );
      const res = await t.request('DELETE', `${devicesUrl()}/${real.id}`);
      assert.equal(res.status, 400);
      assert.match(res.body.error, /not an emulated device/);
      assert.ok(await t.deps.store.devices.get(real.id));
      assert.equal((await stored(real.id)).length, 1);
    });

    it('answers 404 for an unknown project and for a device of another project; 400 for the wildcard', async () => {
      assert.equal(
        (await t.request('POST', `/v2/projects/${'0'.repeat(20)}/devices`, { body: { type: 'touch' } })).status,
        404,
      );
      assert.equal((await t.request('POST', '/v2/projects/-/devices', { body: { type: 'touch' } })).status, 400);
      const other = await t.createProject('other');
      const foreign = await t.createDevice({ projectId: other });
      assert.equal((await t.request('DELETE', `${devicesUrl()}/${foreign.id}`)).status, 404);
      assert.ok(await t.deps.store.devices.get(foreign.id));
    });
  });

  describe('security', () => {
    it('a project user can do none of create, PUT or DELETE (403); a developer can', async () => {
      const user = await t.createServiceAccount({ roles: ['roles/project.user'] });
      const dev = await t.createServiceAccount({ roles: ['roles/project.developer'] });
      assert.equal((await create({ type: 'touch' }, user.auth)).status, 403);
      const created = await create({ type: 'touch' }, dev.auth);
      assert.equal(created.status, 200);
      const name = created.body.name as string;
      assert.equal(
        (await t.request('PUT', `/v2/${name}`, { body: { type: 'touch', labels: { a: 'b' } }, auth: user.auth }))
          .status,
        403,
      );
      assert.equal((await t.request('DELETE', `/v2/${name}`, { auth: user.auth })).status, 403);
      assert.equal(
        (await t.request('PUT', `/v2/${name}`, { body: { type: 'touch', labels: { a: 'b' } }, auth: dev.auth })).status,
        200,
      );
      assert.equal((await t.request('DELETE', `/v2/${name}`, { auth: dev.auth })).status, 200);
    });

    it('an outsider gets 404 and an anonymous caller 401', async () => {
      const elsewhere = await t.createProject('elsewhere');
      const outsider = await t.createServiceAccount({ projectId: elsewhere, roles: ['roles/project.admin'] });
      assert.equal((await create({ type: 'touch' }, outsider.auth)).status, 404);
      assert.equal((await create({ type: 'touch' }, null)).status, 401);
    });
  });
});

describe('deleting an emulated device with a long history', () => {
  it('deletes the history a piece per transaction, then the device with what was published meanwhile; one cut short is ended by a DELETE again', async () => {
    const pieces: Array<number | 'failed'> = [];
    let failSecond = true;
    const t = await createTestContext({
      store: createTestStoreWrapping((tx) => ({
        ...tx,
        events: {
          ...tx.events,
          deleteByDevice: async (id, limit) => {
            // The database fails in the middle of the first DELETE.
            if (pieces.length === 1 && failSecond) {
              failSecond = false;
              pieces.push('failed');
              throw new Error('connection lost');
            }
            const n = await tx.events.deleteByDevice(id, limit);
            pieces.push(n);
            return n;
          },
        },
      })),
    });
    try {
      const created = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'touch' } });
      const name = created.body.name as string;
      const id = name.split('/')[3]!;
      const device = (await t.deps.store.devices.get(id))!;
      const total = 2 * HISTORY_PIECE + 3;
      await t.deps.store.transaction(async (tx) => {
        for (let i = 0; i < total; i++) {
          await tx.events.insert({
            id: `ev${String(i).padStart(8, '0')}`,
            projectId: t.projectId,
            deviceId: id,
            eventType: 'touch',
            timestamp: i + 1,
            createTime: 1,
            body: '{}',
          });
        }
      });
      const history = async () =>
        (
          await t.deps.store.events.listByDevice({
            deviceId: id,
            eventTypes: [],
            startTime: 0,
            endTime: Number.MAX_SAFE_INTEGER,
            limit: total + 10,
          })
        ).length;

      const first = await t.request('DELETE', `/v2/${name}`);
      assert.equal(first.status, 500, first.text);
      assert.deepEqual(pieces, [HISTORY_PIECE, 'failed']);
      assert.ok(await t.deps.store.devices.get(id), 'the device is still there');
      assert.equal(await history(), total - HISTORY_PIECE, 'with the rest of its history');

      // An event published while the history goes goes with the device; one published after it is refused (404),
      // as the publish path reads the device in its own transaction. Which of the two happens is up to the scheduler.
      pieces.length = 0;
      const publishing = new Promise<number>((resolve) =>
        setImmediate(() => {
          publishEvent(t.deps, device, { touch: { updateTime: '2025-06-01T12:00:00.000000Z' } }).then(
            () => resolve(200),
            (err: { status?: number }) => resolve(err.status ?? 500),
          );
        }),
      );
      const again = await t.request('DELETE', `/v2/${name}`);
      assert.ok([200, 404].includes(await publishing));
      assert.equal(again.status, 200, again.text);
      // The rest, and the published event if it came before the last piece (else the device's transaction takes it).
      assert.deepEqual(pieces.slice(-1), [0]);
      assert.ok(
        pieces.every((n) => typeof n === 'number' && n <= HISTORY_PIECE),
        pieces.join(', '),
      );
      assert.ok(
        [total - HISTORY_PIECE, total - HISTORY_PIECE + 1].includes(
          pieces.reduce<number>((a, n) => a + (n as number), 0),
        ),
        pieces.join(', '),
      );
      assert.equal(await t.deps.store.devices.get(id), null);
      assert.equal(await history(), 0);
    } finally {
      await t.close();
    }
  });
});
