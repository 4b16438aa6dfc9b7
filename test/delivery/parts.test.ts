// The delivery engine's parts alone, with the fake clock: attempt slots and health (slots.ts), the backlog
// (backlog.ts), the hand-off's lines (lines.ts), the outcome rule and its recorder (outcomes.ts). The engine tests
// (engine.test.ts) check them wired together.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUTO_DISABLE_AFTER_MICROS, type ConnectorState } from '../../src/domain/connector-status.ts';
import { Backlog } from '../../src/delivery/backlog.ts';
import type { ClaimedDelivery } from '../../src/delivery/claim.ts';
import { Lines } from '../../src/delivery/lines.ts';
import { createOutcomeRecorder, effectOf, type Disabled } from '../../src/delivery/outcomes.ts';
import { RETENTION_MS } from '../../src/delivery/retry.ts';
import { createSlots } from '../../src/delivery/slots.ts';
import type { AttemptOutcome } from '../../src/delivery/types.ts';
import { FakeClock, nowMicros } from '../../src/runtime/clock.ts';
import type { Store } from '../../src/store/contract/store.ts';
import type { DataConnectorRecord } from '../../src/store/contract/connector-repos.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

const ok: AttemptOutcome = { ok: true, reason: 'ack', status: 200, responseTimeMs: 5, message: '200' };
const failed = (responseTimeMs = 5, retryAfterSeconds?: number): AttemptOutcome =>
  ({ ok: false, reason: 'http_status', status: 503, responseTimeMs, message: '503', retryAfterSeconds });
const ACTIVE: ConnectorState = { status: 'ACTIVE', failingSince: null };
/** The engine's default lease (60 s). */
const LEASE_MICROS = 60_000_000;

