// Store contract: the sealed values (master key rotation). Every key secret and every non-empty signature secret,
// current or previous (extensions §X3), is listed; replacing one changes that value alone, read back through the
// owning repository (caches included).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SealedValue } from '../../../src/store/contract/store.ts';
import { key, seedConnector, seedProject, serviceAccount, T0, withFreshStore, type OpenStore } from './fixtures.ts';

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

    it("lists a rotation's previous secret apart (the connector's id), and replaces it alone", () =>
      withFreshStore(open, async (store) => {
        const p = await seedProject(store);
        const rotating = await seedConnector(store, {
          projectId: p.id,
          signatureSecretSealed: 'sealed-new',
          previousSignatureSecretSealed: 'sealed-old',
          previousSignatureSecretExpireTime: T0 + 1,
        });
        const plain = await seedConnector(store, { projectId: p.id, signatureSecretSealed: 'sealed-only' });
        assert.equal((await store.dataConnectors.get(rotating.id))?.previousSignatureSecretSealed, 'sealed-old');

        const listed = (await store.sealed.list()).filter((v) => v.kind === 'connector' || v.kind === 'previousSecret');
        const sorted = (values: SealedValue[]) =>
          [...values].sort((x, y) => `${x.kind}/${x.id}`.localeCompare(`${y.kind}/${y.id}`));
        assert.deepEqual(
          sorted(listed),
          sorted([
            { kind: 'connector', id: rotating.id, sealed: 'sealed-new' },
            { kind: 'connector', id: plain.id, sealed: 'sealed-only' },
            { kind: 'previousSecret', id: rotating.id, sealed: 'sealed-old' },
          ]),
        );

        const before = await store.dataConnectors.get(rotating.id);
        assert.equal(
          await store.transaction((tx) =>
            tx.sealed.replace({ kind: 'previousSecret', id: rotating.id, sealed: 'resealed-old' }),
          ),
          true,
        );
        assert.deepEqual(await store.dataConnectors.get(rotating.id), {
          ...before,
          previousSignatureSecretSealed: 'resealed-old',
        });
        // A connector without a previous secret has none to replace: nothing is written.
        assert.equal(await store.sealed.replace({ kind: 'previousSecret', id: plain.id, sealed: 'x' }), false);
        assert.equal((await store.dataConnectors.get(plain.id))?.previousSignatureSecretSealed, '');
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
