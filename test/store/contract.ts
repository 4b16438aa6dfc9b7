// The Store contract: behaviour every backend must show. Written against the Store interface only, so a
// second backend (PostgreSQL) runs it unchanged: `storeContract('postgres', () => createPostgresStore(url))`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createIdGenerator } from '../../src/runtime/ids.ts';
import { SeededRandom } from '../../src/runtime/random.ts';
import type { DeviceRecord, EventRecord, ProjectRecord } from '../../src/store/records.ts';
import type { Repos, Store } from '../../src/store/store.ts';

const loc = { latitude: null, longitude: null, timeLocation: '' };
let seq = 0;
/** Distinct, ordered 20-char ids (base32hex alphabet). */
const id = (prefix: string) => `${prefix}${String(++seq).padStart(20 - prefix.length, '0')}`;

export function storeContract(name: string, open: () => Promise<Store> | Store): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const org = id('o');
    before(async () => {
      store = await open();
      await store.organizations.create({ id: org, displayName: 'Org', createTime: 1 });
    });
    after(() => store.close());

    const project = (over: Partial<ProjectRecord> = {}): ProjectRecord => ({
      id: id('p'), organizationId: org, displayName: 'P', location: loc, labels: {}, createTime: 1, updateTime: 1, ...over,
    });
    const device = (projectId: string, over: Partial<DeviceRecord> = {}): DeviceRecord => ({
      id: id('d'), projectId, type: 'temperature', productNumber: '102058', labels: { a: '1' }, reported: {}, latestEvents: {},
      emulated: true, createTime: 1, updateTime: 1, ...over,
    });

    it('answers ping', async () => {
      await store.ping();
    });

    it('round-trips organizations and projects with JSON columns', async () => {
      const p = project({ displayName: 'Röom ☃', location: { latitude: 1.5, longitude: -2, timeLocation: 'Europe/Oslo' }, labels: { k: 'v' } });
      await store.projects.create(p);
      assert.deepEqual(await store.projects.get(p.id), p);
      assert.equal(await store.projects.get('missing'), null);
      const withCounts = await store.projects.getWithCounts(p.id);
      assert.equal(withCounts?.organizationDisplayName, 'Org');
      assert.equal(withCounts?.sensorCount, 0);
    });

    it('lists projects by membership or organization, keyset-paged and filtered', async () => {
      const org2 = id('o');
      await store.organizations.create({ id: org2, displayName: 'Other', createTime: 1 });
      const a = project({ displayName: 'Alpha' });
      const b = project({ displayName: 'beta' });
      const c = project({ organizationId: org2, displayName: 'Gamma' });
      for (const p of [a, b, c]) await store.projects.create(p);
      const viaOrg = await store.projects.list({ projectIds: [], organizationIds: [org2] }, { limit: 10 });
      assert.deepEqual(viaOrg.map((p) => p.id), [c.id]);
      const viaMembership = await store.projects.list({ projectIds: [a.id, c.id], organizationIds: [] }, { limit: 10 });
      assert.deepEqual(viaMembership.map((p) => p.id), [a.id, c.id]);
      const paged = await store.projects.list({ projectIds: [a.id, b.id, c.id], organizationIds: [] }, { after: a.id, limit: 1 });
      assert.deepEqual(paged.map((p) => p.id), [b.id]);
      const queried = await store.projects.list({ projectIds: [a.id, b.id, c.id], organizationIds: [], query: 'BET' }, { limit: 10 });
      assert.deepEqual(queried.map((p) => p.id), [b.id]);
    });

    it('counts sensors and cloud connectors per project', async () => {
      const p = project();
      await store.projects.create(p);
      await store.devices.create(device(p.id));
      await store.devices.create(device(p.id, { type: 'ccon' }));
      const counted = await store.projects.getWithCounts(p.id);
      assert.equal(counted?.sensorCount, 1);
      assert.equal(counted?.cloudConnectorCount, 1);
      assert.deepEqual(await store.projects.countContents(p.id), { devices: 2, dataConnectors: 0 });
    });

    it('rolls back every write of a failed transaction', async () => {
      const p = project();
      await assert.rejects(store.transaction(async (tx) => {
        await tx.projects.create(p);
        throw new Error('boom');
      }), /boom/);
      assert.equal(await store.projects.get(p.id), null);
    });

    it('never serves a read of a rolled-back write, nor a stale read after an update', async () => {
      const p = project({ displayName: 'before' });
      await assert.rejects(store.transaction(async (tx) => {
        await tx.projects.create(p);
        assert.equal((await tx.projects.get(p.id))?.displayName, 'before'); // read inside: may be cached
        throw new Error('undo');
      }), /undo/);
      assert.equal(await store.projects.get(p.id), null);
      await store.projects.create(p);
      assert.equal((await store.projects.get(p.id))?.displayName, 'before');
      await store.projects.update({ ...p, displayName: 'after', updateTime: 2 });
      assert.equal((await store.projects.get(p.id))?.displayName, 'after');
      await store.projects.delete(p.id);
      assert.equal(await store.projects.get(p.id), null);
    });

    it('keeps concurrent transactions independent: one failing undoes only its own writes', async () => {
      const a = project({ displayName: 'a' });
      const b = project({ displayName: 'b' });
      const c = project({ displayName: 'c' });
      const results = await Promise.allSettled([
        store.transaction(async (tx) => { await tx.projects.create(a); return 'a'; }),
        store.transaction(async (tx) => { await tx.projects.create(b); throw new Error('b fails'); }),
        store.transaction(async (tx) => { await tx.projects.create(c); return (await tx.projects.get(c.id))?.displayName; }),
      ]);
      assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
      assert.equal((results[2] as PromiseFulfilledResult<string>).value, 'c');
      assert.equal((await store.projects.get(a.id))?.displayName, 'a');
      assert.equal(await store.projects.get(b.id), null);
      assert.equal((await store.projects.get(c.id))?.displayName, 'c');
    });

    it('keeps re-runnable transactions all-or-nothing beside others, calling them again only after undoing a call', async () => {
      const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((n) => project({ displayName: n }));
      const calls = { a: 0, b: 0, c: 0, d: 0, e: 0 };
      const rerunnable = { rerunnable: true };
      const results = await Promise.allSettled([
        store.transaction(async (tx) => { calls.a++; await tx.projects.create(a!); return 'a'; }, rerunnable),
        store.transaction(async (tx) => { calls.b++; await tx.projects.create(b!); return 'b'; }), // not re-runnable
        store.transaction(async (tx) => { calls.c++; assert.equal(await tx.projects.get(c!.id), null); throw new Error('c fails before writing'); }, rerunnable),
        store.transaction(async (tx) => { calls.d++; await tx.projects.create(d!); throw new Error('d fails after writing'); }, rerunnable),
        store.transaction(async (tx) => { calls.e++; await tx.projects.create(e!); return 'e'; }, rerunnable),
      ]);
      assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
      assert.match(String((results[3] as PromiseRejectedResult).reason), /d fails after writing/);
      for (const p of [a, b, e]) assert.equal((await store.projects.get(p!.id))?.displayName, p!.displayName);
      for (const p of [c, d]) assert.equal(await store.projects.get(p!.id), null);
      // Each failure is answered once; a transaction that is not re-runnable is never called twice.
      assert.equal(calls.b, 1);
      assert.equal(calls.c, 1);
      assert.equal(calls.d, 1);
      // A backend may have undone and repeated the calls of a and e, but each committed exactly once.
      assert.ok(calls.a >= 1 && calls.a <= 2 && calls.e >= 1 && calls.e <= 2);
      assert.equal((await store.projects.list({ projectIds: [a!.id, e!.id], organizationIds: [] }, { limit: 10 })).length, 2);
    });

    it('commits a transaction and isolates concurrent callers until it ends', async () => {
      const p = project();
      let release!: () => void;
      const gate = new Promise<void>((r) => { release = r; });
      let opened!: () => void;
      const open = new Promise<void>((r) => { opened = r; });
      const tx = store.transaction(async (t) => {
        await t.projects.create(p);
        opened();
        await gate;
        return 'done';
      });
      await open;
      // Issued while the transaction is open: it waits for the commit instead of running inside it.
      const read = store.projects.get(p.id);
      release();
      assert.equal(await tx, 'done');
      assert.deepEqual(await read, p);
    });

    it('round-trips users, service accounts, keys and cascades account deletion', async () => {
      const p = project();
      await store.projects.create(p);
      await store.users.create({ id: id('u'), email: 'a@b.c', displayName: 'A', passwordHash: null, active: false, createTime: 1, updateTime: 1 });
      assert.equal((await store.users.getByEmail('A@B.C'))?.active, false);
      const sa = { id: id('s'), projectId: p.id, email: 'sa@x', displayName: 'sa', enableBasicAuth: true, createTime: 1, updateTime: 1 };
      await store.serviceAccounts.create(sa);
      await store.keys.create({ id: id('k'), serviceAccountId: sa.id, secretEnc: 'sealed', createTime: 1 });
      await store.memberships.create({ scopeType: 'project', scopeId: p.id, memberId: sa.id, accountType: 'SERVICE_ACCOUNT', roles: ['roles/project.user'], status: 'ACCEPTED', createTime: 1 });
      assert.equal(await store.keys.countByServiceAccount(sa.id), 1);
      await store.serviceAccounts.delete(sa.id);
      assert.equal(await store.keys.countByServiceAccount(sa.id), 0);
      assert.deepEqual(await store.memberships.listByMember(sa.id), []);
    });

    it('pages memberships in creation order and accepts pending ones', async () => {
      const p = project();
      await store.projects.create(p);
      const members = [id('m'), id('m'), id('m')];
      for (const [i, m] of members.entries()) {
        await store.memberships.create({ scopeType: 'project', scopeId: p.id, memberId: m, accountType: 'USER', roles: ['roles/project.user'], status: 'PENDING', createTime: 10 - i });
      }
      const first = await store.memberships.listByScope('project', p.id, { limit: 2 });
      assert.deepEqual(first.map((m) => m.memberId), [members[2], members[1]]);
      const rest = await store.memberships.listByScope('project', p.id, { after: [first[1]!.createTime, first[1]!.memberId], limit: 2 });
      assert.deepEqual(rest.map((m) => m.memberId), [members[0]]);
      await store.memberships.acceptAll(members[0]!);
      assert.equal((await store.memberships.get('project', p.id, members[0]!))?.status, 'ACCEPTED');
    });

    it('stores events and reads device history newest first with bounds, types and a cursor', async () => {
      const p = project();
      await store.projects.create(p);
      const d = device(p.id);
      await store.devices.create(d);
      const ev = (n: number, type: string) => ({ id: id('e'), projectId: p.id, deviceId: d.id, eventType: type, timestamp: n, createTime: n, body: `{"n":${n}}` });
      for (const e of [ev(100, 'touch'), ev(200, 'temperature'), ev(300, 'touch'), ev(300, 'touch')]) await store.events.insert(e);
      const all = await store.events.listByDevice({ deviceId: d.id, eventTypes: [], startTime: 0, endTime: 1000, limit: 10 });
      assert.deepEqual(all.map((e) => e.timestamp), [300, 300, 200, 100]);
      assert.ok(all[0]!.id > all[1]!.id);
      const touches = await store.events.listByDevice({ deviceId: d.id, eventTypes: ['touch'], startTime: 100, endTime: 299, limit: 10 });
      assert.deepEqual(touches.map((e) => e.timestamp), [100]);
      const page2 = await store.events.listByDevice({ deviceId: d.id, eventTypes: [], startTime: 0, endTime: 1000, before: [all[1]!.timestamp, all[1]!.id], limit: 10 });
      assert.deepEqual(page2.map((e) => e.timestamp), [200, 100]);
      assert.equal(await store.events.deleteStoredBefore(250, 10), 0, 'ids with a later seconds prefix are not candidates');
    });

    it('finds the events the devices of a project point at as their latest of each type', async () => {
      const p = project();
      const other = project();
      await store.projects.create(p);
      await store.projects.create(other);
      const [a, b, c] = [device(p.id), device(p.id), device(other.id)];
      for (const d of [a, b, c]) await store.devices.create(d);
      const ev = (d: DeviceRecord, n: number, type: string) => ({ id: id('e'), projectId: d.projectId, deviceId: d.id, eventType: type, timestamp: n, createTime: n, body: `{"n":${n}}` });
      const [aTouch, aTemp, aLabels, bTouch, cTouch] = [ev(a, 300, 'touch'), ev(a, 200, 'temperature'), ev(a, 250, 'labelsChanged'), ev(b, 50, 'touch'), ev(c, 999, 'touch')];
      for (const e of [ev(a, 100, 'touch'), aTouch, aTemp, aLabels, bTouch, cTouch]) await store.events.insert(e);
      const point = (d: DeviceRecord, ...events: EventRecord[]) =>
        store.devices.updateReported(d.id, {}, Object.fromEntries(events.map((e) => [e.eventType, [e.timestamp, e.id]])), 1);
      await point(a, aTouch, aTemp, aLabels);
      await point(b, bTouch);
      await point(c, cTouch);
      const pairs = (events: EventRecord[]) => events.map((e) => [e.deviceId, e.id]);
      // Ordered by device, then by the event's time; only the types asked for.
      const byDevice = [[a.id, [aTemp.id, aLabels.id, aTouch.id]], [b.id, [bTouch.id]]] as const;
      const expected = [...byDevice].sort((x, y) => (x[0] < y[0] ? -1 : 1)).flatMap(([d, es]) => es.map((e) => [d, e]));
      assert.deepEqual(pairs(await store.events.latestPerType(p.id, ['touch', 'temperature', 'labelsChanged', 'co2'])), expected);
      assert.deepEqual(pairs(await store.events.latestPerType(p.id, ['temperature'])), [[a.id, aTemp.id]]);
      assert.deepEqual(await store.events.latestPerType(p.id, ['co2']), []);
      assert.deepEqual(pairs(await store.events.latestPerType(other.id, ['touch'])), [[c.id, cTouch.id]]);
    });

    it('when the latest event of a type is gone, finds the latest one stored after it, which is older', async () => {
      const p = project();
      await store.projects.create(p);
      const d = device(p.id);
      await store.devices.create(d);
      const clock = new FakeClock(Date.UTC(2026, 0, 1));
      const ids = createIdGenerator(clock, new SeededRandom('latest'));
      const store1 = async (timestamp: number, type = 'touch') => {
        clock.advance(1000);
        const e = { id: ids.next(), projectId: p.id, deviceId: d.id, eventType: type, timestamp, createTime: clock.now() * 1000, body: '{}' };
        await store.events.insert(e);
        return e;
      };
      await store1(100);
      const latest = await store1(500);
      const backdated = [await store1(300), await store1(400), await store1(450, 'temperature'), await store1(200)];
      await store.devices.updateReported(d.id, {}, { touch: [500, latest.id] }, 1);
      assert.deepEqual((await store.events.latestPerType(p.id, ['touch'])).map((e) => e.id), [latest.id]);
      // Retention deletes what was stored first: the two events before the backdated ones.
      assert.equal(await store.events.deleteStoredBefore(backdated[0]!.createTime, 10), 2);
      assert.deepEqual((await store.events.latestPerType(p.id, ['touch'])).map((e) => e.id), [backdated[1]!.id]);
      // A pointer without an id (kept by migration 080 when retention had already deleted the event) works alike.
      await store.devices.updateReported(d.id, {}, { touch: [500, ''] }, 1);
      assert.deepEqual((await store.events.latestPerType(p.id, ['touch'])).map((e) => e.id), [backdated[1]!.id]);
      await store.events.deleteStoredBefore(clock.now() * 1000 + 1, 10);
      assert.deepEqual(await store.events.latestPerType(p.id, ['touch']), [], 'none stored: none sent');
    });

    it('deletes events stored before a time, found through their time-ordered ids', async () => {
      const p = project();
      await store.projects.create(p);
      const d = device(p.id);
      await store.devices.create(d);
      const clock = new FakeClock(Date.UTC(2026, 0, 1));
      const ids = createIdGenerator(clock, new SeededRandom('retention'));
      const stored: number[] = [];
      for (const ms of [0, 400, 999, 1000, 1500, 2000]) {
        clock.set(Date.UTC(2026, 0, 1) + ms);
        const t = clock.now() * 1000;
        stored.push(t);
        await store.events.insert({ id: ids.next(), projectId: p.id, deviceId: d.id, eventType: 'touch', timestamp: t, createTime: t, body: '{}' });
      }
      // Cut-off inside a second: the events of that second stored before it go, the later ones stay.
      assert.equal(await store.events.deleteStoredBefore(stored[1]! + 1, 10), 2);
      assert.equal(await store.events.deleteStoredBefore(stored[4]!, 1), 1, 'the limit holds');
      assert.equal(await store.events.deleteStoredBefore(stored[4]!, 10), 1);
      const left = await store.events.listByDevice({ deviceId: d.id, eventTypes: [], startTime: 0, endTime: Number.MAX_SAFE_INTEGER, limit: 10 });
      assert.deepEqual(left.map((e) => e.createTime), [stored[5], stored[4]]);
    });

    it('reads a device as last written, and not as written by a rolled-back transaction', async () => {
      const p = project();
      await store.projects.create(p);
      const d = device(p.id);
      assert.equal(await store.devices.get(d.id), null);
      await store.devices.create(d);
      assert.equal((await store.devices.get(d.id))?.id, d.id, 'created after a read that found nothing');
      await store.devices.updateReported(d.id, { temperature: { value: 1 } }, { temperature: [10, 'e1'] }, 11);
      let got = await store.devices.get(d.id);
      assert.deepEqual([got?.reported, got?.latestEvents, got?.updateTime], [{ temperature: { value: 1 } }, { temperature: [10, 'e1'] }, 11]);
      await store.devices.updateLabels(d.id, { b: '2' }, 12);
      assert.deepEqual((await store.devices.get(d.id))?.labels, { b: '2' });
      await assert.rejects(store.transaction(async (tx) => {
        await tx.devices.updateReported(d.id, { temperature: { value: 2 } }, { temperature: [20, 'e2'] }, 21);
        assert.deepEqual((await tx.devices.get(d.id))?.reported, { temperature: { value: 2 } }, 'the transaction reads its own write');
        throw new Error('roll back');
      }), /roll back/);
      got = await store.devices.get(d.id);
      assert.deepEqual([got?.reported, got?.updateTime], [{ temperature: { value: 1 } }, 12]);
    });

    it('drops queued deliveries older than the cutoff, oldest first, except those in flight', async () => {
      const row = (enqueueTime: number) => ({ connectorId: id('c'), eventId: id('e'), body: Buffer.from('{}'), enqueueTime, dueTime: enqueueTime });
      const ids = await store.deliveries.insert([row(100), row(101), row(102), row(103), row(200)]);
      const before = await store.deliveries.count();
      // The second row is in flight (leased until 500): it stays until its outcome is recorded.
      assert.equal((await store.deliveries.claim((await store.deliveries.get(ids[1]!))!.connectorId, 150, 0, 500, 10)).length, 1);
      assert.equal(await store.deliveries.deleteExpired(150, 300, 2), 2, 'at most the limit');
      assert.equal(await store.deliveries.get(ids[0]!), null, 'oldest first');
      assert.ok(await store.deliveries.get(ids[1]!), 'in flight: kept');
      assert.equal(await store.deliveries.deleteExpired(150, 300, 10), 1);
      assert.equal(await store.deliveries.deleteExpired(150, 300, 10), 0);
      assert.ok(await store.deliveries.get(ids[4]!), 'not yet expired: kept');
      assert.equal(await store.deliveries.count(), before - 3);
      assert.equal(await store.deliveries.deleteExpired(150, 600, 10), 1, 'once its lease is over');
      for (const i of ids) await store.deliveries.delete(i);
    });

    it('releases the leases of given rows only, making them due now', async () => {
      const connectorId = id('c');
      const row = (leaseUntil?: number) => ({ connectorId, eventId: id('e'), body: Buffer.from('{}'), enqueueTime: 100, dueTime: leaseUntil ?? 100, leaseUntil });
      const ids = await store.deliveries.insert([row(900), row(900), row(), row(900)]);
      assert.equal(await store.deliveries.releaseLeases(150, [ids[0]!, ids[2]!, ids[3]!, 999_999]), 2, 'leased rows only; a row that is gone is skipped');
      const rows = await Promise.all(ids.map((i) => store.deliveries.get(i)));
      assert.deepEqual(rows.map((r) => [r?.leaseUntil, r?.dueTime]), [[null, 150], [900, 900], [null, 100], [null, 150]]);
      assert.deepEqual((await store.deliveries.claim(connectorId, 150, 0, 500, 10)).map((r) => r.id), [ids[0], ids[2], ids[3]], 'the due ones');
      for (const i of ids) await store.deliveries.delete(i);
    });

    it('adds attempts to a connector\'s metric bucket, merging the latency histograms', async () => {
      const connectorId = id('c');
      await store.connectorMetrics.add(connectorId, 60_000_000, 2, 1, new Map([['612', 1], ['z', 1]]));
      await store.connectorMetrics.add(connectorId, 60_000_000, 1, 0, new Map([['612', 2], ['40', 1]]));
      await store.connectorMetrics.add(connectorId, 120_000_000, 0, 3, new Map());
      const buckets = await store.connectorMetrics.listSince(connectorId, 0);
      assert.deepEqual(buckets.map((b) => [b.bucketStart, b.successCount, b.errorCount]), [[60_000_000, 3, 1], [120_000_000, 0, 3]]);
      assert.deepEqual({ ...buckets[0]!.latencyHist }, { 40: 1, 612: 3, z: 1 });
      assert.deepEqual({ ...buckets[1]!.latencyHist }, {});
      await store.connectorMetrics.deleteByConnector(connectorId);
    });

    it('keeps nothing of a metrics add whose transaction rolled back, or of a deleted connector\'s buckets', async () => {
      const connectorId = id('c');
      const add = (tx: Repos, n: number, hist: Array<[string, number]>) => tx.connectorMetrics.add(connectorId, 60_000_000, n, 0, new Map(hist));
      await store.transaction((tx) => add(tx, 1, [['612', 1]]));
      await assert.rejects(store.transaction(async (tx) => {
        await add(tx, 5, [['612', 5], ['700', 1]]);
        throw new Error('undo');
      }), /undo/);
      await assert.rejects(store.transaction(async (tx) => {
        await add(tx, 5, [['612', 5]]);
        throw new Error('undo');
      }, { rerunnable: true }), /undo/);
      await store.transaction((tx) => add(tx, 1, [['612', 1]]));
      let [bucket] = await store.connectorMetrics.listSince(connectorId, 0);
      assert.deepEqual([bucket!.successCount, { ...bucket!.latencyHist }], [2, { 612: 2 }]);
      await store.connectorMetrics.deleteByConnector(connectorId);
      await store.transaction((tx) => add(tx, 1, [['40', 1]]));
      [bucket] = await store.connectorMetrics.listSince(connectorId, 0);
      assert.deepEqual([bucket!.successCount, { ...bucket!.latencyHist }], [1, { 40: 1 }]);
      await store.connectorMetrics.deleteByConnector(connectorId);
    });

    it('adds to the delivery counters, creating a series on its first non-zero increment', async () => {
      await store.connectorMetrics.addCounters({ 'c_total{outcome="a"}': 2, c_seconds_sum: 0.25, c_zero: 0 });
      await store.connectorMetrics.addCounters({ 'c_total{outcome="a"}': 3, c_seconds_sum: 0.5 });
      await store.connectorMetrics.addCounters({});
      const all = await store.connectorMetrics.counters();
      assert.deepEqual(Object.fromEntries(Object.entries(all).filter(([k]) => k.startsWith('c_'))), { 'c_total{outcome="a"}': 5, c_seconds_sum: 0.75 });
    });

    it('moves and deletes devices with their history', async () => {
      const p1 = project();
      const p2 = project();
      await store.projects.create(p1);
      await store.projects.create(p2);
      const d = device(p1.id);
      await store.devices.create(d);
      const e = { id: id('e'), projectId: p1.id, deviceId: d.id, eventType: 'touch', timestamp: 1, createTime: 1, body: '{}' };
      await store.events.insert(e);
      await store.devices.updateLabels(d.id, { b: '2' }, 5);
      await store.devices.updateReported(d.id, { touch: { updateTime: 'x' } }, { touch: [1, e.id] }, 6);
      await store.devices.move(d.id, p2.id, 7);
      const moved = await store.devices.get(d.id);
      assert.equal(moved?.projectId, p2.id);
      assert.deepEqual(moved?.labels, { b: '2' });
      assert.deepEqual(moved?.latestEvents, { touch: [1, e.id] });
      assert.deepEqual((await store.events.latestPerType(p2.id, ['touch'])).map((x) => [x.id, x.projectId]), [[e.id, p2.id]], 'its latest events go with it');
      assert.deepEqual(await store.events.latestPerType(p1.id, ['touch']), []);
      await store.devices.delete(d.id);
      assert.equal(await store.devices.get(d.id), null);
      assert.deepEqual(await store.events.listByDevice({ deviceId: d.id, eventTypes: [], startTime: 0, endTime: 10, limit: 10 }), []);
    });
  });
}