describe('slots', () => {
  const options = { perConnector: 4, perFailingConnector: 1, total: 6, suspectTotal: 3, suspectAfterMs: 1000 };

  it('failing and suspect connectors together hold at most suspectTotal slots, however many they are', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    const dead = ['d1', 'd2', 'd3', 'd4', 'd5'];
    for (const id of dead) {
      slots.started(id, clock.now());
      slots.ended(id, clock.now(), false);
    }
    let probes = 0;
    for (const id of dead) {
      while (slots.capacityOf(id, dead.length + 1) > 0) {
        slots.take(id);
        probes++;
      }
    }
    assert.equal(probes, 3, 'three probes in flight, not one per failing connector');
    assert.equal(slots.inFlightSuspect, 3);
    assert.equal(slots.capacityOf('healthy', dead.length + 1), 1, 'the rest of the overall cap stays for a connector that answers');
    // A slot given back makes room for one more probe, of any failing connector.
    slots.give('d1');
    assert.equal(slots.capacityOf('d4', dead.length + 1), 1);
    // A connector that turns suspect while its slots are in flight: they were taken healthy, so they do not count;
    // what it takes from now on does.
    slots.take('h');
    slots.started('h', clock.now());
    clock.advance(1001);
    assert.equal(slots.suspect('h'), true);
    assert.equal(slots.inFlightSuspect, 2);
    slots.give('h');
    assert.equal(slots.inFlightSuspect, 2);
  });

  it('connectors that answer keep their reserve while slots taken before a connector turned suspect fill the cap', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options); // total 6, suspectTotal 3: 3 kept for connectors that answer
    // Six new endpoints of unknown health take every slot, and hang.
    for (const id of ['n1', 'n2', 'n3', 'n4', 'n5', 'n6']) {
      slots.take(id);
      slots.started(id, clock.now());
    }
    assert.equal(slots.room(), 0, 'the cap is full, and nobody is known to hang yet');
    clock.advance(1001); // now they are suspect
    assert.equal(slots.suspectHeld(), 6);
    assert.equal(slots.room(), 3, 'a connector that answers may start 3 beyond the cap');
    slots.take('healthy');
    slots.take('healthy');
    assert.equal(slots.room(), 1);
  });

  it('counts slots per connector and overall', () => {
    const slots = createSlots(new FakeClock(), options);
    assert.equal(slots.capacityOf('a'), 4);
    slots.take('a');
    slots.take('a');
    slots.take('b');
    assert.equal(slots.capacityOf('a'), 2);
    assert.equal(slots.inFlightTotal, 3);
    slots.give('a');
    assert.equal(slots.capacityOf('a'), 3);
    assert.equal(slots.inFlightTotal, 2);
  });

  it('gives a fair share of the overall cap among competitors while health is unknown', () => {
    const slots = createSlots(new FakeClock(), options);
    assert.equal(slots.capacityOf('a', 3), 2); // 6 / 3
    assert.equal(slots.capacityOf('a', 10), 1); // never below the failing share
  });

  it('a failed attempt makes the connector failing (one slot) until an attempt succeeds', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    slots.started('a', clock.now());
    slots.ended('a', clock.now(), false);
    assert.equal(slots.suspect('a'), true);
    assert.equal(slots.capacityOf('a'), 1);
    slots.started('a', clock.now());
    slots.ended('a', clock.now(), true);
    assert.equal(slots.suspect('a'), false);
    assert.equal(slots.capacityOf('a'), 4);
  });

  it('an attempt in flight for longer than suspectAfterMs makes the connector suspect; its end clears it', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    const start = clock.now();
    slots.started('a', start);
    clock.advance(1000);
    assert.equal(slots.suspect('a'), false);
    clock.advance(1);
    assert.equal(slots.suspect('a'), true);
    assert.equal(slots.suspect('b'), false);
    slots.ended('a', start, true);
    assert.equal(slots.suspect('a'), false);
  });

  it('the oldest attempt in flight decides, whichever order attempts end in', () => {
    const clock = new FakeClock();
    const slots = createSlots(clock, options);
    const first = clock.now();
    slots.started('a', first);
    clock.advance(600);
    const second = clock.now();
    slots.started('a', second);
    clock.advance(600);
    assert.equal(slots.suspect('a'), true); // the first has run 1,200 ms
    slots.ended('a', first, true);
    assert.equal(slots.suspect('a'), false); // the second has run 600 ms
    clock.advance(500);
    assert.equal(slots.suspect('a'), true);
    slots.ended('a', second, true);
    assert.equal(slots.suspect('a'), false);
  });
});

describe('backlog', () => {
  it('a claim that drained a connector takes it out; one that left rows keeps it', () => {
    const backlog = new Backlog();
    backlog.mark('a');
    backlog.mark('b');
    const seen = backlog.snapshot();
    backlog.settle(seen, new Set(['a', 'b']), new Set(['a']));
    assert.equal(backlog.has('a'), false);
    assert.equal(backlog.has('b'), true);
  });

  it('a connector no longer due leaves; one due but never marked joins', () => {
    const backlog = new Backlog();
    backlog.mark('gone');
    backlog.settle(backlog.snapshot(), new Set(['new']), new Set());
    assert.equal(backlog.has('gone'), false);
    assert.equal(backlog.has('new'), true);
    assert.equal(backlog.size, 1);
  });

  it('a mark made after the claim read the queue survives that claim', () => {
    const backlog = new Backlog();
    backlog.mark('a');
    const seen = backlog.snapshot();
    backlog.mark('a'); // a fresh row was queued as due while the claim ran
    backlog.settle(seen, new Set(), new Set());
    assert.equal(backlog.has('a'), true);
  });
});

