// Project and organization memberships on PostgreSQL. Writes move the auth version through a trigger.
import type { MembershipRepo } from '../../contract/store.ts';
import type { Sql } from '../db.ts';
import { toMembership, type MembershipRow } from '../../sql/rows.ts';

export function createMembershipRepo(sql: Sql): MembershipRepo {
  return {
    async get(scopeType, scopeId, memberId) {
      const [r] = await sql.query<MembershipRow>(
        'SELECT * FROM memberships WHERE scope_type = $1 AND scope_id = $2 AND member_id = $3',
        [scopeType, scopeId, memberId],
      );
      return r ? toMembership(r) : null;
    },
    async listByScope(scopeType, scopeId, range) {
      const [t, m] = range.after ?? [-1, ''];
      // Member ids compare byte-wise, as on SQLite, so a cursor means the same whatever the database's collation.
      const rows = await sql.query<MembershipRow>(
        `SELECT * FROM memberships WHERE scope_type = $1 AND scope_id = $2
           AND (create_time > $3 OR (create_time = $3 AND member_id COLLATE "C" > $4))
         ORDER BY create_time, member_id COLLATE "C" LIMIT $5`,
        [scopeType, scopeId, t, m, range.limit],
      );
      return rows.map(toMembership);
    },
    async listByMember(memberId) {
      const rows = await sql.query<MembershipRow>(
        'SELECT * FROM memberships WHERE member_id = $1 ORDER BY create_time, scope_id COLLATE "C"',
        [memberId],
      );
      return rows.map(toMembership);
    },
    async create(m) {
      await sql.run(
        'INSERT INTO memberships (scope_type, scope_id, member_id, account_type, roles, status, create_time) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [m.scopeType, m.scopeId, m.memberId, m.accountType, JSON.stringify(m.roles), m.status, m.createTime],
      );
    },
    async updateRoles(scopeType, scopeId, memberId, roles) {
      await sql.run('UPDATE memberships SET roles = $1 WHERE scope_type = $2 AND scope_id = $3 AND member_id = $4', [
        JSON.stringify(roles),
        scopeType,
        scopeId,
        memberId,
      ]);
    },
    async delete(scopeType, scopeId, memberId) {
      await sql.run('DELETE FROM memberships WHERE scope_type = $1 AND scope_id = $2 AND member_id = $3', [
        scopeType,
        scopeId,
        memberId,
      ]);
    },
    async acceptAll(memberId) {
      await sql.run(`UPDATE memberships SET status = 'ACCEPTED' WHERE member_id = $1 AND status = 'PENDING'`, [
        memberId,
      ]);
    },
    async accept(scopeType, scopeId, memberId) {
      return (
        (await sql.run(
          `UPDATE memberships SET status = 'ACCEPTED' WHERE scope_type = $1 AND scope_id = $2 AND member_id = $3 AND status = 'PENDING'`,
          [scopeType, scopeId, memberId],
        )) > 0
      );
    },
    async countAcceptedOrganizationAdmins(organizationId) {
      const [r] = await sql.query<{ n: number }>(
        `SELECT count(*) AS n FROM memberships WHERE scope_type = 'organization' AND scope_id = $1 AND status = 'ACCEPTED'
           AND roles::jsonb @> '["roles/organization.admin"]'`,
        [organizationId],
      );
      return r!.n;
    },
  };
}
