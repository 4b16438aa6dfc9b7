// Store contract: data connectors (records, lists, the ACTIVE fan-out list, the engine's state-only write).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connector, seedConnector, seedProject, T0, useStore, withFreshStore, type OpenStore } from './fixtures.ts';

export function dataConnectorContract(open: OpenStore): void {
  describe('dataConnectors', () => {
    const store = useStore(open);

    it('round-trips a connector with its filters, headers, sealed secret and failing time; an unknown id is null', async () => {
      const p = await seedProject(store());
      const c = connector(p.id, {
        displayName: 'Warehouse ☃',
        status: 'USER_DISABLED',
        events: ['touch', 'temperature'],
        labels: ['room', 'floor'],
        headers: { 'x-api-key': 'k', 'X-Other': 'v' },
        signatureSecretSealed: 'sealed:abc',
        failingSince: T0 - 10,
        createTime: T0 - 20,
        updateTime: T0 - 15,
      });
      await store().dataConnectors.create(c);
      assert.deepEqual(await store().dataConnectors.get(c.id), c);
      assert.equal(await store().dataConnectors.get('missing'), null);
    });

    it("round-trips a rotation's previous secret and its expire time, and answers none for a connector written without", async () => {
      const p = await seedProject(store());
      const c = connector(p.id, {
        signatureSecretSealed: 'sealed:new',
        previousSignatureSecretSealed: 'sealed:old',
        previousSignatureSecretExpireTime: T0 + 86_400_000_000,
      });
      await store().dataConnectors.create(c);
      assert.deepEqual(await store().dataConnectors.get(c.id), c);
      assert.deepEqual((await store().dataConnectors.getMany([c.id])).get(c.id), c);
      assert.deepEqual(await store().dataConnectors.listByProject(p.id, { limit: 10 }), [c]);
      assert.deepEqual(await store().dataConnectors.listActiveByProject(p.id), [c]);

      // Written by a caller that knows nothing of rotation (the fields absent): a store answers both, as none.
      const { previousSignatureSecretSealed, previousSignatureSecretExpireTime, ...bare } = connector(p.id);
      await store().dataConnectors.create(bare);
      assert.deepEqual(await store().dataConnectors.get(bare.id), {
        ...bare,
        previousSignatureSecretSealed: '',
        previousSignatureSecretExpireTime: null,
      });
      assert.deepEqual([previousSignatureSecretSealed, previousSignatureSecretExpireTime], ['', null]);

      // update writes both (a PATCH of the secret ends the overlap: '' and null); updateState leaves them alone.
      await store().dataConnectors.updateState(c.id, 'USER_DISABLED', T0 + 1, T0 + 2);
      const disabled = { ...c, status: 'USER_DISABLED' as const, failingSince: T0 + 1, updateTime: T0 + 2 };
      assert.deepEqual(await store().dataConnectors.get(c.id), disabled);
      const ended = { ...disabled, previousSignatureSecretSealed: '', previousSignatureSecretExpireTime: null };
      await store().dataConnectors.update(ended);
      assert.deepEqual(await store().dataConnectors.get(c.id), ended);
      const again = { ...ended, previousSignatureSecretSealed: 'sealed:x', previousSignatureSecretExpireTime: T0 + 9 };
      await store().dataConnectors.update(again);
      assert.deepEqual(await store().dataConnectors.get(c.id), again);
    });

    it('round-trips delivery controls, answers the defaults for a connector written without, and update writes them', async () => {
      const p = await seedProject(store());
      const c = connector(p.id, {
        deliveryConfig: { maxConcurrency: 3, maxRate: 2.5, labelFilters: { site: 'oslo', 'rack ☃': '' }, paused: true },
      });
      await store().dataConnectors.create(c);
      assert.deepEqual(await store().dataConnectors.get(c.id), c);
      assert.deepEqual((await store().dataConnectors.getMany([c.id])).get(c.id), c);
      assert.deepEqual(await store().dataConnectors.listActiveByProject(p.id), [c]);

      const { deliveryConfig, ...bare } = connector(p.id);
      await store().dataConnectors.create(bare);
      assert.deepEqual((await store().dataConnectors.get(bare.id))?.deliveryConfig, deliveryConfig);

      const next = { ...c, deliveryConfig: { maxConcurrency: 64, maxRate: 10_000, labelFilters: {}, paused: false } };
      await store().dataConnectors.update(next);
      assert.deepEqual(await store().dataConnectors.get(c.id), next);
      // The engine's state write leaves them alone.
      await store().dataConnectors.updateState(c.id, 'SYSTEM_DISABLED', null, T0 + 5);
      assert.deepEqual((await store().dataConnectors.get(c.id))?.deliveryConfig, next.deliveryConfig);
    });

    it('reads several connectors at once, keyed by id, leaving out ids of none', async () => {
      const p = await seedProject(store());
      const [a, b] = [connector(p.id, { status: 'USER_DISABLED' }), connector(p.id)];
      for (const x of [a, b]) await store().dataConnectors.create(x);
      const many = await store().dataConnectors.getMany([b.id, 'missing', a.id]);
      assert.deepEqual([...many.keys()].sort(), [a.id, b.id].sort());
      assert.deepEqual(many.get(a.id), a);
      assert.deepEqual(many.get(b.id), b);
      assert.equal((await store().dataConnectors.getMany([])).size, 0);
    });

    it("lists and counts a project's connectors in id order, keyset-paged", async () => {
      const p = await seedProject(store());
      const other = await seedProject(store());
      const [a, b, c, d] = [
        connector(p.id),
        connector(other.id),
        connector(p.id, { status: 'SYSTEM_DISABLED' }),
        connector(p.id),
      ];
      for (const x of [d, c, b, a]) await store().dataConnectors.create(x);
      assert.deepEqual(await store().dataConnectors.listByProject(p.id, { limit: 10 }), [a, c, d]);
      assert.deepEqual(
        (await store().dataConnectors.listByProject(p.id, { after: a.id, limit: 1 })).map((x) => x.id),
        [c.id],
      );
      assert.deepEqual(await store().dataConnectors.listByProject(p.id, { after: d.id, limit: 10 }), []);
      assert.equal(await store().dataConnectors.countByProject(p.id), 3);
      assert.equal(await store().dataConnectors.countByProject(other.id), 1);
      assert.equal(await store().dataConnectors.countByProject('missing'), 0);
    });

    it('lists the ACTIVE connectors of a project, following every status change', async () => {
      const p = await seedProject(store());
      const [a, b, c] = [connector(p.id), connector(p.id, { status: 'USER_DISABLED' }), connector(p.id)];
      for (const x of [a, b, c]) await store().dataConnectors.create(x);
      await seedConnector(store()); // another project's
      const active = async () => (await store().dataConnectors.listActiveByProject(p.id)).map((x) => x.id).sort();
      assert.deepEqual(await active(), [a.id, c.id]);
      await store().dataConnectors.updateState(a.id, 'SYSTEM_DISABLED', T0, T0 + 1);
      assert.deepEqual(await active(), [c.id]);
      await store().dataConnectors.update({ ...b, status: 'ACTIVE', updateTime: T0 + 2 });
      assert.deepEqual(await active(), [b.id, c.id]);
      await store().dataConnectors.delete(c.id);
      assert.deepEqual(await active(), [b.id]);
      const d = connector(p.id);
      await store().dataConnectors.create(d);
      assert.deepEqual(await active(), [b.id, d.id].sort());
      assert.deepEqual(
        (await store().dataConnectors.listActiveByProject(p.id)).find((x) => x.id === b.id),
        { ...b, status: 'ACTIVE', updateTime: T0 + 2 },
      );
    });

    it('update writes every setting, the status and failing time', async () => {
      const c = await seedConnector(store());
      await store().dataConnectors.get(c.id);
      const next = {
        ...c,
        displayName: 'New',
        status: 'USER_DISABLED' as const,
        events: ['co2'],
        labels: ['x'],
        url: 'https://other.example.com/',
        headers: { a: 'b' },
        signatureSecretSealed: 'sealed:new',
        failingSince: T0 + 3,
        updateTime: T0 + 4,
      };
      await store().dataConnectors.update(next);
      assert.deepEqual(await store().dataConnectors.get(c.id), next);
    });

    it('updateState writes the status, failing time and update time only', async () => {
      const c = await seedConnector(store(), { displayName: 'Settings', events: ['touch'], headers: { h: '1' } });
      await store().dataConnectors.get(c.id);
      await store().dataConnectors.updateState(c.id, 'SYSTEM_DISABLED', T0 + 5, T0 + 6);
      assert.deepEqual(await store().dataConnectors.get(c.id), {
        ...c,
        status: 'SYSTEM_DISABLED',
        failingSince: T0 + 5,
        updateTime: T0 + 6,
      });
      await store().dataConnectors.updateState(c.id, 'ACTIVE', null, T0 + 7);
      assert.deepEqual(await store().dataConnectors.get(c.id), {
        ...c,
        status: 'ACTIVE',
        failingSince: null,
        updateTime: T0 + 7,
      });
    });

    it('delete removes the connector', async () => {
      const c = await seedConnector(store());
      await store().dataConnectors.get(c.id);
      await store().dataConnectors.delete(c.id);
      assert.equal(await store().dataConnectors.get(c.id), null);
      assert.equal(await store().dataConnectors.countByProject(c.projectId), 0);
      assert.deepEqual(await store().projects.countContents(c.projectId), { devices: 0, dataConnectors: 0 });
    });

    it('counts connectors per status, service-wide', () =>
      withFreshStore(open, async (s) => {
        assert.deepEqual(nonZero(await s.dataConnectors.countByStatus()), {});
        const p = await seedProject(s);
        const q = await seedProject(s);
        for (const status of ['ACTIVE', 'ACTIVE', 'SYSTEM_DISABLED'] as const)
          await s.dataConnectors.create(connector(p.id, { status }));
        const last = connector(q.id, { status: 'ACTIVE' });
        await s.dataConnectors.create(last);
        assert.deepEqual(nonZero(await s.dataConnectors.countByStatus()), { ACTIVE: 3, SYSTEM_DISABLED: 1 });
        await s.dataConnectors.updateState(last.id, 'USER_DISABLED', null, T0);
        assert.deepEqual(nonZero(await s.dataConnectors.countByStatus()), {
          ACTIVE: 2,
          SYSTEM_DISABLED: 1,
          USER_DISABLED: 1,
        });
      }));
  });
}

/** A status with no connector may be absent or 0. */
const nonZero = (counts: Record<string, number>) =>
  Object.fromEntries(Object.entries(counts).filter(([, n]) => n !== 0));
