// The engine's reads of the queue alone (pump.ts), on the test store with the fake clock and attempts that acknowledge
// at once: claims within the free slots, again as attempts end; background passes on wake only, one at a time; the
// backlog settled by each claim; leftover leases released at a start's first pass; housekeeping at its interval.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backlog } from '../../src/delivery/backlog.ts';
import { DEFAULT_DELIVERY_LOG } from '../../src/delivery/delivery-log.ts';
import type { ClaimedDelivery } from '../../src/delivery/claim.ts';
import type { RunReport } from '../../src/delivery/outcomes.ts';
import { createPump, type PumpDeps } from '../../src/delivery/pump.ts';
import { createSlots } from '../../src/delivery/slots.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

const LEASE_MICROS = 60_000_000;
const HOUR = 3600_000;

async function newConnector(t: TestContext): Promise<string> {
  const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.com/h' } },
  });
  assert.equal(res.status, 200, res.text);
  return res.body.name.split('/')[3];
}

/** Queues `n` rows for the connector, enqueued now, due at `dueTime` (micros; default now). */
async function queue(t: TestContext, connectorId: string, n: number, dueTime = nowMicros(t.deps)): Promise<number[]> {
  const now = nowMicros(t.deps);
  return t.deps.store.deliveries.insert(
    Array.from({ length: n }, () => ({
      connectorId,
      eventId: `e${++eventCounter}`,
      body: Buffer.from('{}'),
      enqueueTime: now,
      dueTime,
    })),
  );
}
let eventCounter = 0;

/** A pump whose attempts acknowledge at once (the row deleted, the slot given back), recording what it launched. */
async function setup(options: Partial<PumpDeps> & { perConnector?: number } = {}) {
  const t = await createTestContext();
  const perConnector = options.perConnector ?? 4;
  const slots = createSlots(t.clock, {
    perConnector,
    perFailingConnector: 1,
    total: 8,
    suspectTotal: 4,
    suspectAfterMs: 1000,
  });
  const backlog = new Backlog();
  const launched: number[][] = [];
  const acks: Array<Promise<RunReport>> = [];
  const ack = async (item: ClaimedDelivery): Promise<RunReport> => {
    await t.deps.store.deliveries.deleteMany([item.delivery.id]);
    slots.give(item.connector.id);
    return { attempted: 1, acked: 1, failed: 0, dropped: 0 };
  };
  const state = { taking: true };
  const pump = createPump({
    store: t.deps.store,
    clock: t.clock,
    logger: createSilentLogger(),
    slots,
    backlog,
    leaseMicros: LEASE_MICROS,
    cluster: t.deps.store.cluster === null ? null : { perConnector, perFailing: 1, suspectAfterMicros: 1_000_000 },
    housekeepingIntervalMs: 60_000,
    deliveryLog: DEFAULT_DELIVERY_LOG,
    launch(items) {
      if (items.length > 0) launched.push(items.map((i) => i.delivery.id));
      return items.map((item) => {
        slots.take(item.connector.id);
        const p = ack(item);
        acks.push(p);
        return p;
      });
    },
    taking: () => state.taking,
    ...options,
  });
  /** Wakes the pump (`wake`), and waits for its pass, if any, and the attempts it launched. */
  const pass = async (wake = pump.wake) => {
    wake();
    await turn();
    await pump.finished();
    await Promise.all(acks);
  };
  return { t, slots, backlog, launched, state, pump, pass };
}

/** Lets the callbacks of this turn run (a wake's pass starts in the next one). */
const turn = () => new Promise((r) => setImmediate(r));

/** Counts the claims' reads of the queue; `hold` makes the next ones wait until it is released. */
function watchReads(t: TestContext) {
  const deliveries = t.deps.store.deliveries;
  const read = deliveries.connectorsWithDue.bind(deliveries);
  const watch = { reads: 0, fail: 0, gate: null as Promise<void> | null, reached: (): void => undefined };
  deliveries.connectorsWithDue = async (now, enqueuedAfter) => {
    watch.reads++;
    watch.reached();
    if (watch.gate) await watch.gate;
    if (watch.fail > 0) {
      watch.fail--;
      throw new Error('database unreachable');
    }
    return read(now, enqueuedAfter);
  };
  return watch;
}

