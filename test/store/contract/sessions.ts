// Store contract: what ends sessions and stops replays. A user's token generation (moved only by endSessions, never
// undone by an update from an older read), the JWT-bearer assertion ids taken once (by key, until their time, one
// winner among concurrent callers), and each connector's last :sync record with the check of its queued rows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { row, seedConnector, SECOND, T0, user, useStore, withFreshStore, type OpenStore } from './fixtures.ts';

export function sessionContract(open: OpenStore): void {
  describe('user sessions', () => {
    const store = useStore(open);

    it('a new user is at generation 0; endSessions moves it on and moves the auth version', async () => {
      const u = user();
      await store().users.create(u);
      assert.equal((await store().users.get(u.id))?.tokenGeneration, 0);
      const before = await store().authVersion();
      await store().users.endSessions(u.id);
      assert.notEqual(await store().authVersion(), before, 'cached principals must be dropped');
      await store().transaction((tx) => tx.users.endSessions(u.id));
      assert.equal((await store().users.get(u.id))?.tokenGeneration, 2);
      assert.equal((await store().users.getByEmail(u.email))?.tokenGeneration, 2);
      await store().users.endSessions('missing');
    });

    it('update() from a record read before endSessions leaves the generation where endSessions put it', async () => {
      const u = user();
      await store().users.create(u);
      const stale = (await store().users.get(u.id))!;
      await store().users.endSessions(u.id);
      await store().users.update({ ...stale, displayName: 'Renamed', updateTime: T0 + 1 });
      assert.deepEqual(await store().users.get(u.id), {
        ...u,
        displayName: 'Renamed',
        updateTime: T0 + 1,
        tokenGeneration: 1,
      });
    });
  });

  describe('used assertion ids', () => {
    const store = useStore(open);
    const NOW = T0;

    it('takes a jti once per key until its time; another key or jti is new', async () => {
      const ids = store().assertionIds;
      assert.equal(await ids.use('k1', 'j1', NOW + 60 * SECOND, NOW), true);
      assert.equal(await ids.use('k1', 'j1', NOW + 60 * SECOND, NOW), false, 'a replay');
      assert.equal(await ids.use('k1', 'j1', NOW + 90 * SECOND, NOW + 59 * SECOND), false, 'still remembered');
      assert.equal(await ids.use('k2', 'j1', NOW + 60 * SECOND, NOW), true);
      assert.equal(await ids.use('k1', 'j2', NOW + 60 * SECOND, NOW), true);
    });

    it('a jti remembered only until now or earlier is taken again, and remembered anew', async () => {
      const ids = store().assertionIds;
      assert.equal(await ids.use('k3', 'j', NOW + 10 * SECOND, NOW), true);
      assert.equal(
        await ids.use('k3', 'j', NOW + 100 * SECOND, NOW + 10 * SECOND),
        true,
        'its time is over: the prune had not run yet',
      );
      assert.equal(await ids.use('k3', 'j', NOW + 200 * SECOND, NOW + 50 * SECOND), false, 'the new time holds');
    });

    it('of concurrent callers with the same jti exactly one wins, inside transactions too', async () => {
      const ids = store().assertionIds;
      const results = await Promise.all([
        ...Array.from({ length: 8 }, () => ids.use('k4', 'race', NOW + 60 * SECOND, NOW)),
        ...Array.from({ length: 4 }, () =>
          store().transaction((tx) => tx.assertionIds.use('k4', 'race', NOW + 60 * SECOND, NOW)),
        ),
      ]);
      assert.equal(results.filter(Boolean).length, 1);
    });

    it('deleteExpired forgets those remembered until now or earlier, at most `limit` a call', async () => {
      await withFreshStore(open, async (s) => {
        for (let i = 0; i < 5; i++) await s.assertionIds.use('k', `old${i}`, NOW + i * SECOND, NOW - SECOND);
        await s.assertionIds.use('k', 'young', NOW + 60 * SECOND, NOW);
        assert.equal(await s.assertionIds.deleteExpired(NOW + 4 * SECOND, 3), 3);
        assert.equal(await s.assertionIds.deleteExpired(NOW + 4 * SECOND, 3), 2);
        assert.equal(await s.assertionIds.deleteExpired(NOW + 4 * SECOND, 3), 0);
        assert.equal(
          await s.assertionIds.use('k', 'young', NOW + 60 * SECOND, NOW + 4 * SECOND),
          false,
          'the young one stays',
        );
        // What was deleted is new again (its time was over anyway).
        assert.equal(await s.assertionIds.use('k', 'old0', NOW + 60 * SECOND, NOW + 4 * SECOND), true);
      });
    });
  });

  describe('connector sync records', () => {
    const store = useStore(open);

    it("records a connector's last :sync, replacing the one before; none at first", async () => {
      const c = await seedConnector(store());
      assert.equal(await store().deliveries.lastSync(c.id), null);
      const first = { connectorId: c.id, firstId: 1, lastId: 9, enqueueTime: T0, scope: '{"events":[],"labels":[]}' };
      await store().deliveries.recordSync(first);
      assert.deepEqual(await store().deliveries.lastSync(c.id), first);
      const second = {
        connectorId: c.id,
        firstId: 20,
        lastId: 20,
        enqueueTime: T0 + SECOND,
        scope: '{"events":["touch"],"labels":[]}',
      };
      await store().transaction((tx) => tx.deliveries.recordSync(second));
      assert.deepEqual(await store().deliveries.lastSync(c.id), second);
    });

    it('syncQueued: while a row of the sync is queued (leased or not), not once they are gone', async () => {
      const c = await seedConnector(store());
      const other = await seedConnector(store());
      const at = T0 + 7 * SECOND;
      const before = await store().deliveries.insert([row(c.id, at - SECOND)]);
      const ids = await store().deliveries.insert([
        row(c.id, at),
        row(other.id, at),
        row(c.id, at),
        row(c.id, at, { dueTime: at + 60 * SECOND, leaseUntil: at + 60 * SECOND }),
      ]);
      const later = await store().deliveries.insert([row(c.id, at + SECOND)]);
      const sync = { connectorId: c.id, firstId: ids[0]!, lastId: ids[3]!, enqueueTime: at, scope: '' };
      assert.equal(await store().deliveries.syncQueued(sync), true);
      await store().deliveries.deleteMany([ids[0]!, ids[2]!]);
      assert.equal(await store().deliveries.syncQueued(sync), true, 'the leased one is still queued');
      await store().deliveries.deleteMany([ids[3]!]);
      // Left in or around the range: another connector's row, and this connector's rows of other enqueue times.
      assert.equal(await store().deliveries.syncQueued(sync), false);
      assert.equal(await store().deliveries.syncQueued({ ...sync, firstId: before[0]!, lastId: later[0]! }), false);
      assert.equal(
        await store().transaction((tx) => tx.deliveries.syncQueued({ ...sync, connectorId: other.id })),
        true,
      );
    });

    it('deleting the connector forgets its record', async () => {
      const c = await seedConnector(store());
      await store().deliveries.recordSync({ connectorId: c.id, firstId: 1, lastId: 2, enqueueTime: T0, scope: '' });
      await store().dataConnectors.delete(c.id);
      assert.equal(await store().deliveries.lastSync(c.id), null);
    });
  });
}
