// Store contract: the delivery log (extensions §X1; store/contract/delivery-log.ts). A delivery is its queue row's id
// from enqueue to end: queued without an outcome it reads PENDING from the queue; its first outcome logs it, later
// ones update it and append their attempts; a removal without an outcome (the 12-hour drop, a dropped queue) logs it
// when asked. A TEST's id comes from the queue's sequence. The list is newest first, filtered on the state as read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFERRED_DUE, type NewDelivery } from '../../../src/store/contract/connector-repos.ts';
import type {
  DeliveryLogFilter,
  DeliveryLogRecord,
  DeliveryState,
  LoggedAttempt,
  LogOutcome,
} from '../../../src/store/contract/delivery-log.ts';
import type { Store } from '../../../src/store/contract/store.ts';
import {
  device,
  event,
  id,
  MINUTE,
  row,
  SECOND,
  seedConnector,
  seedProject,
  sorted,
  T0,
  useStore,
  withFreshStore,
  type OpenStore,
} from './fixtures.ts';

/** A push body as the service builds it (delivery/push-body.ts). */
const pushBody = (eventId: string, deviceId: string, eventType = 'touch'): Buffer =>
  Buffer.from(
    JSON.stringify({
      event: {
        eventId,
        targetName: `projects/p1/devices/${deviceId}`,
        eventType,
        data: { [eventType]: { updateTime: '2025-06-01T12:00:00Z' } },
        timestamp: '2025-06-01T12:00:00Z',
      },
      labels: { room: 'a "quoted" ünïcode label' },
      metadata: { deviceId, projectId: 'p1', deviceType: 'touch', productNumber: '102058' },
    }),
  );

/** A queue row of a published event of `deviceId`, enqueued (and due) at `at`. */
const eventRow = (
  connectorId: string,
  at: number,
  deviceId = 'dev1',
  eventType = 'touch',
  over: Partial<NewDelivery> = {},
) => {
  const eventId = id('e');
  return row(connectorId, at, { eventId, body: pushBody(eventId, deviceId, eventType), ...over });
};

const attempt = (time: number, over: Partial<LoggedAttempt> = {}): LoggedAttempt => ({
  time,
  durationMicros: 123_456,
  outcome: 'HTTP_ERROR',
  httpStatus: 503,
  responseBody: '{"ok":false,"why":"busy \\ "}',
  responseBodyTruncated: false,
  error: 'HTTP 503 Service Unavailable',
  ...over,
});

const success = (time: number): LoggedAttempt =>
  attempt(time, { outcome: 'SUCCESS', httpStatus: 200, responseBody: '{"ok":true}', error: '' });

/** The outcome of an attempt on a queued row (as the engine logs it: delivery/delivery-log.ts logOutcomeOf). */
const outcome = (
  r: NewDelivery,
  state: LogOutcome['state'],
  a: LoggedAttempt,
  over: Partial<LogOutcome> = {},
): LogOutcome => {
  const body = JSON.parse(r.body.toString()) as { event: { eventType: string }; metadata: { deviceId: string } };
  return {
    id: r.queued!.id,
    connectorId: r.connectorId,
    eventId: r.eventId,
    eventType: body.event.eventType,
    deviceId: body.metadata.deviceId,
    trigger: r.trigger ?? 'EVENT',
    createTime: r.enqueueTime,
    state,
    attempt: a,
    nextAttemptTime: state === 'RETRYING' ? a.time + MINUTE : null,
    updateTime: a.time + a.durationMicros,
    ...over,
  };
};

const ids = (records: DeliveryLogRecord[]) => records.map((r) => r.id);
const states = (records: DeliveryLogRecord[]) => records.map((r) => r.state);

/** Every page of the list, `size` at a time, following beforeId. */
async function allPages(store: Store, filter: DeliveryLogFilter, size: number, now: number) {
  const pages: number[][] = [];
  let beforeId: number | undefined;
  for (;;) {
    const page = await store.deliveryLog.list({ ...filter, beforeId }, size, now);
    if (page.length === 0) return pages;
    pages.push(ids(page));
    beforeId = page[page.length - 1]!.id;
  }
}

