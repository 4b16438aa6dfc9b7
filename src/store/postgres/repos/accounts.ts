// Users, service accounts, their keys, invitations and used assertion ids on PostgreSQL. Writes to the first three
// move the auth version through triggers.
import type { AssertionIdRepo, InviteRepo, KeyRepo, ServiceAccountRepo, UserRepo } from '../../contract/store.ts';
import type { Sql } from '../db.ts';
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

// Keyset paging compares and orders ids byte-wise, as SQLite does, whatever the database's default collation.

export function createUserRepo(sql: Sql): UserRepo {
  return {
    async create(u) {
      await sql.run(
        'INSERT INTO users (id, email, display_name, password_hash, active, create_time, update_time) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [u.id, u.email, u.displayName, u.passwordHash, u.active, u.createTime, u.updateTime],
      );
    },
    async get(id) {
      const [r] = await sql.query<UserRow>('SELECT * FROM users WHERE id = $1', [id]);
      return r ? toUser(r) : null;
    },
    async getByEmail(email) {
      // Emails are stored lower-cased by the services; the lookup folds the one asked for.
      const [r] = await sql.query<UserRow>('SELECT * FROM users WHERE email = $1', [email.toLowerCase()]);
      return r ? toUser(r) : null;
    },
    async update(u) {
      await sql.run(
        'UPDATE users SET display_name = $1, password_hash = $2, active = $3, update_time = $4 WHERE id = $5',
        [u.displayName, u.passwordHash, u.active, u.updateTime, u.id],
      );
    },
    async endSessions(id) {
      // The users trigger moves the auth version: every process drops its cached principals at its next request.
      await sql.run('UPDATE users SET token_generation = token_generation + 1 WHERE id = $1', [id]);
    },
  };
}

export function createAssertionIdRepo(sql: Sql): AssertionIdRepo {
  return {
    async use(keyId, jti, expireTime, now) {
      // The unique key decides between processes; a row remembered until `now` or earlier is taken over (as SQLite).
      return (
        (await sql.run(
          `INSERT INTO used_assertions (key_id, jti, expire_time) VALUES ($1, $2, $3)
         ON CONFLICT (key_id, jti) DO UPDATE SET expire_time = excluded.expire_time WHERE used_assertions.expire_time <= $4`,
          [keyId, jti, expireTime, now],
        )) > 0
      );
    },
    async deleteExpired(now, limit) {
      // The outer condition again: a row taken over by use() meanwhile is checked anew after its lock, and stays.
      return sql.run(
        `DELETE FROM used_assertions WHERE expire_time <= $1
           AND (key_id, jti) IN (SELECT key_id, jti FROM used_assertions WHERE expire_time <= $1 LIMIT $2)`,
        [now, limit],
      );
    },
  };
}

export function createServiceAccountRepo(sql: Sql): ServiceAccountRepo {
  return {
    async create(sa) {
      await sql.run(
        'INSERT INTO service_accounts (id, project_id, email, display_name, enable_basic_auth, create_time, update_time) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [sa.id, sa.projectId, sa.email, sa.displayName, sa.enableBasicAuth, sa.createTime, sa.updateTime],
      );
    },
    async get(id) {
      const [r] = await sql.query<SaRow>('SELECT * FROM service_accounts WHERE id = $1', [id]);
      return r ? toSa(r) : null;
    },
    async getForUpdate(id) {
      const [r] = await sql.query<SaRow>('SELECT * FROM service_accounts WHERE id = $1 FOR NO KEY UPDATE', [id]);
      return r ? toSa(r) : null;
    },
    async getByEmail(email) {
      const [r] = await sql.query<SaRow>('SELECT * FROM service_accounts WHERE email = $1', [email.toLowerCase()]);
      return r ? toSa(r) : null;
    },
    async listByProject(projectId, range) {
      const rows = await sql.query<SaRow>(
        'SELECT * FROM service_accounts WHERE project_id = $1 AND id COLLATE "C" > $2 ORDER BY id COLLATE "C" LIMIT $3',
        [projectId, range.after ?? '', range.limit],
      );
      return rows.map(toSa);
    },
    async update(sa) {
      await sql.run(
        'UPDATE service_accounts SET display_name = $1, enable_basic_auth = $2, update_time = $3 WHERE id = $4',
        [sa.displayName, sa.enableBasicAuth, sa.updateTime, sa.id],
      );
    },
    async delete(id) {
      // One statement, so the cascade is all or nothing outside a transaction too. The foreign keys are checked
      // at its end, once the keys are gone.
      await sql.run(
        `WITH m AS (DELETE FROM memberships WHERE member_id = $1),
           k AS (DELETE FROM service_account_keys WHERE service_account_id = $1)
         DELETE FROM service_accounts WHERE id = $1`,
        [id],
      );
    },
  };
}

export function createKeyRepo(sql: Sql): KeyRepo {
  return {
    async create(k) {
      await sql.run(
        'INSERT INTO service_account_keys (id, service_account_id, secret_enc, create_time) VALUES ($1, $2, $3, $4)',
        [k.id, k.serviceAccountId, k.secretEnc, k.createTime],
      );
    },
    async get(id) {
      const [r] = await sql.query<KeyRow>('SELECT * FROM service_account_keys WHERE id = $1', [id]);
      return r ? toKey(r) : null;
    },
    async listByServiceAccount(saId, range) {
      const rows = await sql.query<KeyRow>(
        'SELECT * FROM service_account_keys WHERE service_account_id = $1 AND id COLLATE "C" > $2 ORDER BY id COLLATE "C" LIMIT $3',
        [saId, range.after ?? '', range.limit],
      );
      return rows.map(toKey);
    },
    async countByServiceAccount(saId) {
      const [r] = await sql.query<{ n: number }>(
        'SELECT count(*) AS n FROM service_account_keys WHERE service_account_id = $1',
        [saId],
      );
      return r!.n;
    },
    async delete(id) {
      await sql.run('DELETE FROM service_account_keys WHERE id = $1', [id]);
    },
  };
}

export function createInviteRepo(sql: Sql): InviteRepo {
  return {
    async create(i) {
      await sql.run(
        'INSERT INTO invites (token_hash, user_id, organization_id, expire_time, used_time) VALUES ($1, $2, $3, $4, $5)',
        [i.tokenHash, i.userId, i.organizationId, i.expireTime, i.usedTime],
      );
    },
    async get(tokenHash) {
      const [r] = await sql.query<InviteRow>('SELECT * FROM invites WHERE token_hash = $1', [tokenHash]);
      return r ? toInvite(r) : null;
    },
    async markUsed(tokenHash, usedTime) {
      return (
        (await sql.run('UPDATE invites SET used_time = $1 WHERE token_hash = $2 AND used_time IS NULL', [
          usedTime,
          tokenHash,
        ])) > 0
      );
    },
    async revokeUnused(userId, organizationId, usedTime) {
      return sql.run(
        'UPDATE invites SET used_time = $1 WHERE user_id = $2 AND used_time IS NULL AND (organization_id = $3 OR organization_id IS NULL)',
        [usedTime, userId, organizationId],
      );
    },
  };
}
