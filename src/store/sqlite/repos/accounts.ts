// Users, service accounts, their keys, invitations and used assertion ids on SQLite. Writes to the first three bump
// db.authWrites.
import type { AssertionIdRepo, InviteRepo, KeyRepo, ServiceAccountRepo, UserRepo } from '../../contract/store.ts';
import type { SqliteDb } from '../db.ts';
import {
  toInvite,
  toKey,
  toSa,
  toUser,
  type InviteRow,
  type KeyRow,
  type SaRow,
  type UserRow,
} from '../../sql/rows.ts';

export function createUserRepo(db: SqliteDb): UserRepo {
  return {
    async create(u) {
      db.authWrites++;
      db.run(
        'INSERT INTO users (id, email, display_name, password_hash, active, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?)',
        u.id,
        u.email,
        u.displayName,
        u.passwordHash,
        u.active ? 1 : 0,
        u.createTime,
        u.updateTime,
      );
    },
    async get(id) {
      const r = db.get<UserRow>('SELECT * FROM users WHERE id = ?', id);
      return r ? toUser(r) : null;
    },
    async getByEmail(email) {
      const r = db.get<UserRow>('SELECT * FROM users WHERE email = ?', email.toLowerCase());
      return r ? toUser(r) : null;
    },
    async update(u) {
      db.authWrites++;
      db.run(
        'UPDATE users SET display_name = ?, password_hash = ?, active = ?, update_time = ? WHERE id = ?',
        u.displayName,
        u.passwordHash,
        u.active ? 1 : 0,
        u.updateTime,
        u.id,
      );
    },
    async endSessions(id) {
      db.authWrites++;
      db.run('UPDATE users SET token_generation = token_generation + 1 WHERE id = ?', id);
    },
  };
}

export function createAssertionIdRepo(db: SqliteDb): AssertionIdRepo {
  return {
    async use(keyId, jti, expireTime, now) {
      // A row remembered until `now` or earlier is an assertion that could not pass the expiry check any more: one
      // with the same jti now is a new one, taken (the periodic prune may not have run yet).
      return (
        db.run(
          `INSERT INTO used_assertions (key_id, jti, expire_time) VALUES (?, ?, ?)
         ON CONFLICT (key_id, jti) DO UPDATE SET expire_time = excluded.expire_time WHERE used_assertions.expire_time <= ?`,
          keyId,
          jti,
          expireTime,
          now,
        ).changes > 0
      );
    },
    async deleteExpired(now, limit) {
      return db.run(
        'DELETE FROM used_assertions WHERE rowid IN (SELECT rowid FROM used_assertions WHERE expire_time <= ? LIMIT +?)',
        now,
        limit,
      ).changes;
    },
  };
}

export function createServiceAccountRepo(db: SqliteDb): ServiceAccountRepo {
  const read = async (id: string) => {
    const r = db.get<SaRow>('SELECT * FROM service_accounts WHERE id = ?', id);
    return r ? toSa(r) : null;
  };
  return {
    async create(sa) {
      db.authWrites++;
      db.run(
        'INSERT INTO service_accounts (id, project_id, email, display_name, enable_basic_auth, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?)',
        sa.id,
        sa.projectId,
        sa.email,
        sa.displayName,
        sa.enableBasicAuth ? 1 : 0,
        sa.createTime,
        sa.updateTime,
      );
    },
    get: read,
    // One writer: a transaction's read is never overtaken, so no lock is needed.
    getForUpdate: read,
    async getByEmail(email) {
      const r = db.get<SaRow>('SELECT * FROM service_accounts WHERE email = ?', email.toLowerCase());
      return r ? toSa(r) : null;
    },
    async listByProject(projectId, range) {
      return db
        .all<SaRow>(
          'SELECT * FROM service_accounts WHERE project_id = ? AND id > ? ORDER BY id LIMIT +?',
          projectId,
          range.after ?? '',
          range.limit,
        )
        .map(toSa);
    },
    async update(sa) {
      db.authWrites++;
      db.run(
        'UPDATE service_accounts SET display_name = ?, enable_basic_auth = ?, update_time = ? WHERE id = ?',
        sa.displayName,
        sa.enableBasicAuth ? 1 : 0,
        sa.updateTime,
        sa.id,
      );
    },
    async delete(id) {
      db.authWrites++;
      db.run('DELETE FROM memberships WHERE member_id = ?', id);
      db.run('DELETE FROM service_account_keys WHERE service_account_id = ?', id);
      db.run('DELETE FROM service_accounts WHERE id = ?', id);
    },
  };
}

export function createKeyRepo(db: SqliteDb): KeyRepo {
  return {
    async create(k) {
      db.authWrites++;
      db.run(
        'INSERT INTO service_account_keys (id, service_account_id, secret_enc, create_time) VALUES (?, ?, ?, ?)',
        k.id,
        k.serviceAccountId,
        k.secretEnc,
        k.createTime,
      );
    },
    async get(id) {
      const r = db.get<KeyRow>('SELECT * FROM service_account_keys WHERE id = ?', id);
      return r ? toKey(r) : null;
    },
    async listByServiceAccount(saId, range) {
      return db
        .all<KeyRow>(
          'SELECT * FROM service_account_keys WHERE service_account_id = ? AND id > ? ORDER BY id LIMIT +?',
          saId,
          range.after ?? '',
          range.limit,
        )
        .map(toKey);
    },
    async countByServiceAccount(saId) {
      return db.get<{ n: number }>('SELECT count(*) AS n FROM service_account_keys WHERE service_account_id = ?', saId)!
        .n;
    },
    async delete(id) {
      db.authWrites++;
      db.run('DELETE FROM service_account_keys WHERE id = ?', id);
    },
  };
}

export function createInviteRepo(db: SqliteDb): InviteRepo {
  return {
    async create(i) {
      db.run(
        'INSERT INTO invites (token_hash, user_id, organization_id, expire_time, used_time) VALUES (?, ?, ?, ?, ?)',
        i.tokenHash,
        i.userId,
        i.organizationId,
        i.expireTime,
        i.usedTime,
      );
    },
    async get(tokenHash) {
      const r = db.get<InviteRow>('SELECT * FROM invites WHERE token_hash = ?', tokenHash);
      return r ? toInvite(r) : null;
    },
    async markUsed(tokenHash, usedTime) {
      return (
        db.run('UPDATE invites SET used_time = ? WHERE token_hash = ? AND used_time IS NULL', usedTime, tokenHash)
          .changes > 0
      );
    },
    async revokeUnused(userId, organizationId, usedTime) {
      return db.run(
        'UPDATE invites SET used_time = ? WHERE user_id = ? AND used_time IS NULL AND (organization_id = ? OR organization_id IS NULL)',
        usedTime,
        userId,
        organizationId,
      ).changes;
    },
  };
}
