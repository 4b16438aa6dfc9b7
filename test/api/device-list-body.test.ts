// The device list's prebuilt body (services/device-json.ts) and its page cache (store/sqlite/repos/device-query.ts): the
// bytes must be exactly JSON.stringify of the presentDevice objects and the newline every JSON body ends with, and
// every device write must show at once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { presentDevice } from '../../src/services/devices.ts';
import { devicePageBody, presentDeviceJson, presentReportedJson } from '../../src/services/device-json.ts';
import type { DeviceRecord } from '../../src/store/contract/records.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

/** Label keys and values chosen to break a naive serializer. */
const AWKWARD_LABELS: Array<Record<string, string>> = [
  {},
  { 'quote"key': 'say "hi"', 'back\\slash': 'C:\\dir\\', tab: 'a\tb\nc\rd\f\b', ctl: '\u0001\u001f\u007f' },
  { 'ünïcødé': 'ß∂ƒ©', emoji: '😀👍🏽', cjk: '中文キー', sep: '\u2028\u2029', bom: '\ufeff', '': 'empty key' },
  { '10': 'ten', '2': 'two', b: 'b', a: 'a', '01': 'not an index', '4294967295': 'not an index either' },
  { '__proto__': 'own key', constructor: 'x', toString: 'y' },
  { long: 'x'.repeat(1024) },
];

