// Store contract: the sealed values (master key rotation). Every key secret and every non-empty signature secret is
// listed; replacing one changes that value alone, read back through the owning repository (caches included).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SealedValue } from '../../../src/store/contract/store.ts';
import { key, seedConnector, seedProject, serviceAccount, withFreshStore, type OpenStore } from './fixtures.ts';

export function sealedContract(open: OpenStore): void {
  describe('sealed values', () => {
    it('lists every key secret and every non-empty signature secret, and replaces each in place', () =>
      withFreshStore(open, async (store) => {
        const p = await seedProject(store);
        const sa = serviceAccount(p.id);
        await store.serviceAccounts.create(sa);
        const k = key(sa.id, { secretEnc: 'sealed-key' });
        await store.keys.create(k);
        const signed = await seedConnector(store, { projectId: p.id, signatureSecretSealed: 'sealed-signature' });
        await seedConnector(store, { projectId: p.id, signatureSecretSealed: '' });
        // Read once, so a backend that caches connectors has this one cached.
        assert.equal((await store.dataConnectors.get(signed.id))?.signatureSecretSealed, 'sealed-signature');

        const listed = (await store.sealed.list()).filter((v) => v.kind !== 'setting');
        const byKind = (kind: SealedValue['kind']) => listed.filter((v) => v.kind === kind);
        assert.deepEqual(byKind('key'), [{ kind: 'key', id: k.id, sealed: 'sealed-key' }]);
        assert.deepEqual(byKind('connector'), [{ kind: 'connector', id: signed.id, sealed: 'sealed-signature' }]);

        const version = await store.authVersion();
        const before = await store.dataConnectors.get(signed.id);
        assert.equal(
          await store.transaction(async (tx) => {
            await tx.sealed.replace({ kind: 'key', id: k.id, sealed: 'resealed-key' });
            return tx.sealed.replace({ kind: 'connector', id: signed.id, sealed: 'resealed-signature' });
          }),
          true,
        );
        assert.equal((await store.keys.get(k.id))?.secretEnc, 'resealed-key');
        assert.deepEqual(await store.dataConnectors.get(signed.id), {
          ...before,
          signatureSecretSealed: 'resealed-signature',
        });
        assert.notEqual(await store.authVersion(), version, 'a key changed: cached principals must be looked up again');
        assert.equal(await store.sealed.replace({ kind: 'key', id: 'missing', sealed: 'x' }), false);
      }));

    it('a rolled-back transaction replaces nothing', () =>
      withFreshStore(open, async (store) => {
        const p = await seedProject(store);
        const signed = await seedConnector(store, { projectId: p.id, signatureSecretSealed: 'sealed-signature' });
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.sealed.replace({ kind: 'connector', id: signed.id, sealed: 'resealed' });
            throw new Error('undo');
          }),
          /undo/,
        );
        assert.equal((await store.dataConnectors.get(signed.id))?.signatureSecretSealed, 'sealed-signature');
      }));
  });
}
