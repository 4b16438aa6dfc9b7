// The Store contract on SQLite (in memory and on disk), plus SQLite-specific behaviour.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
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
