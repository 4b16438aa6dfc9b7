// The hand-off of fresh rows (handoff.ts, intake.ts) on the test store: queued leased and attempted at commit, slots
// given back on rollback, a backlog drained first, and a hanging connector never taking every slot.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nowMicros } from '../../src/runtime/clock.ts';
import { formatTimestamp } from '../../src/domain/time.ts';
import { createConnector, publish, until, settle, queueDepth, dueNow, withEngine } from './engine-setup.ts';

describe('happy: hand-off of fresh rows', () => {
  it('queues a fresh row already leased and attempts it at commit: never due, never claimed', async () => {
    await withEngine(
      {},
      async ({ t, fake, engine }) => {
        const dc = await createConnector(t);
        engine.start();
        fake.hold();
        const sent = await publish(t, await t.createDevice());
        await until(() => fake.calls.length > 0);
        assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
        assert.equal(await queueDepth(t), 1, 'durable while in flight');
        assert.deepEqual(await dueNow(t), [], 'leased: no claim can take it a second time');
        fake.release();
        await until(async () => (await queueDepth(t)) === 0);
        assert.equal(await queueDepth(t), 0);
        assert.equal(fake.calls.length, 1);
      },
      'any',
    );
  });

  it('a fresh row whose lease is half over at its commit (the process paused) is not pushed until its lease ends', async () => {
    await withEngine(
      {},
      async ({ t, fake, engine }) => {
        const dc = await createConnector(t);
        const device = await t.createDevice();
        engine.start();
        // Handed off with a 60 s lease; the process stops for 40 s before the commit is answered.
        const sent = await t.deps.events.transaction(async (_tx, emit) => {
          const emitted = await emit(
            device,
            'touch',
            { touch: { updateTime: formatTimestamp(nowMicros(t.deps)) } },
            nowMicros(t.deps),
          );
          t.clock.advance(40_000);
          return emitted;
        });
        await settle();
        assert.equal(fake.calls.length, 0, 'not pushed');
        assert.equal(await queueDepth(t), 1, 'still queued');
        t.clock.advance(20_000);
        engine.wake();
        await until(() => fake.calls.length > 0);
        assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId], 'pushed once its lease ended');
        await until(async () => (await queueDepth(t)) === 0);
        assert.equal(await queueDepth(t), 0);
      },
      'any',
    );
  });

  it('a rolled-back transaction gives its slot back', async () => {
    await withEngine(
      { perConnectorConcurrency: 1 },
      async ({ t, fake, engine }) => {
        const dc = await createConnector(t);
        const device = await t.createDevice();
        engine.start();
        await assert.rejects(
          t.deps.events.transaction(async (_tx, emit) => {
            await emit(
              device,
              'touch',
              { touch: { updateTime: formatTimestamp(nowMicros(t.deps)) } },
              nowMicros(t.deps),
            );
            throw new Error('changed my mind');
          }),
          /changed my mind/,
        );
        assert.equal(await queueDepth(t), 0);
        // With one slot, a leaked reservation would leave the next row queued for the (minute-long) poll.
        const sent = await publish(t, device);
        await until(() => fake.calls.length > 0);
        assert.deepEqual(fake.eventIds(dc.url), [sent.event.eventId]);
      },
      'any',
    );
  });

  it('a publish undone and run again (its commit shared with one that failed after writing) goes out once, and no slot leaks', async () => {
    await withEngine(
      { perConnectorConcurrency: 1 },
      async ({ t, fake, engine }) => {
        const seen: string[] = [];
        t.deps.events.subscribe((e) => seen.push(e.event.eventId)); // ends with the context
        const dc = await createConnector(t);
        const device = await t.createDevice();
        engine.start();
        const now = nowMicros(t.deps);
        // Requested in the same turn, so they share a commit: the second one's failure undoes the first one's call too.
        const [kept, failed] = await Promise.allSettled([
          t.deps.events.transaction((_tx, emit) =>
            emit(device, 'touch', { touch: { updateTime: formatTimestamp(now) } }, now),
          ),
          t.deps.events.transaction(async (_tx, emit) => {
            await emit(device, 'touch', { touch: { updateTime: formatTimestamp(now) } }, now);
            throw new Error('fails after writing');
          }),
        ]);
        assert.equal(failed.status, 'rejected');
        assert.equal(kept.status, 'fulfilled');
        const id = (kept as PromiseFulfilledResult<{ event: { eventId: string } }>).value.event.eventId;
        await until(async () => fake.calls.length > 0 && (await queueDepth(t)) === 0);
        assert.deepEqual(fake.eventIds(dc.url), [id], 'pushed once');
        assert.deepEqual(seen, [id], 'streamed once');
        assert.equal(
          (
            await t.deps.store.events.listByDevice({
              deviceId: device.id,
              eventTypes: [],
              startTime: 0,
              endTime: Number.MAX_SAFE_INTEGER,
              limit: 10,
            })
          ).length,
          1,
        );
        // With one slot, a reservation leaked by the undone call would leave the next row queued for the poll.
        const later = await publish(t, device);
        await until(() => fake.calls.length > 1);
        assert.deepEqual(fake.eventIds(dc.url), [id, later.event.eventId]);
      },
      'any',
    );
  });

  it('rows already due when the loop starts (a backlog after a restart) are drained without waiting for the poll', async () => {
    await withEngine(
      { perConnectorConcurrency: 1 },
      async ({ t, fake, engine }) => {
        const dc = await createConnector(t);
        const device = await t.createDevice();
        const sent = [];
        for (let i = 0; i < 5; i++) sent.push(await publish(t, device));
        assert.deepEqual(await dueNow(t), [dc.id]);
        engine.start();
        await until(async () => (await queueDepth(t)) === 0);
        assert.deepEqual(
          fake.eventIds(dc.url),
          sent.map((e) => e.event.eventId),
          'one slot: claimed one by one, in order',
        );
        const later = await publish(t, device);
        await until(() => fake.calls.length > 5);
        assert.deepEqual(fake.eventIds(dc.url).slice(5), [later.event.eventId]);
      },
      'any',
    );
  });

  it('a hanging connector never takes every slot: the other one gets each event at once', async () => {
    await withEngine(
      { perConnectorConcurrency: 6, totalConcurrency: 8 },
      async ({ t, fake, engine }) => {
        const dead = await createConnector(t);
        const live = await createConnector(t);
        const device = await t.createDevice();
        engine.start();
        fake.hold(dead.url);
        for (let i = 0; i < 8; i++) await publish(t, device);
        await until(() => fake.callsTo(live.url).length >= 8);
        assert.equal(fake.callsTo(live.url).length, 8, 'the live connector gets every event while the dead one hangs');
        // Hand-offs give the hanging one half of the cap (two connectors per event); claims of its queued rows add
        // more once the live one's pushes are over (a slot is free again when its push ends), up to its own cap.
        await until(() => fake.callsTo(dead.url).length >= 6);
        assert.equal(fake.callsTo(dead.url).length, 6, 'the hanging connector holds its own cap, not the overall one');
        const later = await publish(t, device);
        await until(() => fake.callsTo(live.url).length >= 9);
        assert.deepEqual(fake.eventIds(live.url).slice(8), [later.event.eventId], 'a new event still goes out at once');
      },
      'any',
    );
  });
});
