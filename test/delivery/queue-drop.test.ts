// Dropping a connector's queue (disable, delete, 5 days of failures): a piece per transaction, so a long queue never
// holds the writer; counted as dropped; nothing of it reaches the endpoint, even when a drop was cut short.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimDue, DROP_PIECE, dropQueue } from '../../src/delivery/claim.ts';
import { series } from '../../src/delivery/metrics.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';
import { createTestStoreWrapping, testStoreKind } from '../helpers/store.ts';

const ROWS = 2 * DROP_PIECE + 500;

async function connector(t: TestContext, status = 'ACTIVE'): Promise<string> {
  const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.com/h' }, status },
  });
  assert.equal(res.status, 200, res.text);
  return res.body.name.split('/')[3];
}

async function queue(t: TestContext, connectorId: string, n: number, dueTime = nowMicros(t.deps)): Promise<void> {
  const now = nowMicros(t.deps);
  await t.deps.store.transaction((tx) =>
    tx.deliveries.add(
      Array.from({ length: n }, (_, i) => ({
        connectorId,
        eventId: `e${i}`,
        body: Buffer.from('{}'),
        enqueueTime: now,
        dueTime,
      })),
    ),
  );
}

/** Rows of the connector still queued, whatever their due time or lease. */
const left = async (t: TestContext, connectorId: string) =>
  (await t.deps.store.deliveries.claim(connectorId, Number.MAX_SAFE_INTEGER, 0, Number.MAX_SAFE_INTEGER, ROWS * 2))
    .length;

const dropped = async (t: TestContext) =>
  (await t.deps.store.connectorMetrics.counters())[series.deliveries('dropped')] ?? 0;

/** The test store, telling `onPiece` how many rows each deleteByConnector of a transaction removed. */
const watched = (onPiece: (n: number) => void) =>
  createTestStoreWrapping((tx) => ({
    ...tx,
    deliveries: {
      ...tx.deliveries,
      deleteByConnector: async (id, limit, logAt) => {
        const n = await tx.deliveries.deleteByConnector(id, limit, logAt);
        onPiece(n);
        return n;
      },
    },
  }));

describe("dropping a connector's queue", () => {
  it('disabling drops it a piece per transaction, counted; other writes go between the pieces; other queues stay', async () => {
    const order: string[] = [];
    let publishing: Promise<unknown> | null = null;
    const t = await createTestContext({
      store: watched((n) => {
        order.push(`piece ${n}`);
        // A publish asked for while the first piece is being deleted.
        publishing ??= t.deps.events
          .transaction((_tx, emit) =>
            emit(device, 'touch', { touch: { updateTime: '2025-06-01T12:00:00.000000Z' } }, nowMicros(t.deps)),
          )
          .then(() => order.push('publish'));
      }),
    });
    const device = await t.createDevice();
    try {
      const [off, on] = [await connector(t), await connector(t)];
      await queue(t, off, ROWS);
      await queue(t, on, 3);
      const before = await dropped(t);
      const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${off}`, {
        body: { status: 'USER_DISABLED' },
      });
      assert.equal(res.status, 200, res.text);
      await publishing;
      const pieces = order.filter((o) => o.startsWith('piece')).map((o) => Number(o.split(' ')[1]));
      assert.deepEqual(pieces, [DROP_PIECE, DROP_PIECE, 500, 0], 'no transaction holds more than a piece');
      assert.equal(await left(t, off), 0);
      assert.equal((await dropped(t)) - before, ROWS);
      assert.equal(await left(t, on), 4, "the other connector's rows, and the publish's, stay");
      // One writer (SQLite): the publish, waiting for it, commits between two pieces. (PostgreSQL writes side by side.)
      if (testStoreKind() === 'sqlite')
        assert.ok(order.indexOf('publish') < order.indexOf('piece 0'), order.join(', '));
    } finally {
      await t.close();
    }
  });

  it('deleting drops it the same way', async () => {
    const pieces: number[] = [];
    const t = await createTestContext({ store: watched((n) => pieces.push(n)) });
    try {
      const id = await connector(t);
      await queue(t, id, ROWS);
      const before = await dropped(t);
      const res = await t.request('DELETE', `/v2/projects/${t.projectId}/dataconnectors/${id}`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(pieces, [DROP_PIECE, DROP_PIECE, 500, 0]);
      assert.equal(await left(t, id), 0);
      assert.equal((await dropped(t)) - before, ROWS);
    } finally {
      await t.close();
    }
  });

  it('enabling a connector whose drop was cut short drops the rest first: none of it is sent; rows queued after stay', async () => {
    const t = await createTestContext();
    try {
      const id = await connector(t, 'USER_DISABLED');
      // What a process that died in the middle of a drop leaves behind.
      await queue(t, id, DROP_PIECE + 7);
      const before = await dropped(t);
      const res = await t.request('PATCH', `/v2/projects/${t.projectId}/dataconnectors/${id}`, {
        body: { status: 'ACTIVE' },
      });
      assert.equal(res.body.status, 'ACTIVE', res.text);
      assert.equal(await left(t, id), 0);
      assert.equal((await dropped(t)) - before, DROP_PIECE + 7);
      await queue(t, id, 2);
      assert.equal(await left(t, id), 2);
    } finally {
      await t.close();
    }
  });

  it('drops nothing of a connector that is ACTIVE (enabled again while a drop was under way)', async () => {
    const t = await createTestContext();
    try {
      const id = await connector(t);
      await queue(t, id, 5);
      assert.equal(await dropQueue(t.deps.store, id), 0);
      assert.equal(await left(t, id), 5);
    } finally {
      await t.close();
    }
  });

  it('a claim drops, a piece at a time and counted, the due rows a drop left of a disabled or deleted connector', async () => {
    const t = await createTestContext();
    try {
      const [disabled, deleted] = [await connector(t, 'USER_DISABLED'), await connector(t)];
      const now = nowMicros(t.deps);
      await queue(t, disabled, 3, now);
      await queue(t, deleted, 2, now);
      await t.deps.store.dataConnectors.delete(deleted);
      const before = await dropped(t);
      const claim = await claimDue(t.deps.store, {
        now,
        leaseMicros: 60_000_000,
        capacityOf: () => 10,
        total: 100,
        rotation: 0,
        cluster: null,
      });
      assert.deepEqual(claim.items, []);
      assert.deepEqual([await left(t, disabled), await left(t, deleted)], [0, 0]);
      assert.equal((await dropped(t)) - before, 5);
    } finally {
      await t.close();
    }
  });
});
