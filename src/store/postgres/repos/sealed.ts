// Sealed values on PostgreSQL (master key rotation): key secrets, connector signature secrets (current and previous),
// and the master key check the processes of the cluster agree on (cluster_settings).
import { MASTER_KEY_CHECK_SETTING } from '../../jobs/cluster.ts';
import type { SealedRepo, SealedValue } from '../../contract/store.ts';
import { cachedWrite, type ConfigView } from './config-cache.ts';
import type { Sql } from '../db.ts';

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
      return [
        ...keys.map((r): SealedValue => ({ kind: 'key', id: r.id, sealed: r.sealed })),
        ...connectors.map((r): SealedValue => ({ kind: 'connector', id: r.id, sealed: r.sealed })),
        ...previous.map((r): SealedValue => ({ kind: 'previousSecret', id: r.id, sealed: r.sealed })),
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
