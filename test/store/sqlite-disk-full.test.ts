// A full disk under SQLite: writes answer 503 (nothing of them kept), /healthz says so, the operator is told at most
// once a minute, and everything passes again once there is room, without a restart. SQLite's max_page_count
// stands in for the disk: past it, SQLite refuses a write exactly as on a full disk (SQLITE_FULL).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestContext } from '../helpers/context.ts';

type SqliteStore = ReturnType<typeof createSqliteStore>;

/** No page more than the database has now: the next write that needs one is refused. */
function fill(store: SqliteStore): void {
  const pages = store.db.raw.pragma('page_count', { simple: true }) as number;
  store.db.raw.pragma(`max_page_count = ${pages}`);
}

function makeRoom(store: SqliteStore): void {
  store.db.raw.pragma('max_page_count = 4294967294');
}

const rows = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    connectorId: 'c',
    eventId: `${tag}${i}`,
    body: Buffer.alloc(16_384, 1),
    enqueueTime: 1,
    dueTime: 1,
  }));

const isFull = (e: unknown) =>
  e instanceof ApiError && e.status === 503 && /disk that holds the database is full/.test(e.message);

describe('sqlite on a full disk', () => {
  it('refuses writes with a 503, keeps nothing of them, tells the operator once a minute, and recovers by itself', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-full-'));
    const { logger, lines } = capturedLog(['warn', 'error']);
    let now = 1_000_000;
    const store = createSqliteStore(join(dir, 'sensorcloud.db'), { logger, now: () => now });
    try {
      await store.deliveries.insert(rows(1, 'before'));
      fill(store);
      // In a transaction (the group commit), and outside one.
      await assert.rejects(
        store.transaction((tx) => tx.deliveries.add(rows(20, 'tx'))),
        isFull,
      );
      await assert.rejects(store.deliveries.insert(rows(20, 'top')), isFull);
      assert.equal(await store.deliveries.count(), 1, 'nothing of the refused writes is kept');
      await assert.rejects(store.ping(), isFull);
      // Reads go on.
      assert.equal((await store.deliveries.get(1))?.eventId, 'before0');
      const warnings = () =>
        lines.filter((l) => l.message.startsWith('database: the disk holding the database is full'));
      assert.equal(warnings().length, 1, 'told once');
      assert.equal(warnings()[0]!.fields.file, join(dir, 'sensorcloud.db'));
      assert.equal(typeof warnings()[0]!.fields.freeBytes, 'number');
      now += 61_000;
      await assert.rejects(
        store.transaction((tx) => tx.deliveries.add(rows(20, 'later'))),
        isFull,
      );
      assert.equal(warnings().length, 2, 'and again a minute later');
      assert.equal(warnings()[1]!.fields.refusals, 2, 'the refusal not told, and this one');

      makeRoom(store);
      await store.transaction((tx) => tx.deliveries.add(rows(20, 'room')));
      await store.ping();
      assert.equal(await store.deliveries.count(), 21);
      // A write outside a transaction that passes also ends it.
      fill(store);
      await assert.rejects(store.deliveries.insert(rows(20, 'top')), isFull);
      makeRoom(store);
      await store.deliveries.insert(rows(1, 'top'));
      await store.ping();
      // With no write since, /healthz goes back to 200 after a minute: nothing is failing then.
      fill(store);
      await assert.rejects(store.deliveries.insert(rows(20, 'top')), isFull);
      now += 61_000;
      await store.ping();
      assert.deepEqual(
        lines.filter((l) => l.level === 'error'),
        [],
      );
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('through the API: a publish answers 503 with the error body and /healthz 503; both pass once there is room', async () => {
    const { logger, lines } = capturedLog(['warn', 'error']);
    let store: SqliteStore | null = null;
    const t = await createTestContext({
      store: (dataDir) => (store = createSqliteStore(join(dataDir, 'sensorcloud.db'), { logger })),
    });
    try {
      const device = await t.request('POST', `/v2/projects/${t.projectId}/devices`, { body: { type: 'touch' } });
      assert.equal(device.status, 200, device.text);
      fill(store!);
      // Publishes pass while the pages they write to have room left, then none does.
      const publish = () => t.request('POST', `/v2/${device.body.name}:publish`, { body: { touch: {} } });
      let res = await publish();
      for (let i = 0; i < 500 && res.status === 200; i++) res = await publish();
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.code, 503);
      assert.match(res.body.error, /disk that holds the database is full/);
      const health = await t.request('GET', '/healthz', { auth: null });
      assert.equal(health.status, 503);
      assert.match(health.body.error, /disk that holds the database is full/, 'it says why');
      makeRoom(store!);
      assert.equal((await publish()).status, 200);
      assert.equal((await t.request('GET', '/healthz', { auth: null })).status, 200);
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
