// PostgreSQL only: the read cache of projects and active connectors (store/postgres/repos/config-cache.ts) across two
// stores on one database (two processes): a change committed by one is seen by the other's next read after it
// checks the versions, as every authenticated request does first; a transaction reads its own writes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { connector, seedProject } from './contract/fixtures.ts';

describe('postgres: the projects and connectors cache across processes', () => {
  let drop: () => Promise<void>;
  let a: PostgresStore;
  let b: PostgresStore;
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    a = await createPostgresStore(db.url, { poolSize: 2 });
    b = await createPostgresStore(db.url, { poolSize: 2 });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await drop?.();
  });

  it('a connector created, disabled or deleted at A is seen at B once B checks the versions', async () => {
    const p = await seedProject(a);
    await b.authVersion();
    assert.deepEqual(await b.dataConnectors.listActiveByProject(p.id), []);
    const c = connector(p.id);
    await a.dataConnectors.create(c);
    await b.authVersion();
    assert.deepEqual(
      (await b.dataConnectors.listActiveByProject(p.id)).map((x) => x.id),
      [c.id],
    );

    await a.transaction(async (tx) => tx.dataConnectors.updateState(c.id, 'USER_DISABLED', null, 2));
    await b.authVersion();
    assert.deepEqual(await b.dataConnectors.listActiveByProject(p.id), []);

    await a.dataConnectors.update({ ...c, status: 'ACTIVE', displayName: 'Renamed', updateTime: 3 });
    await b.authVersion();
    assert.equal((await b.dataConnectors.listActiveByProject(p.id))[0]?.displayName, 'Renamed');

    await a.dataConnectors.delete(c.id);
    await b.authVersion();
    assert.deepEqual(await b.dataConnectors.listActiveByProject(p.id), []);
  });

  it("a connector's previous secret (extensions §X3) written or resealed at A is seen at B, and at A at once", async () => {
    const p = await seedProject(a);
    const c = connector(p.id, { signatureSecretSealed: 'sealed:current' });
    await a.dataConnectors.create(c);
    for (const s of [a, b]) {
      await s.authVersion();
      assert.equal((await s.dataConnectors.listActiveByProject(p.id))[0]?.previousSignatureSecretSealed, '');
    }
    const rotated = {
      ...c,
      signatureSecretSealed: 'sealed:new',
      previousSignatureSecretSealed: 'sealed:current',
      previousSignatureSecretExpireTime: 5_000_000,
      updateTime: 4,
    };
    await a.transaction(async (tx) => tx.dataConnectors.update(rotated));
    assert.deepEqual((await a.dataConnectors.listActiveByProject(p.id))[0], rotated, 'its own commit clears the cache');
    await b.authVersion();
    assert.deepEqual((await b.dataConnectors.listActiveByProject(p.id))[0], rotated);

    await a.transaction(async (tx) =>
      tx.sealed.replace({ kind: 'previousSecret', id: c.id, sealed: 'resealed:current' }),
    );
    assert.equal(
      (await a.dataConnectors.listActiveByProject(p.id))[0]?.previousSignatureSecretSealed,
      'resealed:current',
    );
    await b.authVersion();
    assert.equal(
      (await b.dataConnectors.listActiveByProject(p.id))[0]?.previousSignatureSecretSealed,
      'resealed:current',
    );
  });

  it('a project changed or deleted at A is seen at B once B checks the versions', async () => {
    const p = await seedProject(a);
    await b.authVersion();
    assert.equal((await b.projects.get(p.id))?.displayName, p.displayName);
    await a.projects.update({ ...p, displayName: 'Moved on', updateTime: p.updateTime + 1 });
    await b.authVersion();
    assert.equal((await b.projects.get(p.id))?.displayName, 'Moved on');
    await a.projects.delete(p.id);
    await b.authVersion();
    assert.equal(await b.projects.get(p.id), null);
  });

  it('a transaction sees its own writes past the cache, and its rollback leaves the cache as it was', async () => {
    const p = await seedProject(a);
    await a.authVersion();
    assert.deepEqual(await a.dataConnectors.listActiveByProject(p.id), []);
    const c = connector(p.id);
    await assert.rejects(
      a.transaction(async (tx) => {
        await tx.dataConnectors.create(c);
        assert.deepEqual(
          (await tx.dataConnectors.listActiveByProject(p.id)).map((x) => x.id),
          [c.id],
        );
        throw new Error('undo');
      }),
      /undo/,
    );
    await a.authVersion();
    assert.deepEqual(await a.dataConnectors.listActiveByProject(p.id), [], 'the rolled-back connector is nowhere');
    await a.transaction(async (tx) => tx.dataConnectors.create(c));
    assert.deepEqual(
      (await a.dataConnectors.listActiveByProject(p.id)).map((x) => x.id),
      [c.id],
      'its own commit clears the cache at once',
    );
  });
});
