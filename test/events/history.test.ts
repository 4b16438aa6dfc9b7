// Event history (contract §4.7) and retention (§7 #6): window, filters, order, paging, pruning.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pruneOnce, startRetention } from '../../src/events/retention.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

describe('event history', () => {
  let t: TestContext;
  before(async () => {
    t = await createTestContext({ env: { SENSORCLOUD_EVENT_RETENTION: '31d' } });
  });
  after(() => t.close());

  const createEmulated = async (type: string) => {
    const res = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type } });
    assert.equal(res.status, 200, res.text);
    return { name: res.body.name as string, id: (res.body.name as string).split('/')[3]! };
  };
  const publish = async (name: string, body: unknown) => {
    const res = await t.request('POST', `/v2/${name}:publish`, { body });
    assert.equal(res.status, 200, res.text);
  };
  const list = (name: string, query = '') => t.request('GET', `/v2/${name}/events${query}`);
  const iso = (ms: number) => new Date(ms).toISOString();
  const storedCount = async (id: string) =>
    (
      await t.deps.store.events.listByDevice({
        deviceId: id,
        eventTypes: [],
        startTime: 0,
        endTime: Number.MAX_SAFE_INTEGER,
        limit: 10_000,
      })
    ).length;

  describe('happy', () => {
    it('defaults to the last 24 hours, both bounds inclusive, newest first', async () => {
      const device = await createEmulated('temperature');
      const now = t.clock.now();
      for (const [offset, value] of [
        [-25 * HOUR, 1],
        [-DAY, 2],
        [-HOUR, 3],
        [0, 4],
        [1, 5],
      ] as const) {
        await publish(device.name, { temperature: { value, updateTime: iso(now + offset) } });
      }
      const res = await list(device.name);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body), ['events', 'nextPageToken']);
      assert.deepEqual(
        res.body.events.map((e: any) => e.data.temperature.value),
        [4, 3, 2],
      );
      assert.equal(res.body.nextPageToken, '');

      const explicit = await list(device.name, `?start_time=${iso(now - 25 * HOUR)}&end_time=${iso(now + 1)}`);
      assert.deepEqual(
        explicit.body.events.map((e: any) => e.data.temperature.value),
        [5, 4, 3, 2, 1],
      );
      const exact = await list(device.name, `?startTime=${iso(now - HOUR)}&endTime=${iso(now - HOUR)}`);
      assert.deepEqual(
        exact.body.events.map((e: any) => e.data.temperature.value),
        [3],
      );
    });

    it('filters by event types (repeated key, either spelling) and includes labelsChanged', async () => {
      const device = await createEmulated('humidity');
      await publish(device.name, { humidity: { temperature: 20, relativeHumidity: 30 } });
      await publish(device.name, { touch: {} });
      await publish(device.name, { batteryStatus: { percentage: 90 } });
      assert.equal(
        (await t.request('PUT', `/v2/${device.name}`, { body: { type: 'humidity', labels: { name: 'H' } } })).status,
        200,
      );
      const all = await list(device.name);
      assert.deepEqual(all.body.events.map((e: any) => e.eventType).sort(), [
        'batteryStatus',
        'humidity',
        'labelsChanged',
        'touch',
      ]);
      const some = await list(device.name, '?eventTypes=touch&event_types=labelsChanged');
      assert.deepEqual(some.body.events.map((e: any) => e.eventType).sort(), ['labelsChanged', 'touch']);
      const none = await list(device.name, '?eventTypes=co2');
      assert.deepEqual(none.body, { events: [], nextPageToken: '' });
    });

    it('breaks timestamp ties by eventId descending and pages through everything exactly once', async () => {
      const device = await createEmulated('touchCounter');
      const now = t.clock.now();
      for (let i = 0; i < 7; i++) {
        // Pairs of events share a timestamp.
        await publish(device.name, {
          touchCount: { total: i, updateTime: iso(now - 10_000 + Math.floor(i / 2) * 1000) },
        });
      }
      const all = await list(device.name);
      const expected = all.body.events as Array<{ eventId: string; timestamp: string }>;
      assert.equal(expected.length, 7);
      for (let i = 1; i < expected.length; i++) {
        const [a, b] = [expected[i - 1]!, expected[i]!];
        assert.ok(a.timestamp > b.timestamp || (a.timestamp === b.timestamp && a.eventId > b.eventId), `order at ${i}`);
      }
      const seen: string[] = [];
      let token = '';
      for (let pageNo = 0; pageNo < 10; pageNo++) {
        const res = await list(device.name, `?pageSize=3&pageToken=${token}`);
        assert.equal(res.status, 200, res.text);
        seen.push(...res.body.events.map((e: any) => e.eventId));
        token = res.body.nextPageToken;
        if (token === '') break;
        // Events arriving between pages (newer than the cursor) and a moving clock never disturb the walk.
        t.clock.advance(1000);
        await publish(device.name, { touchCount: { total: 99 } });
      }
      assert.deepEqual(
        seen,
        expected.map((e) => e.eventId),
      );
    });

    it('is readable with device.read (project user)', async () => {
      const device = await createEmulated('touch');
      await publish(device.name, { touch: {} });
      const user = await t.createServiceAccount({ roles: ['roles/project.user'] });
      const res = await t.request('GET', `/v2/${device.name}/events`, { auth: user.auth });
      assert.equal(res.status, 200);
      assert.equal(res.body.events.length, 1);
    });
  });

  describe('errors', () => {
    it('refuses bad windows, unknown event types, bad page sizes and foreign tokens', async () => {
      const device = await createEmulated('touch');
      const now = t.clock.now();
      const cases: Array<[string, RegExp]> = [
        [`?startTime=${iso(now)}&endTime=${iso(now - 1)}`, /startTime must not be after endTime/],
        [`?startTime=${iso(now + HOUR)}`, /startTime must not be after endTime/],
        ['?startTime=yesterday', /startTime must be an RFC 3339 timestamp/],
        ['?endTime=2025-06-01', /endTime/],
        ['?eventTypes=temprature', /unknown event type "temprature"/],
        ['?pageSize=-1', /pageSize/],
        ['?pageSize=abc', /pageSize/],
        ['?pageToken=garbage', /pageToken/],
      ];
      for (const [query, mention] of cases) {
        const res = await list(device.name, query);
        assert.equal(res.status, 400, `${query} → ${res.text}`);
        assert.match(res.body.error, mention, query);
      }
      for (let i = 0; i < 3; i++) await publish(device.name, { touch: { updateTime: iso(now - i * 1000) } });
      const first = await list(device.name, '?pageSize=1');
      assert.notEqual(first.body.nextPageToken, '');
      const mismatched = await list(device.name, `?pageSize=1&eventTypes=touch&pageToken=${first.body.nextPageToken}`);
      assert.equal(mismatched.status, 400);
    });

    it('answers 400 for the wildcard project and 404 for unknown or foreign devices', async () => {
      const device = await createEmulated('touch');
      assert.equal((await t.request('GET', `/v2/projects/-/devices/${device.id}/events`)).status, 400);
      assert.equal(
        (await t.request('GET', `/v2/projects/${t.projectId}/devices/emu${'0'.repeat(20)}/events`)).status,
        404,
      );
      const other = await t.createProject('other');
      const foreign = await t.createDevice({ projectId: other });
      assert.equal((await t.request('GET', `/v2/projects/${t.projectId}/devices/${foreign.id}/events`)).status, 404);
    });
  });

  describe('security', () => {
    it('an outsider gets 404; an anonymous caller 401', async () => {
      const device = await createEmulated('touch');
      const elsewhere = await t.createProject('elsewhere');
      const outsider = await t.createServiceAccount({ projectId: elsewhere, roles: ['roles/project.admin'] });
      assert.equal((await t.request('GET', `/v2/${device.name}/events`, { auth: outsider.auth })).status, 404);
      assert.equal((await t.request('GET', `/v2/${device.name}/events`, { auth: null })).status, 401);
    });
  });

  describe('retention', () => {
    it('prunes events stored longer ago than the retention, in batches, keeping newer ones', async () => {
      const device = await createEmulated('touch');
      // Event time does not matter, storage time does: an event about last year stored now is kept.
      await publish(device.name, { touch: { updateTime: '2024-06-01T00:00:00Z' } });
      for (let i = 0; i < 4; i++) await publish(device.name, { touch: {} });
      t.clock.advance(20 * DAY);
      for (let i = 0; i < 2; i++) await publish(device.name, { touch: {} });
      assert.equal(await storedCount(device.id), 7);

      assert.equal(await pruneOnce(t.deps), 0, 'nothing is older than 31 days yet');
      t.clock.advance(11 * DAY + 1);
      const deleted = await pruneOnce(t.deps, { batchSize: 2 });
      assert.ok(deleted >= 5, `deleted ${deleted}`);
      assert.equal(await storedCount(device.id), 2);
      t.clock.advance(20 * DAY);
      await pruneOnce(t.deps);
      assert.equal(await storedCount(device.id), 0);
    });

    it('stops between batches when asked', async () => {
      const device = await createEmulated('touch');
      for (let i = 0; i < 5; i++) await publish(device.name, { touch: {} });
      t.clock.advance(32 * DAY);
      let batches = 0;
      const deleted = await pruneOnce(t.deps, { batchSize: 2, shouldStop: () => batches++ >= 1 });
      assert.equal(deleted, 2);
      assert.ok((await storedCount(device.id)) >= 3);
      await pruneOnce(t.deps);
      assert.equal(await storedCount(device.id), 0);
    });

    it('the background timer starts and stops cleanly', async () => {
      const timer = startRetention(t.deps, { intervalMs: 60_000 });
      await timer.stop();
      await timer.stop();
    });
  });
});
