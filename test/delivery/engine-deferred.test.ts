// Deferred rows (a replay's, delivery/deferred.ts): never due by themselves, made due a piece at a time in id order,
// so a live event of the same connector waits behind at most a piece, not the whole replay.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFERRED_KEEP_DUE } from '../../src/delivery/deferred.ts';
import { DEFERRED_DUE, type NewDelivery } from '../../src/store/contract/connector-repos.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { TestContext } from '../helpers/context.ts';
import { createConnector, publish, setup, until, withEngine } from './engine-setup.ts';

/** `n` deferred rows of the connector, as `:replay` queues them (each its own event id, in order). */
async function deferRows(t: TestContext, connectorId: string, n: number): Promise<string[]> {
  const now = nowMicros(t.deps);
  const ids: string[] = [];
  const rows: NewDelivery[] = [];
  for (let i = 0; i < n; i++) {
    const eventId = `replayed-${String(i).padStart(6, '0')}`;
    ids.push(eventId);
    rows.push({
      connectorId,
      eventId,
      body: Buffer.from(`{"event":{"eventId":"${eventId}","eventType":"touch"},"labels":{},"metadata":{}}`),
      enqueueTime: now,
      dueTime: DEFERRED_DUE,
      trigger: 'REPLAY',
    });
  }
  for (let i = 0; i < rows.length; i += 1000)
    await t.deps.store.transaction((tx) => tx.deliveries.insert(rows.slice(i, i + 1000)));
  return ids;
}

describe('deferred rows', () => {
  it('are never due by themselves, and are made due a piece at a time, in id order, up to the due rows kept', async () => {
    const { t } = await setup();
    try {
      const dc = await createConnector(t);
      const other = await createConnector(t);
      await deferRows(t, dc.id, 30);
      const store = t.deps.store;
      const now = nowMicros(t.deps);
      assert.deepEqual(await store.deliveries.connectorsWithDue(now, 0), []);
      assert.deepEqual(await store.deliveries.connectorsWithDeferred(), [dc.id]);
      assert.equal(await store.deliveries.releaseDeferred(other.id, now, 10), 0);
      assert.equal(await store.deliveries.releaseDeferred(dc.id, now, 10), 10);
      // Ten are due already: nothing more until claims take some.
      assert.equal(await store.deliveries.releaseDeferred(dc.id, now, 10), 0);
      const claimed = await store.deliveries.claim(dc.id, now, 0, now + 60_000_000, 4);
      assert.deepEqual(
        claimed.map((r) => r.eventId),
        ['replayed-000000', 'replayed-000001', 'replayed-000002', 'replayed-000003'],
      );
      assert.equal(await store.deliveries.releaseDeferred(dc.id, now, 10), 4);
      assert.equal(await store.deliveries.releaseDeferred(dc.id, now, 100), 16);
      assert.deepEqual(await store.deliveries.connectorsWithDeferred(), []);
      // A deferred row waiting in the log reads PENDING with no time of its own yet.
      await deferRows(t, other.id, 1);
      const [row] = await store.deliveryLog.list({ connectorIds: [other.id] }, 10, now);
      assert.equal(row!.state, 'PENDING');
      assert.equal(row!.nextAttemptTime, null);
    } finally {
      await t.close();
    }
  });

  it('runOnce delivers every deferred row, in the order queued', async () => {
    const { t, fake, engine } = await setup();
    try {
      const dc = await createConnector(t);
      const ids = await deferRows(t, dc.id, 50);
      const report = await engine.runOnce();
      assert.equal(report.acked, 50);
      assert.deepEqual(
        fake.callsTo(dc.url).map((c) => c.json.event.eventId),
        ids,
      );
    } finally {
      await t.close();
    }
  });

  it('a live event published during a large replay waits behind a piece of it, not all of it', async () => {
    await withEngine({ pollIntervalMs: 20 }, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      const total = DEFERRED_KEEP_DUE * 3;
      await deferRows(t, dc.id, total);
      fake.hold();
      engine.start();
      await until(() => fake.calls.length > 0);
      const live = await publish(t, device);
      fake.release();
      await until(() => fake.calls.some((c) => c.json.event.eventId === live.event.eventId));
      const at = fake.callsTo(dc.url).findIndex((c) => c.json.event.eventId === live.event.eventId);
      assert.ok(at >= 0, 'the live event was pushed');
      assert.ok(at <= DEFERRED_KEEP_DUE + 128, `the live event went out after ${at} replayed rows`);
      // The loop makes a piece due at most every 100 ms of the (fake) clock.
      await until(async () => {
        t.clock.advance(150);
        return (await t.deps.store.deliveries.count()) === 0;
      });
      assert.equal(await t.deps.store.deliveries.count(), 0);
    });
  });
});
