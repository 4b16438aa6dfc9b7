// Store contract: the sealed values (master key rotation). Every key secret and every non-empty signature secret,
// current or previous (extensions §X3), of a rule's webhook action or of a queued webhook notification (§X5), is
// listed; replacing one changes that value alone, read back through the owning repository (caches included).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store, SealedValue } from '../../../src/store/contract/store.ts';
import {
  alert,
  id,
  key,
  MINUTE,
  notification,
  seedConnector,
  seedProject,
  seedRule,
  serviceAccount,
  T0,
  withFreshStore,
  type OpenStore,
} from './fixtures.ts';

const webhook = (sealed: string) => ({
  type: 'WEBHOOK',
  webhook: { url: 'https://example.org/hook', headers: { 'X-Api-Key': 'k' }, signatureSecretSealed: sealed },
});
const email = { type: 'EMAIL', email: { recipients: ['a@example.org'], contactGroups: [], subject: 's', body: 'b' } };

/** A rule's spec as the alerts layer writes it, with these actions per escalation level. */
const specWith = (levels: unknown[][]) => ({
  devices: [],
  deviceLabels: {},
  projectLabels: {},
  trigger: { field: 'touch' },
  escalationLevels: levels.map((actions, i) => ({ displayName: `Level ${i + 1}`, actions, escalateAfter: '60s' })),
  reminderNotifications: false,
  resolvedNotifications: true,
});

const webhookPayload = (sealed: string) =>
  JSON.stringify({
    url: 'https://example.org/hook',
    headers: { 'X-Sensorcloud-Alert-Transition': 'TRIGGERED' },
    signatureSecretSealed: sealed,
    body: '{"alert":{},"event":null}',
  });

const byKindAndId = (values: SealedValue[]) =>
  [...values].sort((x, y) => `${x.kind}/${x.id}`.localeCompare(`${y.kind}/${y.id}`));

