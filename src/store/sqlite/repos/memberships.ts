// Project and organization memberships on SQLite. Every write bumps db.authWrites (principals carry memberships).
import type { MembershipRepo } from '../../contract/store.ts';
import { toJson, type SqliteDb } from '../db.ts';
import { toMembership, type MembershipRow } from '../../sql/rows.ts';

export function createMembershipRepo(db: SqliteDb): MembershipRepo {
  return {
    async get(scopeType, scopeId, memberId) {
      const r = db.get<MembershipRow>(
        'SELECT * FROM memberships WHERE scope_type = ? AND scope_id = ? AND member_id = ?',
        scopeType,
        scopeId,
        memberId,
      );
      return r ? toMembership(r) : null;
    },
    async listByScope(scopeType, scopeId, range) {
      const [t, m] = range.after ?? [-1, ''];
      return db
        .all<MembershipRow>(
          `SELECT * FROM memberships WHERE scope_type = ? AND scope_id = ? AND (create_time > ? OR (create_time = ? AND member_id > ?))
           ORDER BY create_time, member_id LIMIT +?`,
          scopeType,
          scopeId,
          t,
          t,
          m,
          range.limit,
        )
        .map(toMembership);
    },
    async listByMember(memberId) {
      return db
        .all<MembershipRow>('SELECT * FROM memberships WHERE member_id = ? ORDER BY create_time, scope_id', memberId)
        .map(toMembership);
    },
    async create(m) {
      db.authWrites++;
      db.run(
        'INSERT INTO memberships (scope_type, scope_id, member_id, account_type, roles, status, create_time) VALUES (?, ?, ?, ?, ?, ?, ?)',
        m.scopeType,
        m.scopeId,
        m.memberId,
        m.accountType,
        toJson(m.roles),
        m.status,
        m.createTime,
      );
    },
    async updateRoles(scopeType, scopeId, memberId, roles) {
      db.authWrites++;
      db.run(
        'UPDATE memberships SET roles = ? WHERE scope_type = ? AND scope_id = ? AND member_id = ?',
        toJson(roles),
        scopeType,
        scopeId,
        memberId,
      );
    },
    async delete(scopeType, scopeId, memberId) {
      db.authWrites++;
      db.run(
        'DELETE FROM memberships WHERE scope_type = ? AND scope_id = ? AND member_id = ?',
        scopeType,
        scopeId,
        memberId,
      );
    },
    async acceptAll(memberId) {
      db.authWrites++;
      db.run(`UPDATE memberships SET status = 'ACCEPTED' WHERE member_id = ? AND status = 'PENDING'`, memberId);
    },
    async accept(scopeType, scopeId, memberId) {
      db.authWrites++;
      return (
        db.run(
          `UPDATE memberships SET status = 'ACCEPTED' WHERE scope_type = ? AND scope_id = ? AND member_id = ? AND status = 'PENDING'`,
          scopeType,
          scopeId,
          memberId,
        ).changes > 0
      );
    },
    async countAcceptedOrganizationAdmins(organizationId) {
      return db.get<{ n: number }>(
        `SELECT count(*) AS n FROM memberships WHERE scope_type = 'organization' AND scope_id = ? AND status = 'ACCEPTED'
         AND EXISTS (SELECT 1 FROM json_each(roles) WHERE value = 'roles/organization.admin')`,
        organizationId,
      )!.n;
    },
  };
}
