// Sealed values on SQLite (master key rotation): key secrets and connector signature secrets, current and previous.
import type { SealedRepo, SealedValue } from '../../contract/store.ts';
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
      return [
        ...keys.map((r): SealedValue => ({ kind: 'key', id: r.id, sealed: r.sealed })),
        ...connectors.map((r): SealedValue => ({ kind: 'connector', id: r.id, sealed: r.sealed })),
        ...previous.map((r): SealedValue => ({ kind: 'previousSecret', id: r.id, sealed: r.sealed })),
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
      return false; // one process owns this store: it keeps no shared settings
    },
  };
}
