// A full disk on the PostgreSQL server: writes answer 503 in words that say so (nothing of them kept), /healthz
// says so, the operator is told at most once a minute, and everything passes again once there is room, without a
// restart. A trigger that raises the server's own error for it (SQLSTATE 53100, disk_full) stands in for the disk:
// measured by hand with the database's tablespace on a 30 MB file system, the server refused the inserts with that
// error and kept taking reads and the writes that needed no new room.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestContext } from '../helpers/context.ts';
import { createTestDatabase, runAlone } from '../helpers/postgres.ts';

/** Every insert into `table` refused as the server refuses one on a full disk. */
const fill = (table: string) => `
  CREATE OR REPLACE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    RAISE EXCEPTION 'could not extend file "base/16384/16385": No space left on device' USING ERRCODE = 'disk_full';
  END $$;
  CREATE TRIGGER test_disk_full BEFORE INSERT ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION test_disk_full()`;
const makeRoom = (table: string) => `DROP TRIGGER test_disk_full ON ${table}`;

const rows = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    connectorId: 'c',
    eventId: `${tag}${i}`,
    body: Buffer.from('{}'),
    enqueueTime: 1,
    dueTime: 1,
  }));

const isFull = (e: unknown) =>
  e instanceof ApiError && e.status === 503 && /the database server's disk is full/.test(e.message);

describe('postgres: a full disk on the server', () => {
  // A database per test: one that fails leaves its trigger behind.
  let db: { url: string; drop(): Promise<void> };
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await db?.drop();
  });

  it('refuses writes with a 503, keeps nothing of them, tells the operator once a minute, and /healthz says so for a minute', async () => {
    const { logger, lines } = capturedLog(['warn', 'error']);
    let skew = 0;
    const store: PostgresStore = await createPostgresStore(db.url, { logger, machineClock: () => Date.now() + skew });
    try {
      await store.deliveries.insert(rows(1, 'before'));
      await runAlone(db.url, fill('deliveries'));
      // In a transaction (a group commit), and outside one.
      await assert.rejects(
        store.transaction((tx) => tx.deliveries.add(rows(2, 'tx')), { rerunnable: true }),
        isFull,
      );
      await assert.rejects(store.deliveries.insert(rows(2, 'top')), isFull);
      // Nothing of the refused writes is kept, and reads go on.
      assert.equal(await store.deliveries.count(), 1);
      await assert.rejects(store.ping(), isFull);
      const warnings = () => lines.filter((l) => l.message.startsWith("database: the database server's disk is full"));
      assert.equal(warnings().length, 1, 'told once');
      assert.match(String(warnings()[0]!.fields.reason), /No space left on device/);
      skew += 61_000;
      // A minute with nothing refused: nothing is failing then.
      await store.ping();
      await assert.rejects(store.deliveries.insert(rows(2, 'later')), isFull);
      assert.equal(warnings().length, 2, 'and again a minute later');
      // The refusals not told (the transaction's second, run alone after its batch, and the insert's), and this one.
      assert.equal(warnings()[1]!.fields.refusals, 3);
      await assert.rejects(store.ping(), isFull);

      await runAlone(db.url, makeRoom('deliveries'));
      await store.deliveries.insert(rows(2, 'room'));
      assert.equal(await store.deliveries.count(), 3);
      assert.deepEqual(
        lines.filter((l) => l.level === 'error'),
        [],
      );
    } finally {
      await store.close();
    }
  });

  it('through the API: a publish answers 503 with the error body and /healthz 503, until an event is stored again', async () => {
    const { logger, lines } = capturedLog(['warn', 'error']);
    const t = await createTestContext({ store: () => createPostgresStore(db.url, { logger }) });
    try {
      const device = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'touch' } });
      assert.equal(device.status, 200, device.text);
      const publish = () => t.request('POST', `/v2/${device.body.name}:publish`, { body: { touch: {} } });
      assert.equal((await publish()).status, 200);
      await runAlone(db.url, fill('events'));
      const res = await publish();
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.code, 503);
      assert.match(res.body.error, /the database server's disk is full; try again later/);
      const health = await t.request('GET', '/healthz', { auth: null });
      assert.equal(health.status, 503);
      assert.match(health.body.error, /the database server's disk is full/, 'it says why');
      // Reads go on.
      assert.equal((await t.request('GET', `/v2/${device.body.name}`)).status, 200);
      // A write that takes no new room passes meanwhile, and says nothing of the disk: /healthz stays 503.
      const renamed = await t.request('PATCH', `/v2/projects/${t.projectId}`, { body: { displayName: 'still here' } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal((await t.request('GET', '/healthz', { auth: null })).status, 503);
      await runAlone(db.url, makeRoom('events'));
      assert.equal((await publish()).status, 200);
      assert.equal((await t.request('GET', '/healthz', { auth: null })).status, 200);
      assert.equal(lines.filter((l) => l.message.startsWith("database: the database server's disk is full")).length, 1);
      assert.deepEqual(
        lines.filter((l) => l.level === 'error'),
        [],
        'no stack per request',
      );
    } finally {
      await t.close();
    }
  });
});
