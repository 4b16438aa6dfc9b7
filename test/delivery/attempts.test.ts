// Attempts alone, with the fake clock (attempts.ts): the slot given back when the push ends, before the outcome is
// recorded; health from each outcome; a row whose lease is half over never pushed; a dispatcher that throws; the
// rows counted out of the cluster's attempts in flight until their outcomes commit. The engine tests check them wired.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAttempts, type AttemptDeps } from '../../src/delivery/attempts.ts';
import type { ClaimedDelivery } from '../../src/delivery/claim.ts';
import { EndedRows } from '../../src/delivery/ended-rows.ts';
import type { Finished, RunReport } from '../../src/delivery/outcomes.ts';
import { createSlots } from '../../src/delivery/slots.ts';
import type { Dispatcher } from '../../src/delivery/types.ts';
import { FakeClock } from '../../src/runtime/clock.ts';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import type { DataConnectorRecord } from '../../src/store/contract/connector-repos.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { FakeDispatcher } from '../helpers/fake-dispatcher.ts';

const LEASE_MICROS = 60_000_000;

/** A recorder that keeps what it is handed and commits only when told. */
function heldRecorder() {
  const handed: Finished[] = [];
  const commits: Array<() => void> = [];
  return {
    handed,
    record(done: Finished): Promise<RunReport> {
      handed.push(done);
      return new Promise((resolve) =>
        commits.push(() =>
          resolve({ attempted: 1, acked: done.outcome.ok ? 1 : 0, failed: done.outcome.ok ? 0 : 1, dropped: 0 }),
        ),
      );
    },
    commit() {
      for (const resolve of commits.splice(0)) resolve();
    },
  };
}

let rowId = 0;
function row(
  clock: FakeClock,
  connectorId = 'c1',
  leaseUntil: number | null = Math.floor(clock.now() * 1000) + LEASE_MICROS,
): ClaimedDelivery {
  const id = ++rowId;
  return {
    delivery: {
      id,
      connectorId,
      eventId: `e${id}`,
      body: Buffer.from(`{"event":{"eventId":"e${id}"}}`),
      enqueueTime: 0,
      dueTime: 0,
      attempts: 0,
      leaseUntil,
    },
    connector: {
      id: connectorId,
      projectId: 'p1',
      url: `https://${connectorId}.example/hook`,
      headers: {},
      signatureSecretSealed: 'sealed',
    } as unknown as DataConnectorRecord,
  };
}

function setup(overrides: Partial<AttemptDeps> = {}, clock = new FakeClock()) {
  const slots = createSlots(clock, {
    perConnector: 4,
    perFailingConnector: 1,
    total: 8,
    suspectTotal: 4,
    suspectAfterMs: 1000,
  });
  const fake = new FakeDispatcher({ clock, responseTimeMs: 30 });
  const recorder = heldRecorder();
  const freed: string[] = [];
  const attempts = createAttempts({
    clock,
    logger: createSilentLogger(),
    dispatcher: fake,
    slots,
    outcomes: recorder,
    openSecret: (sealed) => `opened ${sealed}`,
    leaseMicros: LEASE_MICROS,
    ended: null,
    freed: (id) => freed.push(id),
    ...overrides,
  });
  return { clock, slots, fake, recorder, freed, attempts };
}

/** Waits (a loop turn at a time, at most 1,000) until `cond` holds. */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
}

/** Lets every promise settled so far run its callbacks (no time passes). */
const turn = () => new Promise((r) => setImmediate(r));

