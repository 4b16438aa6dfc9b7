// What an outcome does (outcomes.ts): the rule, pure (effectOf), and the recorder's group commit on the test store.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUTO_DISABLE_AFTER_MICROS, type ConnectorState } from '../../src/domain/connector-status.ts';
import type { ClaimedDelivery } from '../../src/delivery/claim.ts';
import { createOutcomeRecorder, effectOf, type Disabled } from '../../src/delivery/outcomes.ts';
import { RETENTION_MS } from '../../src/delivery/retry.ts';
import type { AttemptOutcome } from '../../src/delivery/types.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { Store } from '../../src/store/contract/store.ts';
import type { DataConnectorRecord } from '../../src/store/contract/connector-repos.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

const ok: AttemptOutcome = { ok: true, reason: 'ack', status: 200, responseTimeMs: 5, message: '200' };
const failed = (responseTimeMs = 5, retryAfterSeconds?: number): AttemptOutcome => ({
  ok: false,
  reason: 'http_status',
  status: 503,
  responseTimeMs,
  message: '503',
  retryAfterSeconds,
});
const ACTIVE: ConnectorState = { status: 'ACTIVE', failingSince: null };
/** The engine's default lease (60 s). */
const LEASE_MICROS = 60_000_000;

describe('the effect of an outcome', () => {
  const row = { attempts: 0, enqueueTime: 0 };

  it('an ack deletes the row and ends a failing period', () => {
    assert.deepEqual(effectOf(ACTIVE, row, ok, 1000), { kind: 'ack', state: null });
    assert.deepEqual(effectOf({ status: 'ACTIVE', failingSince: 5 }, row, ok, 1000), {
      kind: 'ack',
      state: { status: 'ACTIVE', failingSince: null },
    });
  });

  it('a failure reschedules by the retry schedule and starts the failing period', () => {
    assert.deepEqual(effectOf(ACTIVE, row, failed(), 1000), {
      kind: 'retry',
      attempts: 1,
      dueMs: 9000,
      state: { status: 'ACTIVE', failingSince: 1_000_000 },
    });
    assert.deepEqual(effectOf({ status: 'ACTIVE', failingSince: 1 }, { attempts: 3, enqueueTime: 0 }, failed(), 1000), {
      kind: 'retry',
      attempts: 4,
      dueMs: 65_000,
      state: null,
    });
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
    assert.deepEqual(effectOf(since, recent, failed(), AUTO_DISABLE_AFTER_MICROS / 1000), {
      kind: 'disable',
      state: { status: 'SYSTEM_DISABLED', failingSince: 0 },
    });
  });

  it('a failure of a connector disabled meanwhile is counted but not retried', () => {
    assert.deepEqual(effectOf({ status: 'USER_DISABLED', failingSince: null }, row, failed(), 1000), {
      kind: 'discard',
    });
  });
});

/** A connector created through the API: its wire form, and its record in the store. */
async function newConnector(t: TestContext): Promise<{ connector: { name: string }; c: DataConnectorRecord }> {
  const connector = (
    await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
      body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.com/h' } },
    })
  ).body;
  return { connector, c: (await t.deps.store.dataConnectors.get(connector.name.split('/')[3]))! };
}