export function deliveryLogContract(open: OpenStore): void {
  describe('delivery log', () => {
    const store = useStore(open);

    /** A connector with queue rows enqueued a second apart from T0 (`over` per row), queued. */
    const seed = async (n: number, over: (i: number) => Partial<NewDelivery> = () => ({})) => {
      const c = await seedConnector(store());
      const rows = Array.from({ length: n }, (_, i) =>
        eventRow(c.id, T0 + i * SECOND, `dev${i % 2}`, i % 3 === 0 ? 'temperature' : 'touch', over(i)),
      );
      await store().deliveries.insert(rows);
      return { c, rows };
    };

    it('record: the first outcome logs the delivery, later ones update it and append their attempts, oldest first', async () => {
      const { c, rows } = await seed(1);
      const r = rows[0]!;
      const first = attempt(T0 + SECOND);
      await store().deliveryLog.record([outcome(r, 'RETRYING', first)]);
      const logged = await store().deliveryLog.get(c.id, r.queued!.id, T0);
      assert.deepEqual(logged, {
        id: r.queued!.id,
        connectorId: c.id,
        eventId: r.eventId,
        eventType: 'temperature',
        deviceId: 'dev0',
        trigger: 'EVENT',
        state: 'RETRYING',
        attemptCount: 1,
        createTime: T0,
        updateTime: first.time + first.durationMicros,
        nextAttemptTime: first.time + MINUTE,
        attempts: [first],
      });
      // Every field of an attempt kept, whatever it holds: an answer cut short, unicode and JSON in the snippet, no
      // HTTP answer at all.
      const second = attempt(T0 + 2 * MINUTE, {
        outcome: 'TIMEOUT',
        httpStatus: 0,
        responseBody: 'partial ✓ <html>\n"',
        responseBodyTruncated: true,
        error: 'no response headers within 10 s',
      });
      const third = success(T0 + 5 * MINUTE);
      await store().transaction(async (tx) => {
        await tx.deliveryLog.record([outcome(r, 'RETRYING', second)]);
        await tx.deliveryLog.record([]);
        await tx.deliveryLog.record([outcome(r, 'DELIVERED', third)]);
      });
      const done = await store().deliveryLog.get(c.id, r.queued!.id, T0);
      assert.equal(done?.state, 'DELIVERED');
      assert.equal(done?.attemptCount, 3);
      assert.equal(done?.nextAttemptTime, null);
      assert.equal(done?.updateTime, third.time + third.durationMicros);
      assert.equal(done?.createTime, T0, 'created when queued');
      assert.deepEqual(done?.attempts, [first, second, third]);
    });

    it('record takes several deliveries, and several outcomes of one delivery, in one call, in order', async () => {
      const { c, rows } = await seed(3);
      const [a, b, d] = rows;
      await store().deliveryLog.record([
        outcome(d!, 'RETRYING', attempt(T0 + 10)),
        outcome(a!, 'DELIVERED', success(T0 + 11)),
        outcome(d!, 'RETRYING', attempt(T0 + 12, { httpStatus: 500 })),
        outcome(b!, 'DISCARDED', attempt(T0 + 13)),
        outcome(d!, 'EXPIRED', attempt(T0 + 14, { httpStatus: 502 })),
      ]);
      const got = await store().deliveryLog.get(c.id, d!.queued!.id, T0);
      assert.equal(got?.state, 'EXPIRED');
      assert.equal(got?.attemptCount, 3);
      assert.deepEqual(
        got?.attempts?.map((x) => x.httpStatus),
        [503, 500, 502],
      );
      assert.equal((await store().deliveryLog.get(c.id, a!.queued!.id, T0))?.state, 'DELIVERED');
      assert.equal((await store().deliveryLog.get(c.id, b!.queued!.id, T0))?.state, 'DISCARDED');
    });

    it('record inside a batch of outcomes (rerunnable, background) is written with the batch, and read back', async () => {
      const { c, rows } = await seed(3);
      const series = `logged_total{c="${c.id}"}`;
      await store().transaction(
        async (tx) => {
          // As the outcome recorder writes a batch (delivery/outcomes.ts): connectors read, acknowledged rows deleted
          // and counted, one row rescheduled, metrics, and each attempt logged.
          await tx.dataConnectors.getMany([c.id]);
          await tx.deliveries.deleteCounted([rows[0]!.queued!.id, rows[1]!.queued!.id], series);
          await tx.connectorMetrics.add(c.id, 60_000_000, 2, 1, new Map([['100', 2]]));
          await tx.deliveryLog.record([
            outcome(rows[0]!, 'DELIVERED', success(T0 + 1)),
            outcome(rows[1]!, 'DELIVERED', success(T0 + 2)),
          ]);
          await tx.connectorMetrics.addCounters({ [series]: 0.5 });
        },
        { rerunnable: true, background: true },
      );
      await store().transaction(
        async (tx) => {
          await tx.deliveries.reschedule(rows[2]!.queued!.id, 1, T0 + MINUTE, null);
          await tx.deliveryLog.record([outcome(rows[2]!, 'RETRYING', attempt(T0 + 3))]);
        },
        { rerunnable: true, background: true },
      );
      const page = await store().deliveryLog.list({ connectorIds: [c.id] }, 10, T0);
      assert.deepEqual(states(page), ['RETRYING', 'DELIVERED', 'DELIVERED']);
      assert.deepEqual(
        page.map((r) => r.attemptCount),
        [1, 1, 1],
      );
      assert.equal((await store().connectorMetrics.counters())[series], 2.5);
      assert.equal(await store().deliveries.get(rows[0]!.queued!.id), null);
    });

    it('a batch that fails after recording leaves nothing logged', async () => {
      const { c, rows } = await seed(1);
      await assert.rejects(
        store().transaction(
          async (tx) => {
            await tx.deliveryLog.record([outcome(rows[0]!, 'RETRYING', attempt(T0))]);
            await tx.deliveries.reschedule(rows[0]!.queued!.id, 1, T0 + MINUTE, null);
            throw new Error('undo');
          },
          { rerunnable: true, background: true },
        ),
        /undo/,
      );
      const got = await store().deliveryLog.get(c.id, rows[0]!.queued!.id, T0);
      assert.equal(got?.state, 'PENDING');
      assert.deepEqual(got?.attempts, []);
    });

    it('list: newest first, logged deliveries and the queued rows that have no log row yet (PENDING)', async () => {
      const { c, rows } = await seed(5);
      const other = await seed(2);
      const [r0, r1, r2, r3, r4] = rows;
      // r0 delivered (its row deleted), r1 failing (rescheduled), r2 and r4 waiting, r3 in flight for the first time.
      await store().deliveries.delete(r0!.queued!.id);
      await store().deliveryLog.record([outcome(r0!, 'DELIVERED', success(T0 + MINUTE))]);
      await store().deliveries.reschedule(r1!.queued!.id, 1, T0 + 3 * MINUTE, null);
      await store().deliveryLog.record([
        outcome(r1!, 'RETRYING', attempt(T0 + MINUTE), { nextAttemptTime: T0 + 3 * MINUTE }),
      ]);
      const now = T0 + 2 * MINUTE;
      // Claim the earliest due: r2 (due T0 + 2 s), and r3 (T0 + 3 s); then give r2 back.
      const claimed = await store().deliveries.claim(c.id, now, 0, now + MINUTE, 2);
      assert.deepEqual(
        claimed.map((x) => x.id),
        [r2!.queued!.id, r3!.queued!.id],
      );
      await store().deliveries.releaseLeases(T0 + 2 * SECOND, [r2!.queued!.id]);
      const page = await store().deliveryLog.list({ connectorIds: [c.id] }, 10, now);
      assert.deepEqual(
        ids(page),
        [...rows].reverse().map((r) => r.queued!.id),
      );
      assert.deepEqual(page, [
        {
          id: r4!.queued!.id,
          connectorId: c.id,
          eventId: r4!.eventId,
          eventType: 'touch',
          deviceId: 'dev0',
          trigger: 'EVENT',
          state: 'PENDING',
          attemptCount: 0,
          createTime: T0 + 4 * SECOND,
          updateTime: T0 + 4 * SECOND,
          nextAttemptTime: T0 + 4 * SECOND,
        },
        {
          id: r3!.queued!.id,
          connectorId: c.id,
          eventId: r3!.eventId,
          eventType: 'temperature',
          deviceId: 'dev1',
          trigger: 'EVENT',
          state: 'PENDING',
          attemptCount: 0,
          createTime: T0 + 3 * SECOND,
          updateTime: T0 + 3 * SECOND,
          nextAttemptTime: null, // in flight
        },
        {
          id: r2!.queued!.id,
          connectorId: c.id,
          eventId: r2!.eventId,
          eventType: 'touch',
          deviceId: 'dev0',
          trigger: 'EVENT',
          state: 'PENDING',
          attemptCount: 0,
          createTime: T0 + 2 * SECOND,
          updateTime: T0 + 2 * SECOND,
          nextAttemptTime: T0 + 2 * SECOND,
        },
        {
          id: r1!.queued!.id,
          connectorId: c.id,
          eventId: r1!.eventId,
          eventType: 'touch',
          deviceId: 'dev1',
          trigger: 'EVENT',
          state: 'RETRYING',
          attemptCount: 1,
          createTime: T0 + SECOND,
          updateTime: T0 + MINUTE + 123_456,
          nextAttemptTime: T0 + 3 * MINUTE,
        },
        {
          id: r0!.queued!.id,
          connectorId: c.id,
          eventId: r0!.eventId,
          eventType: 'temperature',
          deviceId: 'dev0',
          trigger: 'EVENT',
          state: 'DELIVERED',
          attemptCount: 1,
          createTime: T0,
          updateTime: T0 + MINUTE + 123_456,
          nextAttemptTime: null,
        },
      ]);
      assert.ok(
        page.every((r) => !('attempts' in r)),
        'list items have no attempts',
      );
      // Both connectors, newest first; neither alone shows the other's.
      const both = await store().deliveryLog.list({ connectorIds: [c.id, other.c.id] }, 10, now);
      assert.deepEqual(
        ids(both),
        [...rows, ...other.rows].map((r) => r.queued!.id).sort((a, b) => b - a),
      );
      // A row queued deferred (a :replay's, let in a piece at a time) has no next attempt time yet.
      const deferred = eventRow(other.c.id, T0 + 9 * SECOND, 'dev0', 'touch', {
        dueTime: DEFERRED_DUE,
        trigger: 'REPLAY',
      });
      await store().deliveries.insert([deferred]);
      const [listed] = await store().deliveryLog.list({ connectorIds: [other.c.id] }, 1, now);
      assert.deepEqual([listed?.id, listed?.state, listed?.nextAttemptTime], [deferred.queued!.id, 'PENDING', null]);
      assert.deepEqual(await store().deliveryLog.list({ connectorIds: [] }, 10, now), []);
      assert.deepEqual(await store().deliveryLog.list({ connectorIds: [c.id] }, 0, now), []);
      assert.deepEqual(ids(await store().deliveryLog.list({ connectorIds: [c.id] }, 2, now)), [
        r4!.queued!.id,
        r3!.queued!.id,
      ]);
    });

    it('a retry in flight reads PENDING with no next attempt time, in the list, its filters and get; RETRYING once its lease is over', async () => {
      const { c, rows } = await seed(1);
      const r = rows[0]!;
      const id = r.queued!.id;
      await store().deliveries.reschedule(id, 1, T0 + MINUTE, null);
      await store().deliveryLog.record([
        outcome(r, 'RETRYING', attempt(T0 + SECOND), { nextAttemptTime: T0 + MINUTE }),
      ]);
      const [claimed] = await store().deliveries.claim(c.id, T0 + MINUTE, 0, T0 + 2 * MINUTE, 1);
      assert.equal(claimed?.id, id);
      const during = T0 + MINUTE + SECOND;
      const read = async (now: number, filter: Partial<DeliveryLogFilter> = {}) =>
        (await store().deliveryLog.list({ connectorIds: [c.id], ...filter }, 10, now)).map((x) => [
          x.state,
          x.nextAttemptTime,
        ]);
      assert.deepEqual(await read(during), [['PENDING', null]]);
      assert.deepEqual(await read(during, { states: ['PENDING'] }), [['PENDING', null]]);
      assert.deepEqual(await read(during, { states: ['RETRYING'] }), []);
      const got = await store().deliveryLog.get(c.id, id, during);
      assert.deepEqual([got?.state, got?.nextAttemptTime, got?.attempts?.length], ['PENDING', null, 1]);
      // The lease over (the process that had it is gone): the row is due again, the delivery RETRYING as logged.
      const after = T0 + 2 * MINUTE;
      assert.deepEqual(await read(after), [['RETRYING', T0 + MINUTE]]);
      assert.deepEqual(await read(after, { states: ['PENDING'] }), []);
      assert.equal((await store().deliveryLog.get(c.id, id, after))?.state, 'RETRYING');
    });

    it('list filters: states (any of), trigger, eventId, deviceId, createTime half-open, each and combined', async () => {
      const { c, rows } = await seed(6, (i) => (i === 5 ? { trigger: 'RESEND' } : i === 4 ? { trigger: 'SYNC' } : {}));
      // 0 delivered, 1 retrying, 2 expired, 3..5 queued (4 SYNC, 5 RESEND), and a TEST.
      for (const r of rows.slice(0, 3)) await store().deliveries.delete(r.queued!.id);
      await store().deliveryLog.record([
        outcome(rows[0]!, 'DELIVERED', success(T0 + MINUTE)),
        outcome(rows[1]!, 'RETRYING', attempt(T0 + MINUTE)),
        outcome(rows[2]!, 'EXPIRED', attempt(T0 + MINUTE)),
      ]);
      const test = await store().deliveryLog.recordTest({
        connectorId: c.id,
        eventId: id('t'),
        eventType: 'touch',
        deviceId: 'emulated-test-device',
        trigger: 'TEST',
        createTime: T0 + 10 * SECOND,
        state: 'FAILED',
        attempt: attempt(T0 + 10 * SECOND, { outcome: 'CONNECTION_REFUSED', httpStatus: 0, responseBody: '' }),
        nextAttemptTime: null,
        updateTime: T0 + 11 * SECOND,
      });
      const q = rows.map((r) => r.queued!.id);
      const now = T0 + 2 * MINUTE;
      const list = async (filter: Partial<DeliveryLogFilter>) =>
        ids(await store().deliveryLog.list({ connectorIds: [c.id], ...filter }, 100, now));
      assert.deepEqual(await list({}), [test, q[5], q[4], q[3], q[2], q[1], q[0]]);
      assert.deepEqual(await list({ states: ['PENDING'] }), [q[5], q[4], q[3]]);
      assert.deepEqual(await list({ states: ['DELIVERED', 'EXPIRED'] }), [q[2], q[0]]);
      assert.deepEqual(await list({ states: ['FAILED'] }), [test]);
      assert.deepEqual(await list({ states: [] as DeliveryState[] }), []);
      assert.deepEqual(await list({ trigger: 'EVENT' }), [q[3], q[2], q[1], q[0]]);
      assert.deepEqual(await list({ trigger: 'RESEND' }), [q[5]]);
      assert.deepEqual(await list({ trigger: 'SYNC' }), [q[4]]);
      assert.deepEqual(await list({ trigger: 'TEST' }), [test]);
      assert.deepEqual(await list({ trigger: 'REPLAY' }), []);
      assert.deepEqual(await list({ eventId: rows[4]!.eventId }), [q[4]]);
      assert.deepEqual(await list({ eventId: rows[1]!.eventId }), [q[1]]);
      assert.deepEqual(await list({ eventId: 'nope' }), []);
      assert.deepEqual(await list({ deviceId: 'dev1' }), [q[5], q[3], q[1]]);
      assert.deepEqual(await list({ deviceId: 'emulated-test-device' }), [test]);
      assert.deepEqual(await list({ deviceId: 'dev' }), [], 'the whole id, not a part of it');
      // createTime (enqueued: T0 + i s; the test at T0 + 10 s), half-open.
      assert.deepEqual(await list({ startTime: T0 + SECOND, endTime: T0 + 4 * SECOND }), [q[3], q[2], q[1]]);
      assert.deepEqual(await list({ startTime: T0 + 4 * SECOND }), [test, q[5], q[4]]);
      assert.deepEqual(await list({ endTime: T0 + SECOND }), [q[0]]);
      assert.deepEqual(await list({ startTime: T0 + SECOND, endTime: T0 + SECOND }), []);
      // Combined.
      assert.deepEqual(await list({ deviceId: 'dev1', states: ['PENDING'] }), [q[5], q[3]]);
      assert.deepEqual(await list({ deviceId: 'dev1', trigger: 'EVENT', startTime: T0 + 2 * SECOND }), [q[3]]);
      assert.deepEqual(await list({ states: ['RETRYING', 'PENDING'], beforeId: q[4] }), [q[3], q[1]]);
    });

    it('list pages with beforeId: every delivery once, newest first, across logged and queued ones', async () => {
      const { c, rows } = await seed(11);
      // Every other row logged (some ended, some retrying), the rest waiting.
      const logged = rows.filter((_, i) => i % 2 === 0);
      for (const r of logged.slice(0, 3)) await store().deliveries.delete(r.queued!.id);
      await store().deliveryLog.record(
        logged.map((r, i) =>
          i < 3 ? outcome(r, 'DELIVERED', success(T0 + MINUTE)) : outcome(r, 'RETRYING', attempt(T0)),
        ),
      );
      const all = rows.map((r) => r.queued!.id).sort((a, b) => b - a);
      const pages = await allPages(store(), { connectorIds: [c.id] }, 3, T0);
      assert.deepEqual(
        pages.map((p) => p.length),
        [3, 3, 3, 2],
      );
      assert.deepEqual(pages.flat(), all);
      const pending = await allPages(store(), { connectorIds: [c.id], states: ['PENDING'] }, 2, T0);
      assert.deepEqual(
        pending.flat(),
        rows
          .filter((_, i) => i % 2 === 1)
          .map((r) => r.queued!.id)
          .reverse(),
      );
    });

    it('list finds the queued rows without a log row below many queued rows that have one (a backlog being retried)', async () => {
      const { c, rows } = await seed(60);
      // The newest 59 have been tried and are retrying; the oldest waits for its first attempt.
      await store().deliveryLog.record(rows.slice(1).map((r) => outcome(r, 'RETRYING', attempt(T0))));
      const first = rows[0]!.queued!.id;
      for (const limit of [1, 2, 5]) {
        const page = await store().deliveryLog.list({ connectorIds: [c.id], states: ['PENDING'] }, limit, T0);
        assert.deepEqual(ids(page), [first], `a page of ${limit}`);
      }
      const page = await store().deliveryLog.list({ connectorIds: [c.id] }, 100, T0);
      assert.equal(page.length, 60);
      assert.deepEqual(page.at(-1)?.state, 'PENDING');
      assert.deepEqual(
        new Set(states(page.slice(0, 59))),
        new Set(['RETRYING']),
        'a queued row with a log row is listed once, from its log row',
      );
    });

    it("list finds a connector's queued rows below a long queue of other connectors', few of them or many", () =>
      withFreshStore(open, async (s) => {
        // x: a few rows; y: a long backlog, its newest 100 tried and retrying; z: a longer backlog queued after both
        // (more than a page's walk of the newest queue rows reaches).
        const [x, y, z] = [await seedConnector(s), await seedConnector(s), await seedConnector(s)];
        const queue = async (c: string, n: number, device: (i: number) => string) => {
          const rows = Array.from({ length: n }, (_, i) => eventRow(c, T0 + i, device(i)));
          await s.deliveries.insert(rows);
          return rows.map((r) => r.queued!.id);
        };
        const xs = await queue(x.id, 5, () => 'dx');
        const ys = await queue(y.id, 1_100, (i) => (i % 100 === 7 ? 'rare' : 'dy'));
        const zs = await queue(z.id, 10_000, () => 'dz');
        const yRows = await s.deliveries.claim(y.id, T0 + 2_000, 0, T0 + 3_000, 1_100);
        const tried = yRows.slice(-100);
        for (const r of tried) await s.deliveries.reschedule(r.id, 1, T0 + MINUTE, r.leaseUntil);
        await s.deliveries.releaseLeases(T0);
        await s.deliveryLog.record(
          tried.map((r) =>
            outcome(
              { ...eventRow(y.id, r.enqueueTime), ...r, queued: { id: r.id, leased: false } },
              'RETRYING',
              attempt(T0),
            ),
          ),
        );
        const newestFirst = (list: number[]) => [...list].sort((a, b) => b - a);
        const list = async (filter: Partial<DeliveryLogFilter>, limit: number) =>
          ids(await s.deliveryLog.list({ connectorIds: [x.id], ...filter }, limit, T0));
        assert.deepEqual(await list({}, 10), newestFirst(xs));
        assert.deepEqual(
          await list({ connectorIds: [y.id], states: ['PENDING'] }, 50),
          newestFirst(ys.slice(0, 1_000)).slice(0, 50),
        );
        assert.deepEqual(await list({ connectorIds: [y.id] }, 150), newestFirst(ys).slice(0, 150));
        assert.deepEqual(
          await list({ connectorIds: [y.id], deviceId: 'rare', states: ['PENDING'] }, 5),
          newestFirst(ys.filter((_, i) => i % 100 === 7 && i < 1_000)).slice(0, 5),
        );
        assert.deepEqual(await list({ connectorIds: [y.id], eventId: (await s.deliveries.get(ys[3]!))!.eventId }, 5), [
          ys[3],
        ]);
        const pages = await allPages(s, { connectorIds: [z.id, y.id, x.id] }, 1_000, T0);
        assert.deepEqual(pages.flat(), newestFirst([...xs, ...ys, ...zs]));
      }));

    it("get: one of the connector's deliveries with its attempts; a queued one has none yet; another connector's is not found", async () => {
      const { c, rows } = await seed(2);
      const other = await seedConnector(store());
      const [logged, queued] = rows;
      await store().deliveryLog.record([outcome(logged!, 'RETRYING', attempt(T0 + SECOND))]);
      assert.deepEqual(
        (await store().deliveryLog.get(c.id, logged!.queued!.id, T0))?.attempts?.map((a) => a.time),
        [T0 + SECOND],
      );
      assert.deepEqual(await store().deliveryLog.get(c.id, queued!.queued!.id, T0), {
        id: queued!.queued!.id,
        connectorId: c.id,
        eventId: queued!.eventId,
        eventType: 'touch',
        deviceId: 'dev1',
        trigger: 'EVENT',
        state: 'PENDING',
        attemptCount: 0,
        createTime: T0 + SECOND,
        updateTime: T0 + SECOND,
        nextAttemptTime: T0 + SECOND,
        attempts: [],
      });
      assert.equal(await store().deliveryLog.get(other.id, logged!.queued!.id, T0), null);
      assert.equal(await store().deliveryLog.get(other.id, queued!.queued!.id, T0), null);
      assert.equal(await store().deliveryLog.get(c.id, -1, T0), null);
    });

    it('deliveredEventIds: of the given events, those with a DELIVERED delivery to the connector', async () => {
      const { c, rows } = await seed(4);
      const other = await seed(1);
      // The fourth event failed, then was resent and delivered.
      const resent = eventRow(c.id, T0 + MINUTE, 'dev1', 'touch', { eventId: rows[3]!.eventId, trigger: 'RESEND' });
      await store().deliveries.insert([resent]);
      await store().deliveryLog.record([
        outcome(rows[0]!, 'DELIVERED', success(T0)),
        outcome(rows[1]!, 'RETRYING', attempt(T0)),
        outcome(rows[2]!, 'EXPIRED', attempt(T0)),
        outcome(rows[3]!, 'EXPIRED', attempt(T0)),
        outcome(resent, 'DELIVERED', success(T0 + MINUTE)),
        outcome(other.rows[0]!, 'DELIVERED', success(T0)),
      ]);
      const asked = [...rows.map((r) => r.eventId), other.rows[0]!.eventId, 'unknown'];
      assert.deepEqual(
        [...(await store().deliveryLog.deliveredEventIds(c.id, asked))].sort(),
        [rows[0]!.eventId, rows[3]!.eventId].sort(),
      );
      assert.deepEqual([...(await store().deliveryLog.deliveredEventIds(c.id, []))], []);
      assert.deepEqual(
        ids(await store().deliveryLog.list({ connectorIds: [c.id], eventId: rows[3]!.eventId }, 10, T0)),
        [resent.queued!.id, rows[3]!.queued!.id],
      );
    });

    it('an event in the history: its deliveries to each connector are found by its id, and still once it has left the history', async () => {
      const s = store();
      const p = await seedProject(s);
      const d = device(p.id);
      await s.devices.create(d);
      const c1 = await seedConnector(s, { projectId: p.id });
      const c2 = await seedConnector(s, { projectId: p.id });
      const events = [event(d, T0), event(d, T0 + SECOND)];
      // As the pipeline queues them: the event stored, then a row per connector in one call.
      const rows: NewDelivery[] = [];
      for (const e of events) {
        await s.events.insert(e);
        const mine = [c1, c2].map((c) => row(c.id, e.createTime, { eventId: e.id, body: pushBody(e.id, d.id) }));
        await s.deliveries.insert(mine);
        rows.push(...mine);
      }
      const [e0, e1] = events.map((e) => e.id) as [string, string];
      const resent = row(c1.id, T0 + MINUTE, { eventId: e1, body: pushBody(e1, d.id), trigger: 'RESEND' });
      await s.deliveries.insert([resent]);
      // e0 delivered to c1 and retrying to c2; e1 expired to c1, then resent and delivered; e1 still queued for c2.
      await s.deliveryLog.record([
        outcome(rows[0]!, 'DELIVERED', success(T0)),
        outcome(rows[1]!, 'RETRYING', attempt(T0)),
        outcome(rows[2]!, 'EXPIRED', attempt(T0)),
        outcome(resent, 'DELIVERED', success(T0 + MINUTE)),
      ]);
      const q = rows.map((r) => r.queued!.id);
      const list = async (connectorIds: string[], eventId: string) =>
        ids(await s.deliveryLog.list({ connectorIds, eventId }, 10, T0 + 2 * MINUTE));
      const check = async () => {
        assert.deepEqual(await list([c1.id], e0), [q[0]]);
        assert.deepEqual(await list([c1.id, c2.id], e0), [q[1], q[0]]);
        assert.deepEqual(await list([c1.id, c2.id], e1), [resent.queued!.id, q[3], q[2]]);
        assert.deepEqual(await list([c2.id], e1), [q[3]]);
        assert.deepEqual(sorted([...(await s.deliveryLog.deliveredEventIds(c1.id, [e0, e1, 'unknown']))]), [e0, e1]);
        assert.deepEqual([...(await s.deliveryLog.deliveredEventIds(c2.id, [e0, e1]))], []);
      };
      await check();
      // The history's retention (here the device's deletion) takes the events; their deliveries stay findable.
      assert.equal(await s.events.deleteByDevice(d.id, 100), 2);
      await check();
    });

    it("recordTest logs a final delivery under an id from the queue's sequence: never a queue row's, before or after", () =>
      withFreshStore(open, async (s) => {
        const c = await seedConnector(s);
        const test = (at: number) =>
          s.deliveryLog.recordTest({
            connectorId: c.id,
            eventId: id('t'),
            eventType: 'temperature',
            deviceId: 'emulated',
            trigger: 'TEST',
            createTime: at,
            state: 'DELIVERED',
            attempt: success(at),
            nextAttemptTime: null,
            updateTime: at + 1,
          });
        // Before the queue has ever had a row.
        const t1 = await test(T0);
        const [q1, q2] = await s.deliveries.insert([eventRow(c.id, T0 + 1), eventRow(c.id, T0 + 2)]);
        const t2 = await test(T0 + 3);
        const t3 = await s.transaction((tx) =>
          tx.deliveryLog.recordTest({
            connectorId: c.id,
            eventId: id('t'),
            eventType: 'touch',
            deviceId: 'emulated',
            trigger: 'TEST',
            createTime: T0 + 4,
            state: 'FAILED',
            attempt: attempt(T0 + 4),
            nextAttemptTime: null,
            updateTime: T0 + 5,
          }),
        );
        const [q3] = await s.deliveries.insert([eventRow(c.id, T0 + 6)]);
        const order = [t1, q1, q2, t2, t3, q3];
        assert.deepEqual(
          order,
          [...order].sort((a, b) => a! - b!),
          'ids follow the order they were drawn in',
        );
        assert.equal(new Set(order).size, order.length);
        const got = await s.deliveryLog.get(c.id, t3, T0);
        assert.deepEqual(
          [got?.trigger, got?.state, got?.attemptCount, got?.nextAttemptTime, got?.attempts?.length],
          ['TEST', 'FAILED', 1, null, 1],
        );
        assert.equal(await s.deliveryLog.count(), 3);
      }));

    it('deleteByConnector with logAt logs the rows it removes DISCARDED; without it, nothing', async () => {
      const { c, rows } = await seed(5, (i) => (i === 4 ? { trigger: 'REPLAY' } : {}));
      const [retrying, delivered, waiting, waiting2, replay] = rows;
      await store().deliveries.reschedule(retrying!.queued!.id, 2, T0 + MINUTE, null);
      await store().deliveryLog.record([
        outcome(retrying!, 'RETRYING', attempt(T0)),
        outcome(retrying!, 'RETRYING', attempt(T0 + 1)),
        // Acknowledged late, while another process had the row: it was delivered, and stays so.
        outcome(delivered!, 'DELIVERED', success(T0)),
      ]);
      // The delivered row is in flight at that other process: a drop removes it all the same.
      const [claimed] = await store().deliveries.claim(c.id, T0 + 3 * SECOND, 0, T0 + MINUTE, 1);
      assert.equal(claimed?.id, delivered!.queued!.id);
      const at = T0 + 2 * MINUTE;
      let removed = 0;
      for (;;) {
        const n = await store().transaction((tx) => tx.deliveries.deleteByConnector(c.id, 2, at));
        assert.ok(n <= 2);
        if (n === 0) break;
        removed += n;
      }
      assert.equal(removed, 5);
      const get = (r: NewDelivery) => store().deliveryLog.get(c.id, r.queued!.id, at);
      const ended = await get(retrying!);
      assert.deepEqual(
        [ended?.state, ended?.updateTime, ended?.nextAttemptTime, ended?.attemptCount, ended?.attempts?.length],
        ['DISCARDED', at, null, 2, 2],
      );
      assert.equal((await get(delivered!))?.state, 'DELIVERED');
      for (const r of [waiting!, waiting2!, replay!]) {
        assert.deepEqual(await get(r), {
          id: r.queued!.id,
          connectorId: c.id,
          eventId: r.eventId,
          eventType: JSON.parse(r.body.toString()).event.eventType,
          deviceId: JSON.parse(r.body.toString()).metadata.deviceId,
          trigger: r === replay ? 'REPLAY' : 'EVENT',
          state: 'DISCARDED',
          attemptCount: 0,
          createTime: r.enqueueTime,
          updateTime: at,
          nextAttemptTime: null,
          attempts: [],
        });
      }
      // Without logAt, as before: removed, not logged.
      const plain = await seed(2);
      assert.equal(await store().deliveries.deleteByConnector(plain.c.id, 10), 2);
      assert.deepEqual(await store().deliveryLog.list({ connectorIds: [plain.c.id] }, 10, at), []);
    });

    it('deleteExpired with log logs the rows it drops EXPIRED at now; without it, nothing', () =>
      withFreshStore(open, async (s) => {
        const c = await seedConnector(s);
        const old = [eventRow(c.id, T0), eventRow(c.id, T0 + 1), eventRow(c.id, T0 + 2)];
        const young = eventRow(c.id, T0 + 10 * MINUTE);
        await s.deliveries.insert([...old, young]);
        await s.deliveries.reschedule(old[0]!.queued!.id, 1, T0 + MINUTE, null);
        await s.deliveryLog.record([outcome(old[0]!, 'RETRYING', attempt(T0))]);
        const now = T0 + 12 * 60 * MINUTE;
        const cutoff = T0 + 5 * MINUTE;
        // Oldest first: the retrying one logged, the next dropped unlogged (no trace left), the last logged.
        assert.equal(await s.transaction((tx) => tx.deliveries.deleteExpired(cutoff, now, 1, true)), 1);
        assert.equal(await s.deliveries.deleteExpired(cutoff, now, 1), 1);
        assert.equal(await s.deliveries.deleteExpired(cutoff, now, 10, true), 1);
        const page = await s.deliveryLog.list({ connectorIds: [c.id] }, 10, now);
        assert.deepEqual(
          page.map((r) => [r.id, r.state, r.updateTime, r.nextAttemptTime, r.attemptCount]),
          [
            [young.queued!.id, 'PENDING', young.enqueueTime, young.enqueueTime, 0],
            [old[2]!.queued!.id, 'EXPIRED', now, null, 0],
            [old[0]!.queued!.id, 'EXPIRED', now, null, 1],
          ],
        );
        assert.equal((await s.deliveryLog.get(c.id, old[0]!.queued!.id, now))?.attempts?.length, 1);
        assert.equal(await s.deliveries.deleteExpired(cutoff, now, 10, true), 0);
      }));

    it('deleteBefore removes up to `limit` deliveries created before the cutoff, oldest first; one still queued stays', () =>
      withFreshStore(open, async (s) => {
        const c = await seedConnector(s);
        const rows = Array.from({ length: 6 }, (_, i) => eventRow(c.id, T0 + i * MINUTE));
        await s.deliveries.insert(rows);
        // All logged; all but the third ended.
        for (const [i, r] of rows.entries()) if (i !== 2) await s.deliveries.delete(r.queued!.id);
        await s.deliveryLog.record(rows.map((r) => outcome(r, 'RETRYING', attempt(r.enqueueTime))));
        const cutoff = T0 + 4 * MINUTE; // rows 0-3 are older
        assert.equal(await s.deliveryLog.deleteBefore(cutoff, 2), 2);
        assert.equal(await s.deliveryLog.deleteBefore(cutoff, 10), 1, 'the third is still queued');
        assert.equal(await s.deliveryLog.deleteBefore(cutoff, 10), 0);
        const left = ids(await s.deliveryLog.list({ connectorIds: [c.id], states: ['RETRYING'] }, 10, T0));
        assert.deepEqual(
          left,
          [rows[5], rows[4], rows[2]].map((r) => r!.queued!.id),
        );
        assert.equal(await s.deliveryLog.count(), 3);
        await s.deliveries.delete(rows[2]!.queued!.id);
        assert.equal(await s.deliveryLog.deleteBefore(cutoff, 10), 1);
        assert.equal(await s.deliveryLog.deleteBefore(T0 + 60 * MINUTE, 10), 2);
        assert.equal(await s.deliveryLog.count(), 0);
      }));

    it('connectorsOver, trimEdge and trim keep each connector to its newest `keep`, oldest removed first, `limit` at a time', () =>
      withFreshStore(open, async (s) => {
        const [a, b, small] = [await seedConnector(s), await seedConnector(s), await seedConnector(s)];
        const logAll = async (connectorId: string, n: number) => {
          const rows = Array.from({ length: n }, (_, i) => eventRow(connectorId, T0 + i));
          await s.deliveries.insert(rows);
          await s.deliveries.deleteMany(rows.map((r) => r.queued!.id));
          await s.deliveryLog.record(rows.map((r) => outcome(r, 'DELIVERED', success(T0))));
          return rows.map((r) => r.queued!.id);
        };
        const aIds = await logAll(a.id, 7);
        const bIds = await logAll(b.id, 5);
        const smallIds = await logAll(small.id, 3);
        assert.deepEqual((await s.deliveryLog.connectorsOver(4)).sort(), [a.id, b.id].sort());
        assert.deepEqual(await s.deliveryLog.connectorsOver(7), []);
        assert.deepEqual((await s.deliveryLog.connectorsOver(0)).sort(), [a.id, b.id, small.id].sort());
        const edge = await s.deliveryLog.trimEdge(a.id, 4);
        assert.equal(edge, aIds[2], 'the newest of the 3 beyond the newest 4');
        // Deliveries logged after the edge was read are newer: the pieces still remove exactly the 3.
        const later = await logAll(a.id, 2);
        assert.equal(await s.deliveryLog.trim(a.id, edge!, 2), 2);
        assert.equal(await s.deliveryLog.trim(a.id, edge!, 2), 1);
        assert.equal(await s.deliveryLog.trim(a.id, edge!, 2), 0);
        assert.deepEqual(
          ids(await s.deliveryLog.list({ connectorIds: [a.id] }, 10, T0)),
          [...aIds.slice(3), ...later].reverse(),
        );
        assert.deepEqual(await s.deliveryLog.connectorsOver(6), []);
        assert.deepEqual((await s.deliveryLog.connectorsOver(4)).sort(), [a.id, b.id].sort());
        assert.equal(await s.deliveryLog.trimEdge(b.id, 5), null);
        assert.equal(await s.deliveryLog.trimEdge(b.id, 10), null);
        assert.equal(
          await s.deliveryLog.trim(b.id, (await s.deliveryLog.trimEdge(b.id, 0))!, 10),
          5,
          'keep 0: every one',
        );
        assert.deepEqual(await s.deliveryLog.list({ connectorIds: [b.id] }, 10, T0), []);
        assert.equal(bIds.length, 5);
        // A delivery still queued is kept, even beyond the cap.
        const queued = eventRow(small.id, T0 - 1);
        await s.deliveries.insert([queued]);
        await s.deliveryLog.record([outcome(queued, 'RETRYING', attempt(T0))]);
        const smallEdge = await s.deliveryLog.trimEdge(small.id, 0);
        assert.equal(smallEdge, Math.max(queued.queued!.id, ...smallIds), 'the queued delivery counts, and stays');
        assert.equal(await s.deliveryLog.trim(small.id, smallEdge!, 10), 3);
        assert.deepEqual(ids(await s.deliveryLog.list({ connectorIds: [small.id] }, 10, T0)), [queued.queued!.id]);
      }));

    it("deleteByConnector removes up to `limit` of the connector's deliveries, no other's; count counts every one", () =>
      withFreshStore(open, async (s) => {
        const [a, b] = [await seedConnector(s), await seedConnector(s)];
        for (const c of [a, b]) {
          const rows = Array.from({ length: 3 }, (_, i) => eventRow(c.id, T0 + i));
          await s.deliveries.insert(rows);
          await s.deliveryLog.record(rows.map((r) => outcome(r, 'RETRYING', attempt(T0))));
        }
        assert.equal(await s.deliveryLog.count(), 6);
        assert.equal(await s.deliveryLog.deleteByConnector(a.id, 2), 2);
        assert.equal(await s.deliveryLog.deleteByConnector(a.id, 2), 1);
        assert.equal(await s.deliveryLog.deleteByConnector(a.id, 2), 0);
        assert.equal(await s.deliveryLog.count(), 3);
        assert.equal((await s.deliveryLog.list({ connectorIds: [b.id], states: ['RETRYING'] }, 10, T0)).length, 3);
      }));

    it('queue rows carry their trigger: insert and add (in a batch too) write it, claim and get read it; EVENT is left out', async () => {
      const c = await seedConnector(store());
      const plain = eventRow(c.id, T0);
      const sync = eventRow(c.id, T0 + 1, 'dev0', 'touch', { trigger: 'SYNC' });
      const event = eventRow(c.id, T0 + 2, 'dev0', 'touch', { trigger: 'EVENT' });
      const resend = eventRow(c.id, T0 + 3, 'dev0', 'touch', { trigger: 'RESEND' });
      const leased = eventRow(c.id, T0 + 4, 'dev0', 'touch', {
        trigger: 'REPLAY',
        dueTime: T0 + MINUTE,
        leaseUntil: T0 + MINUTE,
      });
      const ids = await store().deliveries.insert([plain, sync, event, resend, leased]);
      assert.deepEqual(
        ids,
        [...ids].sort((a, b) => a - b),
        'ids in the order given, whatever the triggers',
      );
      assert.deepEqual(
        [plain, sync, event, resend, leased].map((r) => r.queued),
        ids.map((id, i) => ({ id, leased: i === 4 })),
      );
      const trigger = async (id: number) => {
        const r = await store().deliveries.get(id);
        return r && ('trigger' in r ? r.trigger : 'absent');
      };
      assert.deepEqual(await Promise.all(ids.map(trigger)), ['absent', 'SYNC', 'absent', 'RESEND', 'REPLAY']);
      const batch = [eventRow(c.id, T0 + 5, 'dev0', 'touch', { trigger: 'REPLAY' }), eventRow(c.id, T0 + 6)];
      await store().transaction(
        async (tx) => {
          await tx.deliveries.add([eventRow(c.id, T0 + 5)]);
          await tx.deliveries.add(batch);
        },
        { rerunnable: true },
      );
      assert.equal(await trigger(batch[0]!.queued!.id), 'REPLAY');
      assert.equal(await trigger(batch[1]!.queued!.id), 'absent');
      const claimed = await store().deliveries.claim(c.id, T0 + 10, 0, T0 + 2 * MINUTE, 100);
      assert.deepEqual(
        claimed.map((r) => r.trigger ?? 'absent'),
        ['absent', 'SYNC', 'absent', 'RESEND', 'absent', 'REPLAY', 'absent'],
      );
      const listed = await store().deliveryLog.list({ connectorIds: [c.id] }, 10, T0);
      assert.deepEqual(listed.map((r) => r.trigger).reverse(), [
        'EVENT',
        'SYNC',
        'EVENT',
        'RESEND',
        'REPLAY',
        'EVENT',
        'REPLAY',
        'EVENT',
      ]);
    });
  });
}