describe('pump', () => {
  it('runOnce claims within the free slots and again as attempts end, until nothing due is left', async () => {
    const { t, launched, pump } = await setup({ perConnector: 1 });
    try {
      const c = await newConnector(t);
      const ids = await queue(t, c, 3);
      await queue(t, c, 1, nowMicros(t.deps) + 8_000_000); // a retry, due in 8 s: not now
      assert.deepEqual(await pump.runOnce(), { attempted: 3, acked: 3, failed: 0, dropped: 0 });
      assert.deepEqual(
        launched,
        ids.map((id) => [id]),
        'one slot: one row per claim, in queue order',
      );
      assert.equal(await t.deps.store.deliveries.count(), 1);
    } finally {
      await t.close();
    }
  });

  it('a wake makes a pass only while the engine takes rows, and the wakes of one turn make one pass', async () => {
    const { t, state, pump } = await setup();
    try {
      const watch = watchReads(t);
      state.taking = false;
      pump.wake();
      await turn();
      await pump.finished();
      assert.equal(watch.reads, 0, 'stopped: no pass');
      state.taking = true;
      pump.wake();
      pump.wake();
      pump.wakeForBacklog(); // no backlog: no wake at all
      pump.wake();
      await turn();
      await pump.finished();
      assert.equal(watch.reads, 1);
    } finally {
      await t.close();
    }
  });

  it('a pass woken while it runs goes again once it is over', async () => {
    const { t, pump } = await setup();
    try {
      const watch = watchReads(t);
      let open!: () => void;
      watch.gate = new Promise((r) => (open = r));
      const reached = new Promise<void>((r) => (watch.reached = r));
      pump.wake();
      await reached; // the pass reads the queue, and waits
      pump.wake();
      await turn();
      watch.gate = null;
      open();
      await pump.finished();
      assert.equal(watch.reads, 2, "the second pass ran within the first one's loop");
    } finally {
      await t.close();
    }
  });

  it('a connector stays in the backlog while claims leave rows of it due; wakeForBacklog wakes only until it is out', async () => {
    const { t, backlog, launched, pass, pump } = await setup({ perConnector: 1 });
    try {
      const watch = watchReads(t);
      const c = await newConnector(t);
      await queue(t, c, 2);
      backlog.mark(c);
      await pass();
      assert.equal(backlog.has(c), true, 'one of two claimed: rows left');
      await pass(pump.wakeForBacklog);
      assert.equal(backlog.has(c), true, 'the second claimed: its read found it due');
      await pass(pump.wakeForBacklog);
      assert.equal(backlog.has(c), false, 'a claim found nothing of it due');
      assert.equal(launched.flat().length, 2);
      const reads = watch.reads;
      await pass(pump.wakeForBacklog);
      assert.equal(watch.reads, reads, 'no backlog: no pass');
    } finally {
      await t.close();
    }
  });

  it("a start's first pass releases the leases left over on a store one process owns (honoured on a shared one), and only that pass", async () => {
    const { t, launched, pump, pass } = await setup();
    try {
      const c = await newConnector(t);
      // Leased by a process that died.
      const lease = async () => {
        const [id] = await queue(t, c, 1);
        const now = nowMicros(t.deps);
        assert.equal((await t.deps.store.deliveries.claim(c, now, 0, now + LEASE_MICROS, 10)).length, 1);
        return id!;
      };
      const first = await lease();
      await pass();
      const exclusive = t.deps.store.exclusive;
      assert.deepEqual(launched, exclusive ? [[first]] : []);
      const second = await lease();
      await pass();
      assert.deepEqual(launched.flat(), exclusive ? [first] : [], "a lease taken after the first pass is an attempt's");
      pump.reset(); // stopped, started again
      await pass();
      assert.deepEqual(launched.flat(), exclusive ? [first, second] : []);
    } finally {
      await t.close();
    }
  });

  it('housekeeping drops rows 12 hours old at most once per interval in the background, and at every runOnce', async () => {
    const { t, pump, pass } = await setup();
    try {
      const c = await newConnector(t);
      const later = () => nowMicros(t.deps) + 24 * HOUR * 1000; // not due: never claimed
      await queue(t, c, 1, later());
      t.clock.advance(30_000);
      await queue(t, c, 1, later());
      t.clock.advance(12 * HOUR - 30_000);
      await pass();
      assert.equal(await t.deps.store.deliveries.count(), 1, 'the first one is 12 hours old');
      t.clock.advance(30_000);
      await pass();
      assert.equal(await t.deps.store.deliveries.count(), 1, '30 s after the last housekeeping: not yet');
      t.clock.advance(30_000);
      await pass();
      assert.equal(await t.deps.store.deliveries.count(), 0, 'a minute after it');
      await queue(t, c, 1, later());
      t.clock.advance(12 * HOUR);
      assert.deepEqual(await pump.runOnce(), { attempted: 0, acked: 0, failed: 0, dropped: 1 });
    } finally {
      await t.close();
    }
  });

  it('a claim that fails is logged when claims start failing and when they work again, not at every pass', async () => {
    const { logger, lines } = capturedLog(['info', 'error']);
    const { t, pass } = await setup({ logger });
    try {
      const watch = watchReads(t);
      watch.fail = 3;
      for (let i = 0; i < 4; i++) {
        t.clock.advance(1000);
        await pass();
      }
      assert.deepEqual(
        lines.map((l) => [l.level, l.message]),
        [
          ['error', 'delivery engine: claiming due deliveries failed'],
          ['info', 'delivery engine: claiming due deliveries works again'],
        ],
      );
      assert.equal(lines[1]!.fields.failures, 3);
    } finally {
      await t.close();
    }
  });
});