/** The payloads of every outbox row, by id (claimed and let go: a claim is the only read of a row). */
async function payloads(store: Store): Promise<Map<number, string>> {
  const lease = T0 + 100 * MINUTE;
  const claimed = await store.outbox.claim(lease, lease + 1, 1000);
  for (const row of claimed) assert.ok(await store.outbox.reschedule(row.id, row.attempts, T0, lease + 1));
  return new Map(claimed.map((row) => [row.id, row.payload]));
}

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

    it("lists the non-empty signature secrets of rules' webhook actions and of queued webhook notifications, and replaces each alone in its JSON", () =>
      withFreshStore(open, async (store) => {
        const p = await seedProject(store);
        const spec = specWith([
          [email, webhook('sealed-0-1')],
          [webhook(''), webhook('sealed-1-1')],
        ]);
        const signed = await seedRule(store, { projectId: p.id, spec: JSON.stringify(spec), updateTime: T0 + 5 });
        await seedRule(store, { projectId: p.id, spec: JSON.stringify(specWith([[webhook(''), email]])) });
        await seedRule(store, { projectId: p.id }); // a spec with no escalation levels
        const a = alert(signed, id('d'));
        assert.ok(await store.alerts.createIfNone(a));
        const [queued, unsigned, mail] = await store.outbox.add([
          notification(a.id, T0, { type: 'WEBHOOK', payload: webhookPayload('sealed-queued') }),
          notification(a.id, T0, { entry: 1, type: 'WEBHOOK', payload: webhookPayload('') }),
          notification(a.id, T0, { entry: 2 }),
        ]);
        // Read once, so a backend that caches the enabled rules has this one cached.
        const cached = (await store.rules.listEnabledByProject(p.id)).find((r) => r.id === signed.id);
        assert.equal(cached?.spec, JSON.stringify(spec));

        const listed = (await store.sealed.list()).filter(
          (v) => v.kind === 'ruleWebhook' || v.kind === 'outboxWebhook',
        );
        assert.deepEqual(
          byKindAndId(listed),
          byKindAndId([
            { kind: 'ruleWebhook', id: `${signed.id}/0/1`, sealed: 'sealed-0-1' },
            { kind: 'ruleWebhook', id: `${signed.id}/1/1`, sealed: 'sealed-1-1' },
            { kind: 'outboxWebhook', id: String(queued), sealed: 'sealed-queued' },
          ]),
        );

        const before = await store.rules.get(signed.id);
        const rows = await payloads(store);
        assert.equal(
          await store.transaction(async (tx) => {
            assert.equal(
              await tx.sealed.replace({ kind: 'ruleWebhook', id: `${signed.id}/1/1`, sealed: 'resealed-1-1' }),
              true,
            );
            return tx.sealed.replace({ kind: 'outboxWebhook', id: String(queued), sealed: 'resealed-queued' });
          }),
          true,
        );
        spec.escalationLevels[1]!.actions[1] = webhook('resealed-1-1');
        const after = await store.rules.get(signed.id);
        assert.deepEqual({ ...after, spec: JSON.parse(after!.spec) }, { ...before, spec });
        assert.deepEqual(
          JSON.parse((await store.rules.listEnabledByProject(p.id)).find((r) => r.id === signed.id)!.spec),
          spec,
        );
        assert.deepEqual(await payloads(store), new Map([...rows, [queued!, webhookPayload('resealed-queued')]]));
        assert.deepEqual(
          byKindAndId(
            (await store.sealed.list()).filter((v) => v.kind === 'ruleWebhook' || v.kind === 'outboxWebhook'),
          ),
          byKindAndId([
            { kind: 'ruleWebhook', id: `${signed.id}/0/1`, sealed: 'sealed-0-1' },
            { kind: 'ruleWebhook', id: `${signed.id}/1/1`, sealed: 'resealed-1-1' },
            { kind: 'outboxWebhook', id: String(queued), sealed: 'resealed-queued' },
          ]),
        );

        // Nothing to replace, nothing written: an unsigned webhook, an e-mail action, a level or action or rule that
        // is not there, an unsigned or e-mail notification, a row that is gone, an id that is none.
        for (const gone of [
          `${signed.id}/1/0`,
          `${signed.id}/0/0`,
          `${signed.id}/2/0`,
          `${signed.id}/0/2`,
          'missing/0/1',
          signed.id,
          `${signed.id}/-1/1`,
        ])
          assert.equal(await store.sealed.replace({ kind: 'ruleWebhook', id: gone, sealed: 'x' }), false, gone);
        for (const gone of [String(unsigned), String(mail), String(queued! + 1000), 'x', '-1', '1e3'])
          assert.equal(await store.sealed.replace({ kind: 'outboxWebhook', id: gone, sealed: 'x' }), false, gone);
        assert.deepEqual(await store.rules.get(signed.id), after);
        assert.deepEqual(await payloads(store), new Map([...rows, [queued!, webhookPayload('resealed-queued')]]));
      }));

    it('replaces a webhook secret in the spec as stored then, not as listed: a rule update made meanwhile is kept', () =>
      withFreshStore(open, async (store) => {
        const p = await seedProject(store);
        const rule = await seedRule(store, { projectId: p.id, spec: JSON.stringify(specWith([[webhook('sealed')]])) });
        const changed = specWith([[webhook('sealed'), email]]);
        changed.trigger = { field: 'temperature' };
        const updated = {
          ...rule,
          displayName: 'Changed meanwhile',
          spec: JSON.stringify(changed),
          updateTime: T0 + 9,
        };
        const replace = () => store.sealed.replace({ kind: 'ruleWebhook', id: `${rule.id}/0/0`, sealed: 'resealed' });
        if (store.exclusive) {
          assert.equal((await store.sealed.list()).filter((v) => v.kind === 'ruleWebhook').length, 1);
          await store.rules.update(updated);
          assert.equal(await replace(), true);
        } else {
          // A shared store: the update is another process's, committed between the rotation's list and its replace.
          assert.equal(
            await store.transaction(async (tx) => {
              assert.equal((await tx.sealed.list()).filter((v) => v.kind === 'ruleWebhook').length, 1);
              await store.rules.update(updated);
              return tx.sealed.replace({ kind: 'ruleWebhook', id: `${rule.id}/0/0`, sealed: 'resealed' });
            }),
            true,
          );
        }
        changed.escalationLevels[0]!.actions[0] = webhook('resealed');
        const stored = await store.rules.get(rule.id);
        assert.deepEqual({ ...stored, spec: JSON.parse(stored!.spec) }, { ...updated, spec: changed });
      }));

    it('a rolled-back transaction replaces nothing', () =>
      withFreshStore(open, async (store) => {
        const p = await seedProject(store);
        const signed = await seedConnector(store, { projectId: p.id, signatureSecretSealed: 'sealed-signature' });
        const spec = JSON.stringify(specWith([[webhook('sealed-hook')]]));
        const rule = await seedRule(store, { projectId: p.id, spec });
        const a = alert(rule, id('d'));
        assert.ok(await store.alerts.createIfNone(a));
        const [queued] = await store.outbox.add([
          notification(a.id, T0, { type: 'WEBHOOK', payload: webhookPayload('sealed-queued') }),
        ]);
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.sealed.replace({ kind: 'connector', id: signed.id, sealed: 'resealed' });
            await tx.sealed.replace({ kind: 'ruleWebhook', id: `${rule.id}/0/0`, sealed: 'resealed' });
            await tx.sealed.replace({ kind: 'outboxWebhook', id: String(queued), sealed: 'resealed' });
            throw new Error('undo');
          }),
          /undo/,
        );
        assert.equal((await store.dataConnectors.get(signed.id))?.signatureSecretSealed, 'sealed-signature');
        assert.equal((await store.rules.get(rule.id))?.spec, spec);
        assert.equal((await store.rules.listEnabledByProject(p.id))[0]?.spec, spec);
        assert.deepEqual(await payloads(store), new Map([[queued!, webhookPayload('sealed-queued')]]));
      }));
  });
}
