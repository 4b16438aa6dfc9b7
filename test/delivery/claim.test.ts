// Which connectors a claim reads and asks: in the rotation's order, only as many as its total can reach. With
// 10,000 connectors, reading every one with rows due at each claim raised the service's memory peak.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimDue } from '../../src/delivery/claim.ts';
import { RETENTION_MICROS } from '../../src/delivery/retry.ts';
import { nowMicros } from '../../src/runtime/clock.ts';
import type { Repos, Store } from '../../src/store/contract/store.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

async function connector(t: TestContext): Promise<string> {
  const res = await t.request('POST', `/v2/projects/${t.projectId}/dataconnectors`, {
    body: { type: 'HTTP_PUSH', httpConfig: { url: 'https://example.com/h' } },
  });
  assert.equal(res.status, 200, res.text);
  return res.body.name.split('/')[3];
}

describe('claimDue', () => {
  it('reads and asks only the connectors its total can reach, from where the rotation starts', async () => {
    const t = await createTestContext();
    try {
      const now = nowMicros(t.deps);
      for (let c = 0; c < 6; c++) {
        const id = await connector(t);
        await t.deps.store.transaction((tx) =>
          tx.deliveries.add(
            Array.from({ length: 3 }, (_, i) => ({
              connectorId: id,
              eventId: `e${c}-${i}`,
              body: Buffer.from('{}'),
              enqueueTime: now,
              dueTime: now,
            })),
          ),
        );
      }
      // The order the claim sees them in.
      const due = await t.deps.store.deliveries.connectorsWithDue(now, now - RETENTION_MICROS);
      assert.equal(due.length, 6);

      const read: string[][] = [];
      const asked: string[][] = [];
      const watch = (tx: Repos): Repos => ({
        ...tx,
        dataConnectors: {
          ...tx.dataConnectors,
          getMany: (ids) => (read.push([...ids]), tx.dataConnectors.getMany(ids)),
        },
        deliveries: {
          ...tx.deliveries,
          claimMany: (asks, ...rest) => (
            asked.push(asks.map((a) => a.connectorId)), tx.deliveries.claimMany(asks, ...rest)
          ),
        },
      });
      const store: Store = {
        ...t.deps.store,
        transaction: (fn, options) => t.deps.store.transaction((tx) => fn(watch(tx)), options),
      };

      // Two free slots each and five in all: three connectors can take them, from the second on.
      const claim = await claimDue(store, {
        now,
        leaseMicros: 60_000_000,
        capacityOf: () => 2,
        total: 5,
        rotation: 1,
        cluster: null,
      });
      assert.deepEqual(read, [due.slice(1, 4)]);
      assert.deepEqual(asked, [due.slice(1, 4)]);
      const taken = new Map<string, number>();
      for (const item of claim.items) taken.set(item.connector.id, (taken.get(item.connector.id) ?? 0) + 1);
      assert.deepEqual(Object.fromEntries(taken), { [due[1]!]: 2, [due[2]!]: 2, [due[3]!]: 1 });
      // None of them was drained (each still has rows due), and the ones not asked are still due.
      assert.deepEqual([...claim.drained], []);
      assert.deepEqual([...claim.due!].sort(), [...due].sort());

      // The rotation wraps around: from the last connector, then the first.
      read.length = 0;
      await claimDue(store, {
        now,
        leaseMicros: 60_000_000,
        capacityOf: () => 2,
        total: 3,
        rotation: 5,
        cluster: null,
      });
      assert.deepEqual(read, [[due[5], due[0]]]);
    } finally {
      await t.close();
    }
  });
});
