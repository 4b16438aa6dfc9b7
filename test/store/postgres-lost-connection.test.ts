// PostgreSQL only: a connection lost in the middle of a transaction (the server restarted, the backend killed, the
// network cut). The transaction is reported (503) or run again, never half-applied, and the process goes on.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ApiError } from '../../src/domain/errors.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import type { Repos } from '../../src/store/contract/store.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { device, event, organization, row, seedConnector, T0 } from './contract/fixtures.ts';
import { sleep } from '../helpers/until.ts';

function deferred(): { promise: Promise<void>; resolve(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('postgres: a connection lost mid-transaction', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: PostgresStore;
  before(async () => {
    db = await createTestDatabase();
    store = await createPostgresStore(db.url, { poolSize: 4 });
  });
  after(async () => {
    await store?.close();
    await db?.drop();
  });

  /** Ends, from outside, every connection of the store's database that is inside a transaction now. */
  const killOpenTransactions = async (): Promise<number> => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ killed: boolean }>(
        `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`,
      );
      return rows.filter((r) => r.killed).length;
    } finally {
      await admin.end();
    }
  };

  const refusedUnavailable = (err: unknown): boolean => {
    assert.ok(err instanceof ApiError, `an ApiError, not ${String(err)}`);
    assert.equal(err.status, 503);
    assert.match(err.message, /the database is unreachable; try again shortly/);
    return true;
  };

  it('between two writes: answered 503, the first write not kept, the process and the store go on', async () => {
    const first = organization();
    const second = organization();
    const written = deferred();
    const go = deferred();
    const tx = store.transaction(async (t: Repos) => {
      await t.organizations.create(first);
      written.resolve();
      await go.promise;
      await t.organizations.create(second);
    });
    await written.promise;
    assert.equal(await killOpenTransactions(), 1);
    // The connection's end reaches the client while no statement of it runs: it must not take the process down.
    await sleep(200);
    go.resolve();
    await assert.rejects(tx, refusedUnavailable);
    assert.equal(await store.organizations.get(first.id), null, 'nothing of the transaction kept');
    assert.equal(await store.organizations.get(second.id), null);
    await store.transaction((t) => t.organizations.create(second));
    assert.equal(
      (await store.organizations.get(second.id))?.id,
      second.id,
      'the next transaction runs on a new connection',
    );
  });

  it('in a batch of events: the batch runs again on a new connection, and each event is kept once', async () => {
    const c = await seedConnector(store);
    const devices = [device(c.projectId), device(c.projectId)];
    for (const d of devices) await store.devices.create(d);
    const reached = deferred();
    const go = deferred();
    let held = true;
    let runs = 0;
    const publish = (i: number) => {
      const d = devices[i % devices.length]!;
      const at = T0 + i;
      return store.transaction(
        async (t: Repos) => {
          runs++;
          const current = (await t.devices.get(d.id))!;
          const e = event(d, at);
          await t.events.insert(e);
          await t.deliveries.add([row(c.id, at, { eventId: e.id })]);
          await t.devices.updateReported(
            d.id,
            { n: ((current.reported.n as number | undefined) ?? 0) + 1 },
            { touch: [at, e.id] },
            at,
          );
          // The batch's first run waits here with its transaction open (its devices read under lock).
          if (held) {
            reached.resolve();
            await go.promise;
          }
          return e.id;
        },
        { rerunnable: true, devices: [d.id] },
      );
    };
    const results = Promise.allSettled([0, 1, 2, 3].map(publish));
    await reached.promise;
    assert.ok((await killOpenTransactions()) >= 1, 'the batch was inside a transaction');
    await sleep(200);
    held = false;
    go.resolve();
    // None had committed (COMMIT never sent): each is run again, not refused.
    const kept = (await results).map((r) => {
      assert.equal(r.status, 'fulfilled', r.status === 'rejected' ? String(r.reason) : '');
      return (r as PromiseFulfilledResult<string>).value;
    });
    assert.ok(runs > 4, `the events were run again (${runs} runs for 4 events)`);
    // What was kept, and only that: its event, its queue row and its count on the device, once each.
    const events = await store.events.listByDevice({
      deviceId: devices[0]!.id,
      eventTypes: [],
      startTime: 0,
      endTime: T0 * 2,
      limit: 10,
    });
    const events1 = await store.events.listByDevice({
      deviceId: devices[1]!.id,
      eventTypes: [],
      startTime: 0,
      endTime: T0 * 2,
      limit: 10,
    });
    assert.deepEqual([...events, ...events1].map((e) => e.id).sort(), [...kept].sort());
    const queued = await store.deliveries.claim(c.id, T0 * 2, 0, T0 * 2, 10);
    assert.deepEqual(queued.map((q) => q.eventId).sort(), [...kept].sort());
    const counts = await Promise.all(devices.map(async (d) => (await store.devices.get(d.id))?.reported.n ?? 0));
    assert.deepEqual(counts, [events.length, events1.length]);
  });
});