describe('attempts', () => {
  it('gives the slot back when the push ends, before the outcome is recorded, and resolves once it is', async () => {
    const { clock, slots, fake, recorder, freed, attempts } = setup();
    const start = clock.now();
    const item = row(clock);
    const [run] = attempts.launch([item]);
    assert.equal(slots.inFlightTotal, 1, 'launch takes the slot');
    let report: RunReport | null = null;
    void run!.then((r) => (report = r));
    await turn();
    assert.deepEqual(
      fake.calls.map((c) => c.target),
      [{ url: 'https://c1.example/hook', headers: {}, signatureSecret: 'opened sealed', probe: false }],
    );
    assert.equal(slots.inFlightTotal, 0, 'the push ended: its slot is free');
    assert.deepEqual(freed, ['c1']);
    assert.equal(recorder.handed.length, 1);
    assert.equal(recorder.handed[0]!.endMs, start + 30, 'ends after the response time');
    assert.equal(report, null, 'not recorded yet');
    recorder.commit();
    assert.deepEqual(await run, { attempted: 1, acked: 1, failed: 0, dropped: 0 });
  });

  it("a paced row waits for its start time, and a late one does not bunch the next ones: the rate's check holds them", async () => {
    const clock = new FakeClock();
    const waits: number[] = [];
    // The first wait's timer fires 25 ms late (a busy event loop); the others on time.
    const wait = async (ms: number) => {
      waits.push(ms);
      clock.advance(waits.length === 1 ? ms + 25 : ms);
    };
    const { fake, recorder, attempts } = setup({ wait }, clock);
    fake.responseTimeMs = 0;
    const t0 = clock.now() * 1000;
    const paced = (startAt: number): ClaimedDelivery => {
      const item = row(clock);
      return {
        ...item,
        connector: {
          ...item.connector,
          deliveryConfig: { maxConcurrency: 64, maxRate: 100, labelFilters: {}, paused: false },
        },
        startAt,
      };
    };
    // Start times 10 ms apart (maxRate 100), the first 10 ms from now.
    const runs = attempts.launch([paced(t0 + 10_000), paced(t0 + 20_000), paced(t0 + 30_000)]);
    await until(() => fake.calls.length === 3);
    const starts = fake.calls.map((c) => c.at - t0 / 1000);
    // The first started 25 ms late, at 35 ms. The second, due at 20 ms, may follow half a spacing after the rate's
    // next time (45 ms), at 40 ms, and the third at 50 ms: not all three at 35 ms, and no later than the rate needs.
    assert.deepEqual(starts, [35, 40, 50]);
    recorder.commit();
    await Promise.all(runs);
  });

  it("signs with the previous secret too while a rotation's overlap runs at the attempt's start (§X3), pushOnce too", async () => {
    const { clock, fake, recorder, attempts } = setup();
    const untilMs = clock.now() + 5000;
    const until = untilMs * 1000;
    const rotating = (item: ClaimedDelivery): ClaimedDelivery => ({
      ...item,
      connector: {
        ...item.connector,
        signatureSecretSealed: 'sealed-new',
        previousSignatureSecretSealed: 'sealed-old',
        previousSignatureSecretExpireTime: until,
      },
    });
    const runs = attempts.launch([rotating(row(clock))]);
    await attempts.pushOnce(rotating(row(clock)).connector, Buffer.from('{}'), 'TEST');
    // (Each push moves the fake clock by its 30 ms.)
    clock.set(untilMs - 1);
    runs.push(...attempts.launch([rotating(row(clock))]));
    clock.set(untilMs); // the overlap ends: at its expire time, the previous secret signs no more
    runs.push(...attempts.launch([rotating(row(clock))]));
    await attempts.pushOnce(rotating(row(clock)).connector, Buffer.from('{}'), 'TEST');
    await turn();
    assert.deepEqual(
      fake.calls.map((c) => [c.target.signatureSecret, c.target.previousSignatureSecret]),
      [
        ['opened sealed-new', 'opened sealed-old'],
        ['opened sealed-new', 'opened sealed-old'],
        ['opened sealed-new', 'opened sealed-old'],
        ['opened sealed-new', undefined],
        ['opened sealed-new', undefined],
      ],
    );
    assert.ok(!('previousSignatureSecret' in fake.calls[3]!.target), 'no key at all after the overlap');
    recorder.commit();
    await Promise.all(runs);
  });

  it('a failed push makes the connector failing: its next attempt is a probe, in one slot', async () => {
    const { clock, slots, fake, recorder, attempts } = setup();
    fake.answer = 503;
    const first = attempts.launch([row(clock)]);
    await turn();
    assert.equal(slots.suspect('c1'), true);
    assert.equal(slots.capacityOf('c1'), 1);
    fake.answer = 200;
    const second = attempts.launch([row(clock)]);
    await turn();
    assert.deepEqual(
      fake.calls.map((c) => c.target.probe),
      [false, true],
    );
    assert.equal(slots.suspect('c1'), false, 'a success ends it');
    recorder.commit();
    await Promise.all([...first, ...second]);
  });

  it('does not push a row whose lease is half over; one with exactly half left is pushed', async () => {
    const { logger, lines } = capturedLog(['warn']);
    const { clock, slots, fake, recorder, freed, attempts } = setup({ logger });
    const now = Math.floor(clock.now() * 1000);
    const [late] = attempts.launch([row(clock, 'c1', now + LEASE_MICROS / 2 - 1)]);
    assert.deepEqual(await late, { attempted: 0, acked: 0, failed: 0, dropped: 0 });
    assert.equal(fake.calls.length, 0, 'never pushed');
    assert.equal(slots.inFlightTotal, 0, 'its slot is given back');
    assert.deepEqual(freed, ['c1']);
    const [inTime] = attempts.launch([row(clock, 'c1', now + LEASE_MICROS / 2)]);
    await turn();
    assert.equal(fake.calls.length, 1);
    recorder.commit();
    await inTime;
    assert.equal(lines.length, 1, 'said once a turn');
    assert.equal(lines[0]!.fields.rows, 1);
  });

  it('a dispatcher that throws is a failed attempt like any other: the row is not lost', async () => {
    const clock = new FakeClock();
    const throwing: Dispatcher = {
      send: async () => {
        clock.advance(7);
        throw new Error('boom');
      },
      close: async () => undefined,
    };
    const { recorder, attempts } = setup({ dispatcher: throwing }, clock);
    const [run] = attempts.launch([row(clock)]);
    await turn();
    const { outcome } = recorder.handed[0]!;
    assert.deepEqual([outcome.ok, outcome.reason, outcome.responseTimeMs], [false, 'connection', 7]);
    assert.match(outcome.message, /dispatcher error: boom/);
    recorder.commit();
    assert.equal((await run).failed, 1);
  });

  it('idle() waits until every attempt begun is recorded', async () => {
    const { clock, fake, recorder, attempts } = setup();
    await attempts.idle(); // none: at once
    fake.hold();
    const runs = attempts.launch([row(clock), row(clock, 'c2')]);
    let idle = false;
    const waiting = attempts.idle().then(() => (idle = true));
    fake.release();
    await turn();
    assert.equal(idle, false, 'pushed, not recorded');
    recorder.commit();
    await waiting;
    assert.equal(idle, true);
    await Promise.all(runs);
  });

  it('names the connectors whose attempts hang, with their projects', async () => {
    const { clock, fake, recorder, attempts } = setup();
    fake.hold('https://c1.example/hook');
    const runs = attempts.launch([row(clock, 'c1'), row(clock, 'c2')]);
    await turn();
    clock.advance(1001);
    assert.deepEqual(attempts.hanging(), [{ id: 'c1', projectId: 'p1' }]);
    fake.release();
    await turn();
    assert.deepEqual(attempts.hanging(), []);
    recorder.commit();
    await Promise.all(runs);
  });

  it("on a shared store a row whose push ended counts out of the cluster's attempts in flight until it is recorded", async () => {
    const ended = new EndedRows();
    const { clock, fake, recorder, attempts } = setup({ ended });
    fake.hold();
    const item = row(clock);
    const [run] = attempts.launch([item]);
    await turn();
    assert.equal(ended.of('c1'), undefined, 'in flight');
    fake.release();
    await turn();
    assert.deepEqual([...ended.of('c1')!], [item.delivery.id], 'ended, recording');
    recorder.commit();
    await run;
    await turn();
    assert.equal(ended.of('c1'), undefined, 'recorded');
  });
});
