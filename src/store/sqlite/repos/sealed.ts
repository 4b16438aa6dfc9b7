// Sealed values on SQLite (master key rotation): key secrets, connector signature secrets (current and previous), and
// the signature secrets inside rules' specs and queued webhook notifications (sql/sealed.ts reads and rewrites the JSON).
import type { SealedRepo, SealedValue } from '../../contract/store.ts';
import {
  OUTBOX_ID,
  outboxWebhookSecret,
  parseRuleWebhookId,
  ruleWebhookSecrets,
  withOutboxWebhookSecret,
  withRuleWebhookSecret,
} from '../../sql/sealed.ts';
import type { SqliteDb } from '../db.ts';

export function createSealedRepo(db: SqliteDb): SealedRepo {
  return {
    async list() {
      const keys = db.all<{ id: string; sealed: string }>(
        'SELECT id, secret_enc AS sealed FROM service_account_keys ORDER BY id',
      );
      const connectors = db.all<{ id: string; sealed: string }>(
        "SELECT id, signature_secret AS sealed FROM data_connectors WHERE signature_secret <> '' ORDER BY id",
      );
      const previous = db.all<{ id: string; sealed: string }>(
        "SELECT id, previous_signature_secret AS sealed FROM data_connectors WHERE previous_signature_secret <> '' ORDER BY id",
      );
      const rules = db.all<{ id: string; spec: string }>('SELECT id, spec FROM rules ORDER BY id');
      const outbox = db.all<{ id: number; payload: string }>(
        "SELECT id, payload FROM alert_outbox WHERE type = 'WEBHOOK' ORDER BY id",
      );
      return [
        ...keys.map((r): SealedValue => ({ kind: 'key', id: r.id, sealed: r.sealed })),
        ...connectors.map((r): SealedValue => ({ kind: 'connector', id: r.id, sealed: r.sealed })),
        ...previous.map((r): SealedValue => ({ kind: 'previousSecret', id: r.id, sealed: r.sealed })),
        ...rules.flatMap((r) => ruleWebhookSecrets(r.id, r.spec)),
        ...outbox.flatMap((r) => outboxWebhookSecret(r.id, r.payload) ?? []),
      ];
    },
    async replace(v) {
      if (v.kind === 'key') {
        db.authWrites++;
        return db.run('UPDATE service_account_keys SET secret_enc = ? WHERE id = ?', v.sealed, v.id).changes > 0;
      }
      if (v.kind === 'connector') {
        // The connector repository caches whole rows, the sealed secret included.
        db.caches.clearAll();
        return (
          db.run(
            "UPDATE data_connectors SET signature_secret = ? WHERE id = ? AND signature_secret <> ''",
            v.sealed,
            v.id,
          ).changes > 0
        );
      }
      if (v.kind === 'previousSecret') {
        db.caches.clearAll();
        return (
          db.run(
            "UPDATE data_connectors SET previous_signature_secret = ? WHERE id = ? AND previous_signature_secret <> ''",
            v.sealed,
            v.id,
          ).changes > 0
        );
      }
      // One process owns this store, and reading and writing run with no await between: no write comes in between.
      if (v.kind === 'ruleWebhook') {
        const at = parseRuleWebhookId(v.id);
        const row = at && db.get<{ spec: string }>('SELECT spec FROM rules WHERE id = ?', at.ruleId);
        const spec = row && withRuleWebhookSecret(row.spec, at.level, at.action, v.sealed);
        if (!spec) return false;
        // The rule repository caches the enabled rules of a project, specs included.
        db.caches.clearAll();
        return db.run('UPDATE rules SET spec = ? WHERE id = ?', spec, at.ruleId).changes > 0;
      }
      if (v.kind === 'outboxWebhook') {
        if (!OUTBOX_ID.test(v.id)) return false;
        const row = db.get<{ payload: string }>(
          "SELECT payload FROM alert_outbox WHERE id = ? AND type = 'WEBHOOK'",
          Number(v.id),
        );
        const payload = row && withOutboxWebhookSecret(row.payload, v.sealed);
        if (!payload) return false;
        return db.run('UPDATE alert_outbox SET payload = ? WHERE id = ?', payload, Number(v.id)).changes > 0;
      }
      return false; // one process owns this store: it keeps no shared settings
    },
  };
}
