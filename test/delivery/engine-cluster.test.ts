// The hand-off on a store several processes share (PostgreSQL): no lines, rows queued due behind a busy connector,
// and the per-connector limit counted over the cluster's rows in flight (claim.ts, ended-rows.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { PostgresStore } from '../../src/store/postgres/index.ts';
import {
  createConnector,
  publish,
  until,
  settle,
  queueDepth,
  dueNow,
  withEngine,
  busyConnector,
} from './engine-setup.ts';

describe('happy: hand-off of fresh rows: shared store', () => {
  it('on a shared store, behind a busy connector fresh rows are queued due (no line) and claimed in order as slots free', async () => {
    await withEngine(
      { perConnectorConcurrency: 1 },
      async (s) => {
        const { t, fake } = s;
        const { dc, device, first } = await busyConnector(s);
        const queued = [await publish(t, device), await publish(t, device)];
        assert.deepEqual(await dueNow(t), [dc.id]);
        fake.release();
        await until(async () => (await queueDepth(t)) === 0);
        assert.deepEqual(
          fake.eventIds(dc.url),
          [first, ...queued].map((e) => e.event.eventId),
        );
        fake.hold();
        const later = await publish(t, device);
        await until(() => fake.calls.length > 3);
        assert.deepEqual(fake.eventIds(dc.url).slice(3), [later.event.eventId]);
        assert.deepEqual(await dueNow(t), [], 'handed off again once nothing was due');
      },
      'postgres',
    );
  });

  it("on a shared store the per-connector limit counts other processes' rows in flight: fresh rows wait, due, for room", async () => {
    await withEngine(
      { perConnectorConcurrency: 2 },
      async ({ t, fake, engine }) => {
        const dc = await createConnector(t);
        const device = await t.createDevice();
        // Two attempts of another process, in flight: the connector's whole limit.
        const now = nowMicros(t.deps);
        const foreign = await t.deps.store.deliveries.insert(
          [1, 2].map((i) => ({
            connectorId: dc.id,
            eventId: `other${i}`,
            body: Buffer.from('{}'),
            enqueueTime: now,
            dueTime: now + 60_000_000,
            leaseUntil: now + 60_000_000,
          })),
        );
        engine.start();
        const sent = await publish(t, device);
        await settle();
        assert.deepEqual(fake.calls.length, 0, 'no room in the cluster: not handed off, not claimed');
        assert.deepEqual(await dueNow(t), [dc.id]);
        // The other process recorded its outcomes: room again, and the row goes out at the next wake.
        await t.deps.store.deliveries.deleteMany(foreign);
        engine.wake();
        await until(() => fake.calls.length > 0);
        assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
      },
      'postgres',
    );
  });

  it('on a shared store a row whose attempt has ended no longer counts as in flight while its outcome is being recorded', async () => {
    await withEngine(
      { perConnectorConcurrency: 1 },
      async (s) => {
        const { t, fake } = s;
        const { dc, device, first } = await busyConnector(s);
        // The first outcome cannot commit: its row is locked by another transaction, which the recording's DELETE
        // waits for. The row stays leased in the store meanwhile.
        const pool = (t.deps.store as PostgresStore).pool;
        const holder = await pool.connect();
        try {
          await holder.query('BEGIN');
          assert.equal((await holder.query('SELECT id FROM deliveries FOR UPDATE')).rowCount, 1);
          fake.release();
          const blocked = async () =>
            (await pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'")).rowCount! > 0;
          await until(blocked);
          // The connector's one slot is free in the cluster as much as here: the next row is handed off at once.
          const next = await publish(t, device);
          await until(() => fake.calls.length === 2);
          assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId, next.event.eventId]);
          assert.deepEqual(await dueNow(t), [], 'queued leased, not due');
        } finally {
          await holder.query('ROLLBACK');
          holder.release();
        }
        await until(async () => (await queueDepth(t)) === 0);
      },
      'postgres',
    );
  });
});
