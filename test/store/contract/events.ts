// Store contract: event history (order, bounds, types, cursor, byte bound), retention by storage time, and the
// latest event of each type per device (:sync), with and without a page of devices, after retention too.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock } from '../../../src/runtime/clock.ts';
import { createIdGenerator } from '../../../src/runtime/ids.ts';
import { SeededRandom } from '../../../src/runtime/random.ts';
import type { DeviceRecord, EventRecord } from '../../../src/store/contract/records.ts';
import type { EventHistoryQuery, Store } from '../../../src/store/contract/store.ts';
import { device, event, project, seedProject, T0, useStore, withFreshStore, type OpenStore } from './fixtures.ts';

export function eventContract(open: OpenStore): void {
  describe('events', () => {
    const store = useStore(open);
    const history = (q: Partial<EventHistoryQuery> & { deviceId: string }) =>
      store().events.listByDevice({ eventTypes: [], startTime: 0, endTime: Number.MAX_SAFE_INTEGER, limit: 100, ...q });

    it("stores events and reads one device's history newest first, within inclusive bounds, of the types asked", async () => {
      const p = await seedProject(store());
      const [d, other] = [device(p.id), device(p.id)];
      for (const x of [d, other]) await store().devices.create(x);
      const [e100, e200, e300] = [event(d, 100, 'touch'), event(d, 200, 'temperature'), event(d, 300, 'touch')];
      for (const e of [e200, e300, e100, event(other, 250)]) await store().events.insert(e);
      assert.deepEqual(await history({ deviceId: d.id }), [e300, e200, e100]);
      assert.deepEqual(
        await history({ deviceId: d.id, startTime: 100, endTime: 200 }),
        [e200, e100],
        'both bounds inclusive',
      );
      assert.deepEqual(await history({ deviceId: d.id, startTime: 101, endTime: 299 }), [e200]);
      assert.deepEqual(await history({ deviceId: d.id, eventTypes: ['touch'] }), [e300, e100]);
      assert.deepEqual(await history({ deviceId: d.id, eventTypes: ['touch', 'temperature'] }), [e300, e200, e100]);
      assert.deepEqual(await history({ deviceId: d.id, limit: 2 }), [e300, e200]);
      assert.deepEqual(await history({ deviceId: 'missing' }), []);
    });

    it('orders events of the same time by id, descending, and pages strictly before a [timestamp, id] cursor', async () => {
      const p = await seedProject(store());
      const d = device(p.id);
      await store().devices.create(d);
      const [a, b, c, x] = [event(d, 300), event(d, 300), event(d, 300), event(d, 100)];
      for (const e of [b, x, c, a]) await store().events.insert(e);
      assert.deepEqual(
        (await history({ deviceId: d.id })).map((e) => e.id),
        [c.id, b.id, a.id, x.id],
      );
      assert.deepEqual(
        (await history({ deviceId: d.id, before: [300, c.id], limit: 2 })).map((e) => e.id),
        [b.id, a.id],
      );
      assert.deepEqual(
        (await history({ deviceId: d.id, before: [300, a.id] })).map((e) => e.id),
        [x.id],
      );
      assert.deepEqual(await history({ deviceId: d.id, before: [100, x.id] }), []);
      assert.deepEqual(
        (await history({ deviceId: d.id, before: [200, 'zzzz'] })).map((e) => e.id),
        [x.id],
        'a cursor between times',
      );
    });

    it('ends a history page early once the bodies add up past maxBytes, with at least two rows', async () => {
      const p = await seedProject(store());
      const d = device(p.id);
      await store().devices.create(d);
      const events = [1, 2, 3, 4].map((t) =>
        event(d, t, 'touch', { body: JSON.stringify({ pad: 'x'.repeat(1000), t }) }),
      );
      for (const e of events) await store().events.insert(e);
      const newest = events.map((e) => e.id).reverse();
      const page = async (maxBytes: number | undefined, limit = 10) =>
        (await history({ deviceId: d.id, maxBytes, limit })).map((e) => e.id);
      assert.deepEqual(await page(2500), newest.slice(0, 3));
      assert.deepEqual(await page(0), newest.slice(0, 2));
      assert.deepEqual(await page(2500, 2), newest.slice(0, 2));
      assert.deepEqual(await page(undefined), newest, 'no bound');
    });

    it('finds, per device of the project and type asked, the event its latestEvents names, by device then event time', async () => {
      const p = await seedProject(store());
      const other = project(p.organizationId);
      await store().projects.create(other);
      const [a, b, c] = [device(p.id), device(p.id), device(other.id)];
      for (const d of [a, b, c]) await store().devices.create(d);
      const [aTouch, aTemp, aLabels, bTouch, cTouch] = [
        event(a, 300, 'touch'),
        event(a, 200, 'temperature'),
        event(a, 250, 'labelsChanged'),
        event(b, 50, 'touch'),
        event(c, 999, 'touch'),
      ];
      for (const e of [event(a, 100, 'touch'), aTouch, aTemp, aLabels, bTouch, cTouch]) await store().events.insert(e);
      await point(store(), a, aTouch, aTemp, aLabels);
      await point(store(), b, bTouch);
      await point(store(), c, cTouch);
      const ids = (events: EventRecord[]) => events.map((e) => e.id);
      assert.deepEqual(await store().events.latestPerType(p.id, ['touch', 'temperature', 'labelsChanged', 'co2']), [
        aTemp,
        aLabels,
        aTouch,
        bTouch,
      ]);
      assert.deepEqual(ids(await store().events.latestPerType(p.id, ['temperature'])), [aTemp.id]);
      assert.deepEqual(await store().events.latestPerType(p.id, ['co2']), []);
      assert.deepEqual(await store().events.latestPerType(p.id, []), []);
      assert.deepEqual(ids(await store().events.latestPerType(other.id, ['touch'])), [cTouch.id]);
    });

    it('with a page of devices, covers only the devices after `devices.after`, at most `devices.limit` of them', async () => {
      const p = await seedProject(store());
      const ds = [device(p.id), device(p.id), device(p.id), device(p.id)];
      for (const d of ds) await store().devices.create(d);
      const latest: EventRecord[] = [];
      for (const [i, d] of ds.entries()) {
        if (i === 1) continue; // a device without events still counts as one of the page
        const [touch, temp] = [event(d, 10 + i, 'touch'), event(d, 20 + i, 'temperature')];
        for (const e of [touch, temp]) await store().events.insert(e);
        await point(store(), d, touch, temp);
        latest.push(touch, temp);
      }
      const types = ['touch', 'temperature'];
      const ids = (events: EventRecord[]) => events.map((e) => e.id);
      const [d0, , d2, d3] = ds.map((d) => latest.filter((e) => e.deviceId === d.id).map((e) => e.id));
      assert.deepEqual(ids(await store().events.latestPerType(p.id, types, { limit: 2 })), d0);
      assert.deepEqual(ids(await store().events.latestPerType(p.id, types, { after: ds[1]!.id, limit: 2 })), [
        ...d2!,
        ...d3!,
      ]);
      assert.deepEqual(ids(await store().events.latestPerType(p.id, types, { after: ds[2]!.id, limit: 1 })), d3);
      assert.deepEqual(await store().events.latestPerType(p.id, types, { after: ds[3]!.id, limit: 10 }), []);
      assert.deepEqual(
        ids(await store().events.latestPerType(p.id, types, { limit: 100 })),
        ids(await store().events.latestPerType(p.id, types)),
      );
    });

    it('when retention deleted the latest event of a type, finds the latest one still stored (stored after it, older)', async () => {
      const p = await seedProject(store());
      const d = device(p.id);
      await store().devices.create(d);
      const clock = new FakeClock(Date.UTC(2026, 0, 1));
      const ids = createIdGenerator(clock, new SeededRandom('latest'));
      const stored = async (timestamp: number, type = 'touch') => {
        clock.advance(1000);
        const e = event(d, timestamp, type, { id: ids.next(), createTime: clock.now() * 1000 });
        await store().events.insert(e);
        return e;
      };
      await stored(100);
      const latest = await stored(500);
      const backdated = [await stored(300), await stored(400), await stored(450, 'temperature'), await stored(200)];
      await store().devices.updateReported(d.id, {}, { touch: [500, latest.id] }, 1);
      assert.deepEqual(
        (await store().events.latestPerType(p.id, ['touch'])).map((e) => e.id),
        [latest.id],
      );
      // Retention deletes what was stored first: the two events before the backdated ones.
      assert.equal(await store().events.deleteStoredBefore(backdated[0]!.createTime, 10), 2);
      assert.deepEqual(
        (await store().events.latestPerType(p.id, ['touch'])).map((e) => e.id),
        [backdated[1]!.id],
      );
      // A pointer without an id (kept by SQLite migration 080 when retention had already deleted the event) works alike.
      await store().devices.updateReported(d.id, {}, { touch: [500, ''] }, 1);
      assert.deepEqual(
        (await store().events.latestPerType(p.id, ['touch'])).map((e) => e.id),
        [backdated[1]!.id],
      );
      await store().events.deleteStoredBefore(clock.now() * 1000 + 1, 10);
      assert.deepEqual(await store().events.latestPerType(p.id, ['touch']), [], 'none stored: none found');
    });

    it('deletes events stored before a time, at most `limit` at a time, found through their time-ordered ids', () =>
      withFreshStore(open, async (s) => {
        const p = await seedProject(s);
        const d = device(p.id);
        await s.devices.create(d);
        const start = Date.UTC(2026, 0, 1);
        const clock = new FakeClock(start);
        const ids = createIdGenerator(clock, new SeededRandom('retention'));
        const stored: number[] = [];
        for (const ms of [0, 400, 999, 1000, 1500, 2000]) {
          clock.set(start + ms);
          const t = clock.now() * 1000;
          stored.push(t);
          await s.events.insert(event(d, T0, 'touch', { id: ids.next(), createTime: t }));
        }
        assert.equal(await s.events.deleteStoredBefore(stored[0]!, 10), 0, 'strictly before');
        // Cut-off inside a second: the events of that second stored before it go, the later ones stay.
        assert.equal(await s.events.deleteStoredBefore(stored[1]! + 1, 10), 2);
        assert.equal(await s.events.deleteStoredBefore(stored[4]!, 1), 1, 'the limit holds');
        assert.equal(await s.events.deleteStoredBefore(stored[4]!, 10), 1);
        assert.equal(await s.events.deleteStoredBefore(stored[4]!, 10), 0);
        const left = await s.events.listByDevice({
          deviceId: d.id,
          eventTypes: [],
          startTime: 0,
          endTime: Number.MAX_SAFE_INTEGER,
          limit: 10,
        });
        assert.deepEqual(left.map((e) => e.createTime).sort(), [stored[4], stored[5]]);
      }));
  });
}

/** Makes the device's latestEvents name these events (as the pipeline does through updateReported). */
function point(store: Store, d: DeviceRecord, ...events: EventRecord[]): Promise<void> {
  return store.devices.updateReported(
    d.id,
    {},
    Object.fromEntries(events.map((e) => [e.eventType, [e.timestamp, e.id]])),
    T0,
  );
}