describe('the outcome recorder', () => {
  it('records outcomes that arrive together in one group, each with its effects, and counts them', async () => {
    const t = await createTestContext();
    try {
      const { connector, c } = await newConnector(t);
      const now = nowMicros(t.deps);
      const ids = await t.deps.store.deliveries.insert(
        [1, 2, 3].map((i) => ({
          connectorId: c.id,
          eventId: `e${i}`,
          body: Buffer.from('{}'),
          enqueueTime: now,
          dueTime: now,
        })),
      );
      const item = async (id: number): Promise<ClaimedDelivery> => ({
        delivery: (await t.deps.store.deliveries.get(id))!,
        connector: c,
      });
      const disabled: Disabled[] = [];
      const told: string[] = [];
      const recorder = createOutcomeRecorder(
        { ...t.deps, leaseMicros: LEASE_MICROS },
        {
          disabled: (d) => disabled.push(d),
          failing: (x) => told.push(`failing ${x.id}`),
          recovered: (x) => told.push(`recovered ${x.id}`),
        },
      );
      const endMs = t.clock.now();
      const reports = await Promise.all([
        recorder.record({ item: await item(ids[0]!), outcome: ok, startMs: endMs, endMs }),
        recorder.record({ item: await item(ids[1]!), outcome: failed(), startMs: endMs, endMs }),
        recorder.record({ item: await item(ids[2]!), outcome: ok, startMs: endMs, endMs }),
      ]);
      assert.deepEqual(
        reports.map((r) => [r.acked, r.failed]),
        [
          [1, 0],
          [0, 1],
          [1, 0],
        ],
      );
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
      await t.deps.store.deliveries.insert(
        [1, 2].map((i) => ({
          connectorId: c.id,
          eventId: `e${i}`,
          body: Buffer.from('{}'),
          enqueueTime: start,
          dueTime: start,
        })),
      );
      const attempted = await t.deps.store.deliveries.claim(c.id, start, 0, start + LEASE_MICROS, 10);
      assert.equal(attempted.length, 2);
      // The process stops past its lease; another claim takes one of the rows, whose attempt is then open.
      t.clock.advance(LEASE_MICROS / 1000 + 1_000);
      const [taken] = await t.deps.store.deliveries.claim(
        c.id,
        nowMicros(t.deps),
        0,
        nowMicros(t.deps) + LEASE_MICROS,
        1,
      );
      const recorder = createOutcomeRecorder(
        { ...t.deps, leaseMicros: LEASE_MICROS },
        { disabled: () => undefined, failing: () => undefined, recovered: () => undefined },
      );
      // Both pushes of the paused process were acknowledged; it records them now.
      const reports = await Promise.all(
        attempted.map((delivery) =>
          recorder.record({
            item: { delivery, connector: c },
            outcome: ok,
            startMs: t.clock.now(),
            endMs: t.clock.now(),
          }),
        ),
      );
      assert.deepEqual(
        reports.map((r) => r.acked),
        [1, 1],
      );
      const other = attempted.find((d) => d.id !== taken!.id)!;
      assert.equal(await t.deps.store.deliveries.get(other.id), null, 'the row nobody took: deleted');
      assert.equal(
        (await t.deps.store.deliveries.get(taken!.id))?.leaseUntil,
        taken!.leaseUntil,
        'the row taken over: left to its open attempt, still counted',
      );
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
      const ids = await t.deps.store.deliveries.insert(
        [1, 2, 3, 4].map((i) => ({
          connectorId: c.id,
          eventId: `e${i}`,
          body: Buffer.from('{}'),
          enqueueTime: now,
          dueTime: now,
        })),
      );
      // The store as the recorder sees it, counting the locked reads of its transactions (those that were made: on
      // PostgreSQL a batch of outcomes starts unlocked, and one that needs a lock is run again locked).
      let locked = 0;
      const inner = t.deps.store;
      const store: Store = {
        ...inner,
        transaction: (fn, options) =>
          inner.transaction(
            (tx) =>
              fn({
                ...tx,
                dataConnectors: {
                  ...tx.dataConnectors,
                  getForUpdate: async (id) => {
                    const got = await tx.dataConnectors.getForUpdate(id);
                    locked++;
                    return got;
                  },
                },
              }),
            options,
          ),
      };
      const recorder = createOutcomeRecorder(
        { ...t.deps, store, leaseMicros: LEASE_MICROS },
        { disabled: () => undefined, failing: () => undefined, recovered: () => undefined },
      );
      const record = async (id: number, outcome: AttemptOutcome) =>
        recorder.record({
          item: { delivery: (await inner.deliveries.get(id))!, connector: c },
          outcome,
          startMs: t.clock.now(),
          endMs: t.clock.now(),
        });
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
      const [row, other] = await t.deps.store.deliveries.insert(
        [1, 2].map((i) => ({
          connectorId: id,
          eventId: `e${i}`,
          body: Buffer.from('{}'),
          enqueueTime: now,
          dueTime: now,
        })),
      );
      const disabled: Disabled[] = [];
      const recorder = createOutcomeRecorder(
        { ...t.deps, leaseMicros: LEASE_MICROS },
        { disabled: (d) => disabled.push(d), failing: () => undefined, recovered: () => undefined },
      );
      t.clock.advance(AUTO_DISABLE_AFTER_MICROS / 1000);
      const report = await recorder.record({
        item: { delivery: (await t.deps.store.deliveries.get(row!))!, connector: c },
        outcome: failed(),
        startMs: t.clock.now(),
        endMs: t.clock.now(),
      });
      assert.equal(report.dropped, 2);
      assert.equal((await t.deps.store.dataConnectors.get(id))!.status, 'SYSTEM_DISABLED');
      assert.equal(await t.deps.store.deliveries.get(other!), null);
      assert.deepEqual(
        disabled.map((d) => [d.connector.id, d.dropped]),
        [[id, 2]],
      );
    } finally {
      await t.close();
    }
  });
});
