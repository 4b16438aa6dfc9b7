// PostgreSQL only: the group commit of rerunnable transactions (store/postgres/group-commit.ts) and the writes its
// batches hold to the end (write-behind.ts). What a batch does when a device it reads is held by another
// transaction, when the write of what it held fails, and that a batch reads what it holds.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import type { DeviceRecord } from '../../src/store/records.ts';
import type { Repos } from '../../src/store/store.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { device, event, row, seedConnector, T0 } from './contract/fixtures.ts';

describe('postgres: group commit', () => {
  let drop: () => Promise<void>;
  let store: PostgresStore;
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    store = await createPostgresStore(db.url, { poolSize: 4 });
  });
  after(async () => {
    await store?.close();
    await drop?.();
  });

  const seed = async (n: number) => {
    const c = await seedConnector(store);
    const devices = Array.from({ length: n }, () => device(c.projectId));
    for (const d of devices) await store.devices.create(d);
    return { c, devices };
  };
  /** One event's writes, as the pipeline makes them, in a rerunnable transaction naming its device. */
  const publish = (connectorId: string, d: DeviceRecord, at: number, body = `{"t":${at}}`) =>
    store.transaction(async (tx: Repos) => {
      const current = (await tx.devices.get(d.id))!;
      const e = event(d, at, 'touch', { body });
      await tx.events.insert(e);
      await tx.deliveries.add([row(connectorId, at, { eventId: e.id })]);
      await tx.devices.updateReported(d.id, { n: ((current.reported.n as number | undefined) ?? 0) + 1 }, { touch: [at, e.id] }, at);
      return e.id;
    }, { rerunnable: true, devices: [d.id] });
  const countOf = async (d: DeviceRecord) => (await store.devices.get(d.id))?.reported.n;

  it('a named device held by another transaction: the batch waits for the lock, then every event of it commits', async () => {
    const { c, devices: [held, free] } = await seed(2);
    const client = await store.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [held!.id]);
      const waiting = Promise.all([publish(c.id, held!, T0), publish(c.id, free!, T0 + 1)]);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual([await countOf(held!), await countOf(free!)], [undefined, undefined]);
      await client.query('COMMIT');
      await waiting;
      assert.deepEqual([await countOf(held!), await countOf(free!)], [1, 1]);
    } finally {
      client.release();
    }
  });

  it('a device read but not named, held by another transaction: the rest of the batch commits, that one runs alone after the lock', async () => {
    const { devices: [held, other] } = await seed(2);
    const bump = (d: DeviceRecord) => store.transaction(async (tx) => {
      const current = (await tx.devices.get(d.id))!;
      await tx.devices.updateReported(d.id, { n: ((current.reported.n as number | undefined) ?? 0) + 1 }, {}, T0);
    }, { rerunnable: true });
    const client = await store.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM devices WHERE id = $1 FOR UPDATE', [held!.id]);
      const waiting = bump(held!);
      await bump(other!);
      assert.deepEqual([await countOf(held!), await countOf(other!)], [undefined, 1]);
      await client.query('COMMIT');
      await waiting;
      assert.equal(await countOf(held!), 1);
    } finally {
      client.release();
    }
  });

  it('when the write of what a batch held fails, each event runs again alone and only the bad one fails', async () => {
    const { c, devices: [d] } = await seed(1);
    const results = await Promise.allSettled([
      publish(c.id, d!, T0),
      publish(c.id, d!, T0 + 1, '{"bad":"\u0000"}'), // PostgreSQL text cannot hold NUL: a 400 for this one
      publish(c.id, d!, T0 + 2),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.equal(((results[1] as PromiseRejectedResult).reason as { status?: number }).status, 400);
    assert.equal(await countOf(d!), 2);
    assert.equal((await store.deliveries.claim(c.id, T0 * 2, 0, T0 * 2, 10)).length, 2);
  });

  it('a batch reads what it holds: history, the queue and the device, in the same transaction', async () => {
    const { c, devices: [d] } = await seed(1);
    const seen = await Promise.all([publish(c.id, d!, T0), store.transaction(async (tx) => {
      const e = event(d!, T0 + 1);
      await tx.events.insert(e);
      await tx.deliveries.add([row(c.id, T0 + 1, { eventId: e.id })]);
      await tx.devices.updateReported(d!.id, { n: 'mine' }, {}, T0 + 1);
      const history = await tx.events.listByDevice({ deviceId: d!.id, eventTypes: [], startTime: 0, endTime: T0 * 2, limit: 10 });
      const queued = await tx.deliveries.claim(c.id, T0 * 2, 0, T0 * 2, 10);
      return { history: history.length, queued: queued.length, reported: (await tx.devices.get(d!.id))?.reported };
    }, { rerunnable: true, devices: [d!.id] })]);
    assert.deepEqual(seen[1], { history: 2, queued: 2, reported: { n: 'mine' } });
  });
});
