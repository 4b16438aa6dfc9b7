// Lines on a store one process owns (lines.ts, intake.ts): fresh rows behind a busy connector wait leased, in order,
// for its next free slot; a line goes back to the queue when the connector fails, is disabled or the loop stops.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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

describe('happy: hand-off of fresh rows: lines', () => {
  it('behind a busy connector fresh rows wait in line, leased, and go out in order as slots free: never due, never claimed', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      const lined = [await publish(t, device), await publish(t, device)];
      assert.equal(await queueDepth(t), 3, 'durable while waiting');
      assert.deepEqual(await dueNow(t), [], 'leased: no claim can take them');
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(
        fake.eventIds(dc.url),
        [first, ...lined].map((e) => e.event.eventId),
      );
    });
  });

  it('past the line (4 × the per-connector cap) rows queue as due and go out in order; the hand-off resumes once they are gone', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      const sent = [first];
      for (let i = 0; i < 6; i++) sent.push(await publish(t, device));
      assert.deepEqual(await dueNow(t), [dc.id], 'no slot and no place in line: queued as due');
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(
        fake.eventIds(dc.url),
        sent.map((e) => e.event.eventId),
      );

      fake.hold();
      const later = await publish(t, device);
      await until(() => fake.calls.length > 7);
      assert.deepEqual(fake.eventIds(dc.url).slice(7), [later.event.eventId]);
      assert.deepEqual(await dueNow(t), [], 'handed off again: leased at once');
    });
  });

  it('a connector that starts failing gives its line back to the queue, and the rows are claimed at the pace of a failing one', async () => {
    await withEngine({ perConnectorConcurrency: 2 }, async ({ t, fake, engine }) => {
      const dc = await createConnector(t);
      const device = await t.createDevice();
      engine.start();
      fake.hold();
      fake.queue.push(503, 503);
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push(await publish(t, device));
      await until(() => fake.calls.length === 2);
      assert.deepEqual(await dueNow(t), [], 'two in flight, three in line');
      fake.release();
      fake.hold();
      // The two failures are rescheduled (8 s on); the line is due at once, and claimed two at a time.
      await until(() => fake.calls.length === 4);
      assert.deepEqual(await dueNow(t), [dc.id], 'the third row of the line waits in the queue, due');
      fake.release();
      await until(async () => (await queueDepth(t)) === 2 && fake.calls.length === 5);
      assert.deepEqual(fake.eventIds(dc.url).sort(), sent.map((e) => e.event.eventId).sort(), 'each attempted once');
      assert.equal(await queueDepth(t), 2);
      assert.deepEqual(await dueNow(t), []);
    });
  });

  it('a connector disabled while rows wait in line: none of them is sent', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      await publish(t, device);
      await publish(t, device);
      const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
        body: { status: 'USER_DISABLED' },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(await queueDepth(t), 0, 'the queue is dropped, the row in flight included');
      fake.release();
      await settle();
      assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId]);
    });
  });

  it('a connector disabled and enabled again while rows wait in line: none of them is sent (no backfill)', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      await publish(t, device);
      await publish(t, device);
      for (const status of ['USER_DISABLED', 'ACTIVE']) {
        const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
          body: { status },
        });
        assert.equal(res.status, 200, res.text);
      }
      fake.release();
      await settle();
      assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId]);
      assert.equal(await queueDepth(t), 0);
    });
  });

  it("rows waiting in line go out with the connector's settings as they are when a slot frees", async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake } = s;
      const { dc, device, first } = await busyConnector(s);
      const lined = [await publish(t, device), await publish(t, device)];
      const url = 'https://moved.example/hook';
      const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${dc.id}`, {
        body: { httpConfig: { url } },
      });
      assert.equal(res.status, 200, res.text);
      fake.release();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(fake.eventIds(dc.url), [first.event.eventId], 'in flight before the change: the old URL');
      assert.deepEqual(
        fake.eventIds(url),
        lined.map((e) => e.event.eventId),
      );
    });
  });

  it('rows in line when the loop stops stay leased, and go out after the next start', async () => {
    await withEngine({ perConnectorConcurrency: 1 }, async (s) => {
      const { t, fake, engine } = s;
      const { dc, device, first } = await busyConnector(s);
      const sent = [first];
      sent.push(await publish(t, device), await publish(t, device));
      const stopped = engine.stop();
      fake.release();
      await stopped;
      assert.equal(await queueDepth(t), 2);
      assert.deepEqual(await dueNow(t), [], 'still leased');
      engine.start();
      await until(async () => (await queueDepth(t)) === 0);
      assert.deepEqual(
        fake.eventIds(dc.url),
        sent.map((e) => e.event.eventId),
      );
    });
  });
});