describe('device list body', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext();
  });
  after(() => t.close());

  /** What the list served before it was prebuilt: JSON.stringify of presentDevice for each stored record. */
  async function expectedBody(ids: string[], nextPageToken: string): Promise<string> {
    const records: DeviceRecord[] = [];
    for (const id of ids) records.push((await t.deps.store.devices.get(id))!);
    return JSON.stringify({ devices: records.map(presentDevice), nextPageToken }) + '\n';
  }

  async function assertSameBytes(url: string): Promise<{ ids: string[]; nextPageToken: string }> {
    const res = await t.request('GET', url);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
    const ids = (res.body.devices as Array<{ name: string }>).map((d) => d.name.split('/').pop()!);
    assert.equal(res.text, await expectedBody(ids, res.body.nextPageToken));
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.text));
    return { ids, nextPageToken: res.body.nextPageToken };
  }

  describe('happy', () => {
    it('serves exactly the bytes of JSON.stringify(presentDevice) for awkward labels, types and reported', async () => {
      const projectId = await t.createProject();
      for (const labels of AWKWARD_LABELS) await t.createDevice({ projectId, labels });
      await t.createDevice({ projectId, type: 'touch', productNumber: 'pn "quoted" \\ ü', labels: { a: '1' } });
      await t.createDevice({
        projectId,
        type: 'temperature',
        labels: {},
        reported: {
          temperature: { value: 21.5, updateTime: '2026-01-01T00:00:00.000000Z' },
          probeWireStatus: { state: 'FOUR_WIRE' },
          unknownType: { x: 1 },
        },
      });
      await t.createDevice({
        projectId,
        type: 'co2',
        reported: { co2: { ppm: 400, note: 'naïve "x"' }, humidity: null },
      });
      await t.createDevice({
        projectId,
        type: 'ccon',
        reported: { touch: {}, connectionStatus: { connection: 'ETHERNET', available: ['ETHERNET', 'CELLULAR'] } },
      });
      await t.createDevice({ projectId, type: 'no-such-type', productNumber: '', reported: { whatever: 1 } });
      const { ids } = await assertSameBytes(`/v2/projects/${projectId}/devices`);
      assert.equal(ids.length, AWKWARD_LABELS.length + 5);
      // Twice: the second answer comes from the page cache and must not differ.
      await assertSameBytes(`/v2/projects/${projectId}/devices`);
    });

    it('matches across pages, orders, filters and the wildcard project', async () => {
      const projectId = await t.createProject();
      for (let i = 0; i < 7; i++)
        await t.createDevice({
          projectId,
          type: i % 2 ? 'touch' : 'humidity',
          labels: { room: `r${i % 3}`, 'ü': `é${i}` },
        });
      for (const query of [
        'pageSize=3',
        'orderBy=-labels.room&pageSize=2',
        'orderBy=type',
        'labelFilters=room%3Dr1',
        'query=%C3%A9',
        'deviceTypes=touch',
      ]) {
        let url = `/v2/projects/${projectId}/devices?${query}`;
        for (let pages = 0; pages < 10; pages++) {
          const { nextPageToken } = await assertSameBytes(url);
          if (nextPageToken === '') break;
          url = `/v2/projects/${projectId}/devices?${query}&pageToken=${nextPageToken}`;
        }
      }
      await assertSameBytes(`/v2/projects/-/devices?projects=projects/${projectId}&pageSize=4`);
      await assertSameBytes(`/v2/projects/-/devices?organization=organizations/${t.organizationId}&pageSize=4`);
    });

    it('serves an empty page as {"devices":[],"nextPageToken":""}', async () => {
      const projectId = await t.createProject();
      const res = await t.request('GET', `/v2/projects/${projectId}/devices`);
      assert.equal(res.text, '{"devices":[],"nextPageToken":""}\n');
      assert.equal(devicePageBody([], '').toString(), '{"devices":[],"nextPageToken":""}\n');
    });

    it('presentReportedJson equals JSON.stringify(presentReported) and is stable when memoised', () => {
      const reported = JSON.stringify({ temperature: { value: -1e-7 }, probeWireStatus: { state: 'ONE_WIRE' } });
      const first = presentReportedJson('temperature', reported);
      assert.equal(
        first,
        '{"temperature":{"value":-1e-7},"touch":null,"networkStatus":null,"batteryStatus":null,"probeWireStatus":{"state":"ONE_WIRE"}}',
      );
      assert.equal(presentReportedJson('temperature', reported), first);
      assert.equal(presentReportedJson('touch', reported), '{"touch":null,"networkStatus":null,"batteryStatus":null}');
    });

    it('presentDeviceJson equals JSON.stringify(presentDevice) for a listing row', () => {
      const record: DeviceRecord = {
        id: 'emu"x',
        projectId: 'p\\1',
        type: 'touch',
        productNumber: '\u0000',
        labels: { 'k"': 'v\n' },
        reported: { touch: { a: 1 } },
        latestEvents: {},
        emulated: true,
        createTime: 0,
        updateTime: 0,
      };
      const row = {
        id: record.id,
        projectId: record.projectId,
        type: record.type,
        productNumber: record.productNumber,
        labelsJson: JSON.stringify(record.labels),
        reportedJson: JSON.stringify(record.reported),
        sortValue: null,
      };
      assert.equal(presentDeviceJson(row), JSON.stringify(presentDevice(record)));
    });

    it('devicePageBody hands the same bytes out again for the same frozen rows, and new bytes for any other row', () => {
      const row = (id: string, reported: string) =>
        Object.freeze({
          id,
          projectId: 'p',
          type: 'touch',
          productNumber: '102058',
          labelsJson: '{}',
          reportedJson: reported,
          sortValue: null,
        });
      const a = row('a', '{}');
      const b = row('b', '{}');
      const page = devicePageBody([a, b], 'tok');
      assert.equal(devicePageBody([a, b], 'tok'), page, 'the memo serves the same buffer');
      assert.notEqual(devicePageBody([a, b], 'other'), page);
      const b2 = row('b', '{"touch":{"updateTime":"2026-01-01T00:00:00Z"}}');
      const changed = devicePageBody([a, b2], 'tok');
      assert.match(changed.toString(), /2026-01-01/);
      assert.equal(
        devicePageBody([a], 'tok').toString(),
        `{"devices":[${presentDeviceJson(a)}],"nextPageToken":"tok"}\n`,
      );
      const unfrozen = { ...a, labelsJson: '{"k":"1"}' };
      const first = devicePageBody([unfrozen], '');
      unfrozen.labelsJson = '{"k":"2"}';
      assert.match(devicePageBody([unfrozen], '').toString(), /"k":"2"/, 'rows that can change are never memoised');
      assert.match(first.toString(), /"k":"1"/);
    });
  });

  describe('errors', () => {
    it('still answers a bad list request with the error body, not a prebuilt page', async () => {
      const res = await t.request('GET', `/v2/projects/${t.projectId}/devices?orderBy=bogus`);
      assert.equal(res.status, 400);
      assert.match(res.text, /order_by/);
    });
  });

  describe('security', () => {
    it('shows every kind of device write on the very next list (the page cache never serves stale rows)', async () => {
      const projectId = await t.createProject();
      const other = await t.createProject();
      const url = `/v2/projects/${projectId}/devices`;
      const a = await t.createDevice({ projectId, type: 'touch', labels: { v: '1' } });
      await assertSameBytes(url);

      // Written through the store directly (no service involved).
      const b = await t.createDevice({ projectId, type: 'touch' });
      assert.deepEqual((await assertSameBytes(url)).ids, [a.id, b.id]);

      await t.deps.store.devices.updateLabels(a.id, { v: '2' }, nowMicros(t.deps));
      await assertSameBytes(url);
      assert.equal((await t.request('GET', url)).body.devices[0].labels.v, '2');

      // Through the API: a label change and a published event.
      assert.equal(
        (
          await t.request('POST', `/v2/projects/${projectId}/devices/${a.id}/labels`, {
            body: { key: 'w', value: 'x' },
          })
        ).status,
        200,
      );
      assert.equal((await t.request('GET', url)).body.devices[0].labels.w, 'x');
      const published = await t.request('POST', `/v2/projects/${projectId}/devices/${b.id}:publish`, {
        body: { touch: {} },
      });
      assert.equal(published.status, 200, published.text);
      assert.notEqual((await t.request('GET', url)).body.devices[1].reported.touch, null);
      await assertSameBytes(url);

      // A transaction that writes and then fails leaves the list as it was.
      await assert.rejects(
        t.deps.store.transaction(async (tx) => {
          await tx.devices.updateLabels(a.id, { rolled: 'back' }, nowMicros(t.deps));
          throw new Error('abort');
        }),
      );
      assert.equal((await t.request('GET', url)).body.devices[0].labels.rolled, undefined);

      await t.deps.store.devices.move(b.id, other, nowMicros(t.deps));
      assert.deepEqual((await assertSameBytes(url)).ids, [a.id]);
      assert.deepEqual((await assertSameBytes(`/v2/projects/${other}/devices`)).ids, [b.id]);

      await t.deps.store.devices.delete(a.id);
      assert.deepEqual((await assertSameBytes(url)).ids, []);
    });

    it('checks the caller on every list even when the page is cached', async () => {
      const projectId = await t.createProject();
      await t.createDevice({ projectId });
      const reader = await t.createServiceAccount({ projectId, roles: ['roles/project.user'] });
      const url = `/v2/projects/${projectId}/devices`;
      assert.equal((await t.request('GET', url, { auth: reader.auth })).status, 200);
      const outsider = await t.createServiceAccount({ projectId: await t.createProject() });
      assert.equal((await t.request('GET', url, { auth: outsider.auth })).status, 404);
    });
  });
});
