// Sealed values on PostgreSQL (master key rotation): key secrets, connector signature secrets (current and previous),
// the signature secrets inside rules' specs and queued webhook notifications (sql/sealed.ts reads and rewrites the
// JSON, as on SQLite, so that both keep the same text), and the master key check the processes of the cluster agree on
// (cluster_settings).
import { MASTER_KEY_CHECK_SETTING } from '../../jobs/cluster.ts';
import type { SealedRepo, SealedValue } from '../../contract/store.ts';
import {
  OUTBOX_ID,
  outboxWebhookSecret,
  parseRuleWebhookId,
  ruleWebhookSecrets,
  withOutboxWebhookSecret,
  withRuleWebhookSecret,
} from '../../sql/sealed.ts';
import { cachedWrite, type ConfigView } from './config-cache.ts';
import type { Sql } from '../db.ts';

/**
 * Rewrites one JSON column of one row: reads it under the row's lock, writes `rewrite`'s text back only if the column
 * still holds what was read. Inside a transaction the lock holds to the commit, so the write always lands and a
 * concurrent update of the row waits for it, then writes its own (whole) text; a statement of its own (no
 * transaction) releases the lock at once, so a write made in between is seen by the check and the row read again.
 * False when the row is gone or `rewrite` finds nothing to change.
 */
async function rewriteLocked(
  sql: Sql,
  read: string,
  write: string,
  id: unknown,
  rewrite: (text: string) => string | null,
  writeWith: (run: () => Promise<number>) => Promise<number> = (run) => run(),
): Promise<boolean> {
  for (;;) {
    const [row] = await sql.query<{ text: string }>(read, [id]);
    const next = row && rewrite(row.text);
    if (!next) return false;
    if ((await writeWith(() => sql.run(write, [next, id, row.text]))) > 0) return true;
  }
}

export function createSealedRepo(sql: Sql, view?: ConfigView): SealedRepo {
  return {
    async list() {
      const keys = await sql.query<{ id: string; sealed: string }>(
        'SELECT id, secret_enc AS sealed FROM service_account_keys ORDER BY id',
      );
      const connectors = await sql.query<{ id: string; sealed: string }>(
        "SELECT id, signature_secret AS sealed FROM data_connectors WHERE signature_secret <> '' ORDER BY id",
      );
      const previous = await sql.query<{ id: string; sealed: string }>(
        "SELECT id, previous_signature_secret AS sealed FROM data_connectors WHERE previous_signature_secret <> '' ORDER BY id",
      );
      const settings = await sql.query<{ id: string; sealed: string }>(
        'SELECT name AS id, value AS sealed FROM cluster_settings WHERE name = $1',
        [MASTER_KEY_CHECK_SETTING],
      );
      const rules = await sql.query<{ id: string; spec: string }>('SELECT id, spec FROM rules ORDER BY id');
      const outbox = await sql.query<{ id: number; payload: string }>(
        "SELECT id, payload FROM alert_outbox WHERE type = 'WEBHOOK' ORDER BY id",
      );
      return [
        ...keys.map((r): SealedValue => ({ kind: 'key', id: r.id, sealed: r.sealed })),
        ...connectors.map((r): SealedValue => ({ kind: 'connector', id: r.id, sealed: r.sealed })),
        ...previous.map((r): SealedValue => ({ kind: 'previousSecret', id: r.id, sealed: r.sealed })),
        ...rules.flatMap((r) => ruleWebhookSecrets(r.id, r.spec)),
        ...outbox.flatMap((r) => outboxWebhookSecret(r.id, r.payload) ?? []),
        ...settings.map((r): SealedValue => ({ kind: 'setting', id: r.id, sealed: r.sealed })),
      ];
    },
    async replace(v) {
      switch (v.kind) {
        case 'key':
          return (await sql.run('UPDATE service_account_keys SET secret_enc = $1 WHERE id = $2', [v.sealed, v.id])) > 0;
        case 'connector':
          return (
            (await cachedWrite(view, () =>
              sql.run("UPDATE data_connectors SET signature_secret = $1 WHERE id = $2 AND signature_secret <> ''", [
                v.sealed,
                v.id,
              ]),
            )) > 0
          );
        case 'previousSecret':
          return (
            (await cachedWrite(view, () =>
              sql.run(
                "UPDATE data_connectors SET previous_signature_secret = $1 WHERE id = $2 AND previous_signature_secret <> ''",
                [v.sealed, v.id],
              ),
            )) > 0
          );
        case 'ruleWebhook': {
          const at = parseRuleWebhookId(v.id);
          if (!at) return false;
          // A rule write moves the config version (migration 019's trigger) and the enabled rules cached with it.
          return rewriteLocked(
            sql,
            'SELECT spec AS text FROM rules WHERE id = $1 FOR UPDATE',
            'UPDATE rules SET spec = $1 WHERE id = $2 AND spec = $3',
            at.ruleId,
            (spec) => withRuleWebhookSecret(spec, at.level, at.action, v.sealed),
            (run) => cachedWrite(view, run),
          );
        }
        case 'outboxWebhook':
          if (!OUTBOX_ID.test(v.id)) return false;
          return rewriteLocked(
            sql,
            "SELECT payload AS text FROM alert_outbox WHERE id = $1 AND type = 'WEBHOOK' FOR UPDATE",
            'UPDATE alert_outbox SET payload = $1 WHERE id = $2 AND payload = $3',
            Number(v.id),
            (payload) => withOutboxWebhookSecret(payload, v.sealed),
          );
        case 'setting':
          return (
            (await sql.run('UPDATE cluster_settings SET value = $1 WHERE name = $2 AND name = $3', [
              v.sealed,
              v.id,
              MASTER_KEY_CHECK_SETTING,
            ])) > 0
          );
      }
    },
  };
}
