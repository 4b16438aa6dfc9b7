// Store contract: devices (records, lists, moves, deletes with their history) and the device list query
// (every filter, every sort, descending, missing values last, ties on the id, cursors, the byte bound).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { DeviceRecord } from '../../../src/store/contract/records.ts';
import type { DeviceListingRow, DeviceQuery, DeviceSort } from '../../../src/store/contract/store.ts';
import { device, event, project, seedProject, T0, useStore, type OpenStore } from './fixtures.ts';

export function deviceContract(open: OpenStore): void {
  describe('devices', () => {
    const store = useStore(open);

    it('round-trips a device with its labels, reported state and latest events; an unknown id is null', async () => {
      const p = await seedProject(store());
      const d = device(p.id, {
        type: 'ccon',
        productNumber: '102772',
        labels: { room: 'Kjøkken', '': 'empty key' },
        emulated: true,
        reported: { temperature: { value: 21.5, updateTime: '2025-06-01T12:00:00Z' }, networkStatus: null },
        latestEvents: { temperature: [T0, 'e1'], labelsChanged: [T0 - 5, 'e0'] },
        createTime: T0 - 9,
        updateTime: T0 - 8,
      });
      await store().devices.create(d);
      assert.deepEqual(await store().devices.get(d.id), d);
      assert.equal(await store().devices.get('missing'), null);
    });

    it("lists a project's devices in id order, keyset-paged", async () => {
      const p = await seedProject(store());
      const other = await seedProject(store());
      const [a, b, c, d] = [device(p.id), device(other.id), device(p.id, { emulated: true }), device(p.id)];
      for (const x of [d, c, b, a]) await store().devices.create(x);
      assert.deepEqual(await store().devices.listByProject(p.id, { limit: 10 }), [a, c, d]);
      assert.deepEqual(
        (await store().devices.listByProject(p.id, { limit: 2 })).map((x) => x.id),
        [a.id, c.id],
      );
      assert.deepEqual(
        (await store().devices.listByProject(p.id, { after: c.id, limit: 2 })).map((x) => x.id),
        [d.id],
      );
      assert.deepEqual(await store().devices.listByProject(p.id, { after: d.id, limit: 2 }), []);
    });

    it('lists the emulated devices of every project in id order, with only their id, type and latest events', async () => {
      await seedEmulated(async (ours) => {
        const all = [];
        for (let after: string | null = null, i = 0; i < 100; i++) {
          const page = await store().devices.listEmulated({ after, limit: 2 });
          all.push(...page);
          if (page.length < 2) break;
          after = page[page.length - 1]!.id;
        }
        const mine = all.filter((s) => ours.some((d) => d.id === s.id));
        assert.deepEqual(
          mine,
          ours.map((d) => ({ id: d.id, type: d.type, latestEvents: d.latestEvents })),
        );
        assert.deepEqual(
          all.map((s) => s.id),
          [...all.map((s) => s.id)].sort(),
          'id order across pages',
        );
      });
    });
    /** Two projects with emulated and real devices; fn gets the emulated ones in id order. */
    async function seedEmulated(fn: (ours: DeviceRecord[]) => Promise<void>): Promise<void> {
      const p = await seedProject(store());
      const q = await seedProject(store());
      const ours = [
        device(p.id, {
          emulated: true,
          type: 'touch',
          labels: { big: 'x'.repeat(100) },
          latestEvents: { touch: [T0, 'e9'] },
        }),
        device(q.id, { emulated: true, reported: { co2: { ppm: 400 } } }),
        device(p.id, { emulated: true }),
      ];
      for (const d of [...ours, device(p.id), device(q.id)]) await store().devices.create(d);
      await fn(ours);
    }

    it('updateReported writes the reported state, the latest events and the update time, and keeps the labels', async () => {
      const p = await seedProject(store());
      const d = device(p.id, { labels: { keep: 'me' }, reported: { touch: {} } });
      await store().devices.create(d);
      await store().devices.get(d.id); // a read first, so a cache holding it must follow the write
      const reported = { temperature: { value: 3 } };
      const latestEvents = { temperature: [T0 + 7, 'e7'] as [number, string] };
      await store().devices.updateReported(d.id, reported, latestEvents, T0 + 8);
      assert.deepEqual(await store().devices.get(d.id), { ...d, reported, latestEvents, updateTime: T0 + 8 });
    });

    it('updateLabels writes the labels and the update time, and keeps the reported state', async () => {
      const p = await seedProject(store());
      const d = device(p.id, { labels: { a: '1', b: '2' }, reported: { touch: { updateTime: 'x' } } });
      await store().devices.create(d);
      await store().devices.get(d.id);
      await store().devices.updateLabels(d.id, { c: '3' }, T0 + 9);
      assert.deepEqual(await store().devices.get(d.id), { ...d, labels: { c: '3' }, updateTime: T0 + 9 });
    });

    it('move puts the device in another project; its history goes with it, its rows as they were stored', async () => {
      const p1 = await seedProject(store());
      const p2 = project(p1.organizationId);
      await store().projects.create(p2);
      const d = device(p1.id);
      await store().devices.create(d);
      const e = event(d, T0);
      await store().events.insert(e);
      await store().devices.updateReported(d.id, { touch: {} }, { touch: [e.timestamp, e.id] }, T0 + 1);
      await store().devices.get(d.id);
      await store().devices.move(d.id, p2.id, T0 + 2);
      assert.deepEqual(await store().devices.get(d.id), {
        ...d,
        projectId: p2.id,
        reported: { touch: {} },
        latestEvents: { touch: [e.timestamp, e.id] },
        updateTime: T0 + 2,
      });
      assert.deepEqual(await store().devices.listByProject(p1.id, { limit: 10 }), []);
      assert.deepEqual(
        (await store().devices.listByProject(p2.id, { limit: 10 })).map((x) => x.id),
        [d.id],
      );
      const history = await store().events.listByDevice({
        deviceId: d.id,
        eventTypes: [],
        startTime: 0,
        endTime: T0,
        limit: 10,
      });
      assert.deepEqual(history, [e]);
      assert.deepEqual(await store().events.latestPerType(p2.id, ['touch']), [e]);
      assert.deepEqual(await store().events.latestPerType(p1.id, ['touch']), []);
      assert.deepEqual(await store().projects.countContents(p1.id), { devices: 0, dataConnectors: 0 });
      assert.deepEqual(await store().projects.countContents(p2.id), { devices: 1, dataConnectors: 0 });
    });

    it("delete takes the device and its history, and no other device's", async () => {
      const p = await seedProject(store());
      const [d, keep] = [device(p.id), device(p.id)];
      for (const x of [d, keep]) await store().devices.create(x);
      const kept = event(keep, T0);
      for (const e of [event(d, T0), event(d, T0 + 1), kept]) await store().events.insert(e);
      await store().devices.get(d.id);
      await store().devices.delete(d.id);
      assert.equal(await store().devices.get(d.id), null);
      assert.deepEqual(
        await store().events.listByDevice({
          deviceId: d.id,
          eventTypes: [],
          startTime: 0,
          endTime: T0 + 10,
          limit: 10,
        }),
        [],
      );
      assert.deepEqual(
        await store().events.listByDevice({
          deviceId: keep.id,
          eventTypes: [],
          startTime: 0,
          endTime: T0 + 10,
          limit: 10,
        }),
        [kept],
      );
      assert.deepEqual(
        (await store().devices.listByProject(p.id, { limit: 10 })).map((x) => x.id),
        [keep.id],
      );
    });

    it("events.deleteByDevice takes up to a limit of the device's history, and no other device's", async () => {
      const p = await seedProject(store());
      const [d, keep] = [device(p.id), device(p.id)];
      for (const x of [d, keep]) await store().devices.create(x);
      const kept = event(keep, T0);
      for (const e of [event(d, T0), event(d, T0 + 1), event(d, T0 + 2), kept]) await store().events.insert(e);
      const history = (id: string) =>
        store().events.listByDevice({ deviceId: id, eventTypes: [], startTime: 0, endTime: T0 + 10, limit: 10 });
      assert.equal(await store().events.deleteByDevice(d.id, 2), 2);
      assert.equal((await history(d.id)).length, 1);
      assert.equal(await store().events.deleteByDevice(d.id, 2), 1);
      assert.equal(await store().events.deleteByDevice(d.id, 2), 0);
      assert.deepEqual(await history(keep.id), [kept]);
      assert.ok(await store().devices.get(d.id), 'the device stays');
    });
  });

  describe('devices.queryListing', () => {
    const store = useStore(open);
    // Project p: five devices of mixed types, product numbers, labels and reported values; project q: one more.
    const fixture = { p: '', q: '', organizationId: '' };
    const devices: DeviceRecord[] = [];
    let inQ: DeviceRecord;
    before(async () => {
      const p = await seedProject(store());
      const q = project(p.organizationId);
      await store().projects.create(q);
      Object.assign(fixture, { p: p.id, q: q.id, organizationId: p.organizationId });
      devices.push(
        device(p.id, {
          type: 'temperature',
          productNumber: '102058',
          labels: { room: 'Kitchen', floor: '2' },
          reported: { temperature: { value: 21.5 } },
        }),
        device(p.id, {
          type: 'touch',
          productNumber: '102772',
          labels: { room: 'Hall' },
          reported: { touch: { updateTime: 'x' } },
        }),
        device(p.id, {
          type: 'temperature',
          productNumber: '102772',
          labels: { floor: '1', ØST: 'Æble' },
          reported: { temperature: { value: 9 } },
        }),
        device(p.id, { type: 'ccon', productNumber: '102058', labels: {}, reported: {} }),
        device(p.id, {
          type: 'touch',
          productNumber: '102058',
          labels: { room: 'Hall', floor: '' },
          reported: { temperature: { value: 100 } },
        }),
      );
      inQ = device(q.id, { type: 'touch', labels: { room: 'Attic' } });
      for (const d of [...devices, inQ]) await store().devices.create(d);
    });
    const [A, B, C, D, E] = [0, 1, 2, 3, 4];
    const ids = (...indexes: number[]) => indexes.map((i) => devices[i]!.id);
    const query = (over: Partial<DeviceQuery> = {}): Promise<DeviceListingRow[]> =>
      store().devices.queryListing({
        projectIds: [fixture.p],
        deviceIds: [],
        deviceTypes: [],
        productNumbers: [],
        labelFilters: [],
        query: null,
        sort: { kind: 'id' },
        descending: false,
        after: null,
        limit: 100,
        maxBytes: Number.MAX_SAFE_INTEGER,
        ...over,
      });
    const listed = async (over: Partial<DeviceQuery> = {}) => (await query(over)).map((r) => r.id);

    it("serves each device's listed fields: labels as JSON.stringify of the object, reported as its JSON", async () => {
      const rows = await query();
      assert.deepEqual(
        rows.map((r) => r.id),
        ids(A, B, C, D, E),
      );
      for (const [i, r] of rows.entries()) {
        const d = devices[i]!;
        assert.deepEqual(
          { ...r, reportedJson: JSON.parse(r.reportedJson) },
          {
            id: d.id,
            projectId: d.projectId,
            type: d.type,
            productNumber: d.productNumber,
            labelsJson: JSON.stringify(d.labels),
            reportedJson: d.reported,
            sortValue: null,
          },
        );
      }
    });

    it('covers every project given, and only those', async () => {
      assert.deepEqual(await listed({ projectIds: [fixture.q] }), [inQ.id]);
      assert.deepEqual(await listed({ projectIds: [fixture.q, fixture.p] }), [...ids(A, B, C, D, E), inQ.id].sort());
      assert.deepEqual(await listed({ projectIds: ['missing'] }), []);
    });

    it('filters on device ids, types and product numbers: values of one list ORed, lists ANDed', async () => {
      assert.deepEqual(await listed({ deviceIds: ids(E, B, D) }), ids(B, D, E));
      assert.deepEqual(await listed({ deviceTypes: ['touch', 'ccon'] }), ids(B, D, E));
      assert.deepEqual(await listed({ productNumbers: ['102772'] }), ids(B, C));
      assert.deepEqual(await listed({ deviceTypes: ['touch'], productNumbers: ['102058'] }), ids(E));
      assert.deepEqual(await listed({ deviceIds: ids(A, B), deviceTypes: ['touch'] }), ids(B));
      assert.deepEqual(await listed({ deviceIds: [inQ.id] }), [], 'a device of another project');
    });

    it('filters on labels: every filter must hold; a null value means the key is present', async () => {
      assert.deepEqual(await listed({ labelFilters: [{ key: 'room', value: 'Hall' }] }), ids(B, E));
      assert.deepEqual(await listed({ labelFilters: [{ key: 'room', value: 'hall' }] }), [], 'values match exactly');
      assert.deepEqual(await listed({ labelFilters: [{ key: 'floor', value: null }] }), ids(A, C, E));
      assert.deepEqual(
        await listed({ labelFilters: [{ key: 'floor', value: '' }] }),
        ids(E),
        'an empty value is a value',
      );
      assert.deepEqual(
        await listed({
          labelFilters: [
            { key: 'room', value: 'Hall' },
            { key: 'floor', value: null },
          ],
        }),
        ids(E),
      );
      assert.deepEqual(
        await listed({
          labelFilters: [
            { key: 'room', value: 'Hall' },
            { key: 'floor', value: '2' },
          ],
        }),
        [],
      );
    });

    it('filters on a lower-case substring of the id, the type, or any label key or value, in any case', async () => {
      assert.deepEqual(await listed({ query: 'kitch' }), ids(A), 'a label value');
      assert.deepEqual(await listed({ query: 'floo' }), ids(A, C, E), 'a label key');
      assert.deepEqual(await listed({ query: 'ccon' }), ids(D), 'the type');
      assert.deepEqual(await listed({ query: devices[C]!.id.slice(1) }), ids(C), 'the id');
      assert.deepEqual(await listed({ query: 'øst' }), ids(C), 'a key beyond ASCII');
      assert.deepEqual(await listed({ query: 'æb' }), ids(C), 'a value beyond ASCII');
      assert.deepEqual(await listed({ query: '102772' }), [], 'not the product number');
      assert.deepEqual(
        await listed({ query: 'hall', deviceTypes: ['temperature'] }),
        [],
        'ANDed with the other filters',
      );
      assert.deepEqual(await listed({ query: '%' }), [], 'taken literally: % is no pattern');
      assert.deepEqual(await listed({ query: 'h_ll' }), [], 'nor is _');
    });

    it('sorts by id, ascending or descending, after an id cursor', async () => {
      assert.deepEqual(await listed({ descending: true }), ids(E, D, C, B, A));
      assert.deepEqual(await listed({ after: { value: null, id: devices[B]!.id } }), ids(C, D, E));
      assert.deepEqual(await listed({ descending: true, after: { value: null, id: devices[C]!.id } }), ids(B, A));
      assert.deepEqual(await listed({ limit: 2 }), ids(A, B));
    });

    it('sorts by type or product number, ties on the id ascending, descending too, with the value on each row', async () => {
      const rows = await query({ sort: { kind: 'type' } });
      assert.deepEqual(
        rows.map((r) => [r.id, r.sortValue]),
        [
          [ids(D)[0], 'ccon'],
          [ids(A)[0], 'temperature'],
          [ids(C)[0], 'temperature'],
          [ids(B)[0], 'touch'],
          [ids(E)[0], 'touch'],
        ],
      );
      assert.deepEqual(await listed({ sort: { kind: 'type' }, descending: true }), ids(B, E, A, C, D));
      assert.deepEqual(await listed({ sort: { kind: 'productNumber' } }), ids(A, D, E, B, C));
      assert.deepEqual(await listed({ sort: { kind: 'productNumber' }, descending: true }), ids(B, C, A, D, E));
    });

    it('sorts by a label, devices without it last in either direction', async () => {
      const sort: DeviceSort = { kind: 'label', key: 'room' };
      const rows = await query({ sort });
      assert.deepEqual(
        rows.map((r) => [r.id, r.sortValue]),
        [
          [devices[B]!.id, 'Hall'],
          [devices[E]!.id, 'Hall'],
          [devices[A]!.id, 'Kitchen'],
          [devices[C]!.id, null],
          [devices[D]!.id, null],
        ],
      );
      assert.deepEqual(await listed({ sort, descending: true }), ids(A, B, E, C, D));
      assert.deepEqual(
        await listed({ sort: { kind: 'label', key: 'floor' } }),
        ids(E, C, A, B, D),
        "'' is a value, before '1'",
      );
    });

    it('sorts by a reported field, numbers as numbers, devices without it last in either direction', async () => {
      const sort: DeviceSort = { kind: 'reported', eventType: 'temperature', fields: ['value'] };
      const rows = await query({ sort });
      assert.deepEqual(
        rows.map((r) => [r.id, r.sortValue]),
        [
          [devices[C]!.id, 9],
          [devices[A]!.id, 21.5],
          [devices[E]!.id, 100],
          [devices[B]!.id, null],
          [devices[D]!.id, null],
        ],
      );
      assert.deepEqual(await listed({ sort, descending: true }), ids(E, A, C, B, D));
      assert.deepEqual(
        await listed({ sort: { kind: 'reported', eventType: 'touch', fields: ['updateTime'] } }),
        ids(B, A, C, D, E),
      );
    });

    it('walks every sort page by page through its cursor (value and id), in both directions, as in one read', async () => {
      const sorts: DeviceSort[] = [
        { kind: 'id' },
        { kind: 'type' },
        { kind: 'productNumber' },
        { kind: 'label', key: 'room' },
        { kind: 'label', key: 'floor' },
        { kind: 'reported', eventType: 'temperature', fields: ['value'] },
      ];
      for (const sort of sorts) {
        for (const descending of [false, true]) {
          const whole = await listed({ sort, descending });
          const walked: string[] = [];
          let after: DeviceQuery['after'] = null;
          for (let i = 0; i < 10; i++) {
            const page = await query({ sort, descending, after, limit: 2 });
            walked.push(...page.map((r) => r.id));
            if (page.length < 2) break;
            const last = page[page.length - 1]!;
            after = { value: last.sortValue, id: last.id };
          }
          assert.deepEqual(walked, whole, `${JSON.stringify(sort)} ${descending ? 'descending' : 'ascending'}`);
        }
      }
    });

    it("ends a page early once the rows' labels and reported JSON add up past maxBytes, with at least two rows", async () => {
      const p = project(fixture.organizationId);
      await store().projects.create(p);
      // Each device ~1 KB of labels: the bound falls inside the third.
      const big = Array.from({ length: 5 }, () => device(p.id, { labels: { note: 'x'.repeat(1000) } }));
      for (const d of big) await store().devices.create(d);
      const bigIds = big.map((d) => d.id);
      const page = (maxBytes: number, limit = 100) => listed({ projectIds: [p.id], maxBytes, limit });
      assert.deepEqual(await page(2500), bigIds.slice(0, 3));
      assert.deepEqual(await page(0), bigIds.slice(0, 2), 'at least two rows, however small the bound');
      assert.deepEqual(await page(2500, 2), bigIds.slice(0, 2), 'the limit still holds');
      assert.deepEqual(await page(1_000_000), bigIds);
    });

    it("reads devices as last written, not a rolled-back write, and sees a transaction's own writes inside it", async () => {
      const p = project(fixture.organizationId);
      await store().projects.create(p);
      const d = device(p.id, { labels: { v: '1' } });
      await store().devices.create(d);
      const labels = async () => (await query({ projectIds: [p.id] })).map((r) => r.labelsJson);
      assert.deepEqual(await labels(), ['{"v":"1"}']);
      await store().devices.updateLabels(d.id, { v: '2' }, T0 + 1);
      assert.deepEqual(await labels(), ['{"v":"2"}']);
      const extra = device(p.id, { labels: { v: 'new' } });
      await assert.rejects(
        store().transaction(async (tx) => {
          await tx.devices.create(extra);
          await tx.devices.updateLabels(d.id, { v: '3' }, T0 + 2);
          const inside = await tx.devices.queryListing({
            projectIds: [p.id],
            deviceIds: [],
            deviceTypes: [],
            productNumbers: [],
            labelFilters: [],
            query: null,
            sort: { kind: 'id' },
            descending: false,
            after: null,
            limit: 10,
            maxBytes: Number.MAX_SAFE_INTEGER,
          });
          assert.deepEqual(
            inside.map((r) => r.labelsJson),
            ['{"v":"3"}', '{"v":"new"}'],
          );
          throw new Error('undo');
        }),
        /undo/,
      );
      assert.deepEqual(await labels(), ['{"v":"2"}']);
    });
  });
}
