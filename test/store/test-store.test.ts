// The test-store switch (test/helpers/store.ts): SENSORCLOUD_TEST_STORE picks the backend of every service test;
// an unknown value fails loudly instead of quietly running on SQLite.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createTestContext } from '../helpers/context.ts';
import { createTestStore, reopenTestStore, testStoreKind } from '../helpers/store.ts';

describe('test store switch', () => {
  it('is sqlite when SENSORCLOUD_TEST_STORE is unset, empty or sqlite', () => {
    assert.equal(testStoreKind({}), 'sqlite');
    assert.equal(testStoreKind({ SENSORCLOUD_TEST_STORE: '' }), 'sqlite');
    assert.equal(testStoreKind({ SENSORCLOUD_TEST_STORE: 'sqlite' }), 'sqlite');
  });

  it('is postgres when SENSORCLOUD_TEST_STORE=postgres', () => {
    assert.equal(testStoreKind({ SENSORCLOUD_TEST_STORE: 'postgres' }), 'postgres');
  });

  it('refuses any other value', () => {
    for (const value of ['Postgres', 'SQLite', 'sqlite ', 'memory']) {
      assert.throws(
        () => testStoreKind({ SENSORCLOUD_TEST_STORE: value }),
        /SENSORCLOUD_TEST_STORE=.*no such test store \(known: sqlite, postgres\)/,
        value,
      );
    }
  });

  it('makes the test context fail, not fall back, on an unknown value', async () => {
    const saved = process.env.SENSORCLOUD_TEST_STORE;
    process.env.SENSORCLOUD_TEST_STORE = 'mysql';
    try {
      await assert.rejects(createTestContext(), /no such test store/);
    } finally {
      if (saved === undefined) delete process.env.SENSORCLOUD_TEST_STORE;
      else process.env.SENSORCLOUD_TEST_STORE = saved;
    }
  });

  it('reopens the database a test store was made in, as a second process would', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-test-store-'));
    try {
      const first = await createTestStore(dir);
      await first.organizations.create({ id: 'o0000000000000000001', displayName: 'O', createTime: 1 });
      const second = await reopenTestStore(dir);
      assert.equal((await second.organizations.get('o0000000000000000001'))?.displayName, 'O');
      await second.close();
      await first.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives the test context the store it is handed', async () => {
    let opened: string | null = null;
    const t = await createTestContext({
      store: async (dataDir) => {
        opened = dataDir;
        return createTestStore(dataDir);
      },
    });
    try {
      assert.equal(opened, t.dataDir);
      assert.ok(await t.deps.store.projects.get(t.projectId), 'bootstrapped into the store handed in');
    } finally {
      await t.close();
    }
  });
});
