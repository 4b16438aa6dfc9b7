// `:sync` through the engine (contract §6.7): the latest event of each type of each device, filter and labels as of
// now, and an older event only once retention deleted every later one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { pruneOnce } from '../../src/events/retention.ts';
import { HOUR, DAY, setup, createConnector, publish, queueDepth } from './engine-setup.ts';

describe('happy: sync', () => {
  it('queues the latest event of each type of each device now in the project, filter applied, labels as of now', async () => {
    const { t, fake, engine } = await setup();
    try {
      const devA = await t.createDevice({ labels: { room: 'a1' } });
      const devB = await t.createDevice({ type: 'touch', productNumber: '100110', labels: {} });
      const elsewhere = await t.createProject('elsewhere');
      const devC = await t.createDevice({ projectId: elsewhere });
      const oldTouch = await publish(t, devA, 'touch');
      t.clock.advance(1000);
      const newTouch = await publish(t, devA, 'touch');
      const labels = await publish(t, devA, 'labelsChanged');
      await publish(t, devA, 'batteryStatus', {
        batteryStatus: { percentage: 50, updateTime: formatTimestamp(nowMicros(t.deps)) },
      });
      const touchB = await publish(t, devB, 'touch');
      await publish(t, devC, 'touch');
      // The connector exists only now: nothing above was queued for it.
      const dc = await createConnector(t, { events: ['touch', 'labelsChanged'], labels: ['room'] });
      await t.deps.store.devices.updateLabels(devA.id, { room: 'a2' }, nowMicros(t.deps));
      t.clock.advance(13 * HOUR); // enqueue time, not event time, starts the 12-hour window
      const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}:sync`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {});
      assert.equal(await queueDepth(t), 3);
      const report = await engine.runOnce();
      assert.equal(report.acked, 3);
      const calls = fake.callsTo(dc.url);
      assert.deepEqual(
        calls.map((c) => c.json.event.eventId).sort(),
        [newTouch.event.eventId, labels.event.eventId, touchB.event.eventId].sort(),
      );
      assert.ok(!calls.some((c) => c.json.event.eventId === oldTouch.event.eventId));
      const a = calls.find((c) => c.json.event.eventId === newTouch.event.eventId)!;
      assert.deepEqual(a.json.event, newTouch.event);
      assert.deepEqual(a.json.labels, { room: 'a2' });
    } finally {
      await t.close();
    }
  });

  it('sends an older event only once retention has deleted every later one of its type', async () => {
    const { t, fake, engine } = await setup();
    try {
      const device = await t.createDevice({ type: 'touch', productNumber: '100110', labels: {} });
      const emitAt = async (timestamp: number) => {
        const fresh = (await t.deps.store.devices.get(device.id))!;
        return t.deps.events.transaction((_tx, emit) =>
          emit(fresh, 'touch', { touch: { updateTime: formatTimestamp(timestamp) } }, timestamp),
        );
      };
      const latest = await emitAt(nowMicros(t.deps));
      t.clock.advance(20 * DAY);
      const backdated = await emitAt(latest.timestamp - HOUR * 1000);
      assert.equal(backdated.device.latestEvents.touch?.[1], latest.event.eventId, 'an older event is history only');
      const dc = await createConnector(t, { events: ['touch'] });
      const sync = async () => {
        const seen = fake.eventIds(dc.url).length;
        const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}:sync`);
        assert.equal(res.status, 200);
        await engine.runOnce();
        return fake.eventIds(dc.url).slice(seen);
      };
      assert.deepEqual(await sync(), [latest.event.eventId]);
      // 32 days after the latest was stored, retention (31 days) deletes it; the backdated one, stored 12 days
      // ago, is now the latest touch still stored.
      t.clock.advance(12 * DAY);
      assert.equal(await pruneOnce(t.deps), 1);
      assert.deepEqual(await sync(), [backdated.event.eventId]);
      const res = await t.request('GET', `/v2/projects/${t.projectId}/devices/${device.id}`);
      assert.equal(res.body.reported.touch.updateTime, latest.event.timestamp, '`reported` keeps the latest data');
    } finally {
      await t.close();
    }
  });

  it('is a 400 on a connector that is not ACTIVE', async () => {
    const { t } = await setup();
    try {
      const dc = await createConnector(t, { status: 'USER_DISABLED' });
      const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}:sync`);
      assert.equal(res.status, 400);
    } finally {
      await t.close();
    }
  });
});