describe('lines', () => {
  const row = (connectorId: string, id: number): ClaimedDelivery => ({
    delivery: { id, connectorId, eventId: `e${id}`, body: Buffer.from('{}'), enqueueTime: 0, dueTime: 0, attempts: 0, leaseUntil: 1 },
    connector: { id: connectorId } as ClaimedDelivery['connector'],
  });

  it('places are bounded per connector and overall', () => {
    const lines = new Lines(2, 3);
    lines.place('a');
    lines.place('a');
    assert.equal(lines.hasRoom('a'), false);
    assert.equal(lines.hasRoom('b'), true);
    lines.place('b');
    assert.equal(lines.hasRoom('b'), false); // 3 places overall
    lines.unplace('a');
    assert.equal(lines.hasRoom('b'), true);
  });

  it('rows leave in queue order, giving their places back; an empty line is gone', () => {
    const lines = new Lines(4, 4);
    for (const id of [1, 2]) {
      lines.place('a');
      lines.push(row('a', id));
    }
    assert.equal(lines.first('a')!.delivery.id, 1);
    assert.equal(lines.shift('a')!.delivery.id, 1);
    assert.equal(lines.waiting('a'), 1);
    assert.equal(lines.shift('a')!.delivery.id, 2);
    assert.equal(lines.has('a'), false);
    assert.equal(lines.waiting('a'), 0);
    assert.equal(lines.shift('a'), undefined);
  });

  it('dropping a line returns its rows and frees their places, reservations kept', () => {
    const lines = new Lines(4, 4);
    lines.place('a');
    lines.push(row('a', 1));
    lines.place('a'); // reserved, not committed yet
    assert.deepEqual(lines.drop('a')!.map((r) => r.delivery.id), [1]);
    assert.equal(lines.waiting('a'), 1);
    assert.equal(lines.drop('a'), undefined);
  });
});

describe('the effect of an outcome', () => {
  const row = { attempts: 0, enqueueTime: 0 };

  it('an ack deletes the row and ends a failing period', () => {
    assert.deepEqual(effectOf(ACTIVE, row, ok, 1000), { kind: 'ack', state: null });
    assert.deepEqual(effectOf({ status: 'ACTIVE', failingSince: 5 }, row, ok, 1000), { kind: 'ack', state: { status: 'ACTIVE', failingSince: null } });
  });

  it('a failure reschedules by the retry schedule and starts the failing period', () => {
    assert.deepEqual(effectOf(ACTIVE, row, failed(), 1000), { kind: 'retry', attempts: 1, dueMs: 9000, state: { status: 'ACTIVE', failingSince: 1_000_000 } });
    assert.deepEqual(effectOf({ status: 'ACTIVE', failingSince: 1 }, { attempts: 3, enqueueTime: 0 }, failed(), 1000), { kind: 'retry', attempts: 4, dueMs: 65_000, state: null });
  });

  it('a slow failure waits four times its response time; a Retry-After may only lengthen it', () => {
    assert.equal((effectOf(ACTIVE, row, failed(3000), 0) as { dueMs: number }).dueMs, 12_000);
    assert.equal((effectOf(ACTIVE, row, failed(5, 100), 0) as { dueMs: number }).dueMs, 100_000);
  });

  it('a failure whose next attempt would fall after 12 hours from enqueue drops the row', () => {
    assert.deepEqual(effectOf(ACTIVE, { attempts: 10, enqueueTime: 0 }, failed(), RETENTION_MS - 1000).kind, 'expire');
  });

  it('5 days of failures without a success disable the connector', () => {
    const since = { status: 'ACTIVE' as const, failingSince: 0 };
    const recent = { attempts: 0, enqueueTime: AUTO_DISABLE_AFTER_MICROS - 60_000_000 }; // queued a minute before
    assert.equal(effectOf(since, recent, failed(), AUTO_DISABLE_AFTER_MICROS / 1000 - 1).kind, 'retry');
    assert.deepEqual(effectOf(since, recent, failed(), AUTO_DISABLE_AFTER_MICROS / 1000), { kind: 'disable', state: { status: 'SYSTEM_DISABLED', failingSince: 0 } });
  });

  it('a failure of a connector disabled meanwhile is counted but not retried', () => {
    assert.deepEqual(effectOf({ status: 'USER_DISABLED', failingSince: null }, row, failed(), 1000), { kind: 'discard' });
  });
});

