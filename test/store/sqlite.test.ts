// The Store contract on SQLite (in memory and on disk), plus SQLite-specific behaviour.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { storeContract } from './contract.ts';

storeContract('sqlite (memory)', () => createSqliteStore(':memory:'));

const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
storeContract('sqlite (file)', () => createSqliteStore(join(dir, 'contract.db')));

describe('sqlite specifics', () => {
  it('uses WAL and applies migrations once', async () => {
    const file = join(dir, 'wal.db');
    const first = createSqliteStore(file);
    assert.equal(first.db.raw.pragma('journal_mode', { simple: true }), 'wal');
    const versions = first.db.all<{ version: number }>('SELECT version FROM schema_migrations');
    await first.close();
    const second = createSqliteStore(file);
    assert.deepEqual(second.db.all<{ version: number }>('SELECT version FROM schema_migrations'), versions);
    await second.close();
  });
});

describe('sqlite checkpoints', () => {
  it('turns off the in-commit autocheckpoint and checkpoints the WAL from a worker thread', async () => {
    const file = join(dir, 'checkpoint.db');
    const store = createSqliteStore(file);
    try {
      assert.equal(store.db.raw.pragma('wal_autocheckpoint', { simple: true }), 0);
      const before = statSync(file).size;
      await store.transaction(async (tx) => {
        for (let i = 0; i < 200; i++) await tx.organizations.create({ id: `o${String(i).padStart(19, '0')}`, displayName: 'x'.repeat(500), createTime: i });
      });
      // The worker copies committed pages into the database file; wait for it (bounded), without asserting a time.
      for (let i = 0; i < 100 && statSync(file).size <= before; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(statSync(file).size > before, 'the database file received the checkpointed pages');
    } finally {
      await store.close();
    }
  });

  it('runs re-runnable transactions without a savepoint, and undoes one that fails after writing by running the others again', async () => {
    const store = createSqliteStore(':memory:');
    try {
      const savepoints: string[] = [];
      const exec = store.db.raw.exec.bind(store.db.raw);
      store.db.raw.exec = (sql: string) => {
        if (sql.startsWith('SAVEPOINT')) savepoints.push(sql);
        return exec(sql);
      };
      const org = (i: number) => ({ id: `r${String(i).padStart(19, '0')}`, displayName: `r${i}`, createTime: i });
      const calls = [0, 0, 0];
      const rerunnable = { rerunnable: true };
      // Alone in their commit, all succeeding: no savepoint at all.
      await Promise.all([0, 1].map((i) => store.transaction(async (tx) => { calls[i]!++; await tx.organizations.create(org(i)); }, rerunnable)));
      assert.deepEqual({ savepoints, calls }, { savepoints: [], calls: [1, 1, 0] });
      // The middle one fails after writing: the commit is undone with it, 0 runs again and 2 runs (once), both in savepoints.
      calls.fill(0);
      const results = await Promise.allSettled([
        store.transaction(async (tx) => { calls[0]!++; await tx.organizations.create(org(10)); }, rerunnable),
        store.transaction(async (tx) => { calls[1]!++; await tx.organizations.create(org(11)); throw new Error('fails after writing'); }, rerunnable),
        store.transaction(async (tx) => { calls[2]!++; await tx.organizations.create(org(12)); }, rerunnable),
      ]);
      assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
      assert.deepEqual(calls, [2, 1, 1]);
      assert.equal(savepoints.length, 2);
      const names = store.db.all<{ id: string }>("SELECT id FROM organizations WHERE id LIKE 'r%' ORDER BY id").map((r) => r.id);
      assert.deepEqual(names, [org(0).id, org(1).id, org(10).id, org(12).id]);
    } finally {
      await store.close();
    }
  });

  it('starts the WAL over under a steady stream of commits instead of letting it grow', async () => {
    const file = join(dir, 'restart.db');
    const store = createSqliteStore(file, { checkpoints: { intervalMs: 5, restartFrames: 64 } });
    try {
      // A writer that never pauses, until the checkpointer has run a few rounds beside it (bounded in count).
      let commits = 0;
      while (store.checkpointRounds() < 5 && commits < 200_000) {
        const i = commits++;
        await store.transaction((tx) => tx.organizations.create({ id: `o${String(i).padStart(19, '0')}`, displayName: 'x', createTime: i }));
      }
      assert.ok(store.checkpointRounds() >= 5, `only ${store.checkpointRounds()} checkpoint rounds in ${commits} commits`);
      // Every commit appends at least one frame; a WAL never started over would hold at least one per commit.
      const [{ log }] = store.db.raw.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
      assert.ok(log < commits / 2, `the WAL holds ${log} frames after ${commits} commits`);
      assert.equal(store.db.get<{ n: number }>('SELECT count(*) AS n FROM organizations')?.n, commits);
    } finally {
      await store.close();
    }
  });
});