/** A connector created through the API: its wire form, and its record in the store. */
async function newConnector(t: TestContext): Promise<{ connector: { name: string }; c: DataConnectorRecord }> {
  const connector = (await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, { body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.com/h' } } })).body;
  return { connector, c: (await t.deps.store.dataConnectors.get(connector.name.split('/')[3]))! };
}

describe('the outcome recorder', () => {
  it('records outcomes that arrive together in one group, each with its effects, and counts them', async () => {
    const t = await createTestContext();
    try {
      const { connector, c } = await newConnector(t);
      const now = nowMicros(t.deps);
      const ids = await t.deps.store.deliveries.insert([1, 2, 3].map((i) => ({ connectorId: c.id, eventId: `e${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now })));
      const item = async (id: number): Promise<ClaimedDelivery> => ({ delivery: (await t.deps.store.deliveries.get(id))!, connector: c });
      const disabled: Disabled[] = [];
      const told: string[] = [];
      const recorder = createOutcomeRecorder({ ...t.deps, leaseMicros: LEASE_MICROS }, { disabled: (d) => disabled.push(d), failing: (x) => told.push(`failing ${x.id}`), recovered: (x) => told.push(`recovered ${x.id}`) });
      const endMs = t.clock.now();
      const reports = await Promise.all([
        recorder.record({ item: await item(ids[0]!), outcome: ok, endMs }),
        recorder.record({ item: await item(ids[1]!), outcome: failed(), endMs }),
        recorder.record({ item: await item(ids[2]!), outcome: ok, endMs }),
      ]);
      assert.deepEqual(reports.map((r) => [r.acked, r.failed]), [[1, 0], [0, 1], [1, 0]]);
      assert.equal(await t.deps.store.deliveries.get(ids[0]!), null);
      assert.equal((await t.deps.store.deliveries.get(ids[1]!))!.attempts, 1);
      const metrics = (await t.request('GET', `/v2/${connector.name}:metrics`)).body.metrics;
      assert.deepEqual([metrics.successCount, metrics.errorCount], [2, 1]);
      // The failure, then the successes: the connector was failing for a moment and is not any more.
      assert.equal((await t.deps.store.dataConnectors.get(c.id))!.failingSince, null);
      assert.deepEqual(disabled, []);
      assert.deepEqual(told, [`failing ${c.id}`, `recovered ${c.id}`]);
      await recorder.settled();
    } finally {
      await t.close();
    }
  });

  it('an acknowledgement recorded after half its lease deletes the row only under that lease (a process paused past it)', async () => {
    const t = await createTestContext();
    try {
      const { c } = await newConnector(t);
      const start = nowMicros(t.deps);
      await t.deps.store.deliveries.insert([1, 2].map((i) => ({ connectorId: c.id, eventId: `e${i}`, body: Buffer.from('{}'), enqueueTime: start, dueTime: start })));
      const attempted = await t.deps.store.deliveries.claim(c.id, start, 0, start + LEASE_MICROS, 10);
      assert.equal(attempted.length, 2);
      // The process stops past its lease; another claim takes one of the rows, whose attempt is then open.
      t.clock.advance(LEASE_MICROS / 1000 + 1_000);
      const [taken] = await t.deps.store.deliveries.claim(c.id, nowMicros(t.deps), 0, nowMicros(t.deps) + LEASE_MICROS, 1);
      const recorder = createOutcomeRecorder({ ...t.deps, leaseMicros: LEASE_MICROS }, { disabled: () => undefined, failing: () => undefined, recovered: () => undefined });
      // Both pushes of the paused process were acknowledged; it records them now.
      const reports = await Promise.all(attempted.map((delivery) => recorder.record({ item: { delivery, connector: c }, outcome: ok, endMs: t.clock.now() })));
      assert.deepEqual(reports.map((r) => r.acked), [1, 1]);
      const other = attempted.find((d) => d.id !== taken!.id)!;
      assert.equal(await t.deps.store.deliveries.get(other.id), null, 'the row nobody took: deleted');
      assert.equal((await t.deps.store.deliveries.get(taken!.id))?.leaseUntil, taken!.leaseUntil, 'the row taken over: left to its open attempt, still counted');
      await recorder.settled();
    } finally {
      await t.close();
    }
  });

  it('locks the connector only to write its state: not for acknowledgements to a healthy one', async () => {
    const t = await createTestContext();
    try {
      const { c } = await newConnector(t);
      const now = nowMicros(t.deps);
      const ids = await t.deps.store.deliveries.insert([1, 2, 3, 4].map((i) => ({ connectorId: c.id, eventId: `e${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now })));
      // The store as the recorder sees it, counting the locked reads of its transactions (those that were made: on
      // PostgreSQL a batch of outcomes starts unlocked, and one that needs a lock is run again locked).
      let locked = 0;
      const inner = t.deps.store;
      const store: Store = {
        ...inner,
        transaction: (fn, options) => inner.transaction((tx) => fn({
          ...tx,
          dataConnectors: {
            ...tx.dataConnectors,
            getForUpdate: async (id) => {
              const got = await tx.dataConnectors.getForUpdate(id);
              locked++;
              return got;
            },
          },
        }), options),
      };
      const recorder = createOutcomeRecorder({ ...t.deps, store, leaseMicros: LEASE_MICROS }, { disabled: () => undefined, failing: () => undefined, recovered: () => undefined });
      const record = async (id: number, outcome: AttemptOutcome) =>
        recorder.record({ item: { delivery: (await inner.deliveries.get(id))!, connector: c }, outcome, endMs: t.clock.now() });
      await record(ids[0]!, ok);
      assert.equal(locked, 0, 'an acknowledgement to a healthy connector');
      await record(ids[1]!, failed());
      assert.equal(locked, 1, 'the first failure starts the failing period');
      await record(ids[2]!, failed());
      assert.equal(locked, 1, 'a failure while failing changes nothing of the connector');
      await record(ids[3]!, ok);
      assert.equal(locked, 2, 'the acknowledgement that ends the failing period');
      assert.equal((await inner.dataConnectors.get(c.id))!.failingSince, null);
    } finally {
      await t.close();
    }
  });

  it('a failure after 5 days disables the connector, drops its queue and says so after the commit', async () => {
    const t = await createTestContext();
    try {
      const { connector } = await newConnector(t);
      const id = connector.name.split('/')[3];
      await t.deps.store.dataConnectors.updateState(id, 'ACTIVE', nowMicros(t.deps), nowMicros(t.deps));
      const c = (await t.deps.store.dataConnectors.get(id))!;
      const now = nowMicros(t.deps);
      const [row, other] = await t.deps.store.deliveries.insert([1, 2].map((i) => ({ connectorId: id, eventId: `e${i}`, body: Buffer.from('{}'), enqueueTime: now, dueTime: now })));
      const disabled: Disabled[] = [];
      const recorder = createOutcomeRecorder({ ...t.deps, leaseMicros: LEASE_MICROS }, { disabled: (d) => disabled.push(d), failing: () => undefined, recovered: () => undefined });
      t.clock.advance(AUTO_DISABLE_AFTER_MICROS / 1000);
      const report = await recorder.record({ item: { delivery: (await t.deps.store.deliveries.get(row!))!, connector: c }, outcome: failed(), endMs: t.clock.now() });
      assert.equal(report.dropped, 2);
      assert.equal((await t.deps.store.dataConnectors.get(id))!.status, 'SYSTEM_DISABLED');
      assert.equal(await t.deps.store.deliveries.get(other!), null);
      assert.deepEqual(disabled.map((d) => [d.connector.id, d.dropped]), [[id, 2]]);
    } finally {
      await t.close();
    }
  });
});
