// Contact groups (of an organization) and contacts (of a project) on PostgreSQL.
import type { ContactRepo } from '../../contract/alerting.ts';
import type { Sql } from '../db.ts';
import { toContact, toContactGroup, type ContactGroupRow, type ContactRow } from '../../sql/alerting-rows.ts';

export function createContactRepo(sql: Sql): ContactRepo {
  return {
    async createGroup(g) {
      await sql.run(
        'INSERT INTO contact_groups (id, organization_id, display_name, description, create_time, update_time) VALUES ($1, $2, $3, $4, $5, $6)',
        [g.id, g.organizationId, g.displayName, g.description, g.createTime, g.updateTime],
      );
    },
    async getGroup(id) {
      const [r] = await sql.query<ContactGroupRow>('SELECT * FROM contact_groups WHERE id = $1', [id]);
      return r ? toContactGroup(r) : null;
    },
    async listGroups(organizationId, range) {
      const rows = await sql.query<ContactGroupRow>(
        'SELECT * FROM contact_groups WHERE organization_id = $1 AND id > $2 ORDER BY id LIMIT $3',
        [organizationId, range.after ?? '', range.limit],
      );
      return rows.map(toContactGroup);
    },
    async updateGroup(g) {
      await sql.run('UPDATE contact_groups SET display_name = $1, description = $2, update_time = $3 WHERE id = $4', [
        g.displayName,
        g.description,
        g.updateTime,
        g.id,
      ]);
    },
    async deleteGroup(id) {
      // One statement, so it is all or nothing outside a transaction too.
      await sql.run(
        `WITH c AS (UPDATE contacts SET contact_group_id = '' WHERE contact_group_id = $1)
         DELETE FROM contact_groups WHERE id = $1`,
        [id],
      );
    },
    async countInGroup(groupId) {
      if (groupId === '') return 0;
      const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM contacts WHERE contact_group_id = $1', [
        groupId,
      ]);
      return r!.n;
    },
    async create(c) {
      await sql.run(
        `INSERT INTO contacts (id, project_id, contact_group_id, display_name, email, phone_number, create_time, update_time)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [c.id, c.projectId, c.contactGroupId, c.displayName, c.email, c.phoneNumber, c.createTime, c.updateTime],
      );
    },
    async get(id) {
      const [r] = await sql.query<ContactRow>('SELECT * FROM contacts WHERE id = $1', [id]);
      return r ? toContact(r) : null;
    },
    async listByProject(projectId, range) {
      const rows = await sql.query<ContactRow>(
        'SELECT * FROM contacts WHERE project_id = $1 AND id > $2 ORDER BY id LIMIT $3',
        [projectId, range.after ?? '', range.limit],
      );
      return rows.map(toContact);
    },
    async listInGroup(projectId, groupId) {
      // '' is no group: never a group's contacts.
      if (groupId === '') return [];
      const rows = await sql.query<ContactRow>(
        'SELECT * FROM contacts WHERE contact_group_id = $1 AND project_id = $2 ORDER BY id',
        [groupId, projectId],
      );
      return rows.map(toContact);
    },
    async update(c) {
      await sql.run(
        'UPDATE contacts SET contact_group_id = $1, display_name = $2, email = $3, phone_number = $4, update_time = $5 WHERE id = $6',
        [c.contactGroupId, c.displayName, c.email, c.phoneNumber, c.updateTime, c.id],
      );
    },
    async delete(id) {
      await sql.run('DELETE FROM contacts WHERE id = $1', [id]);
    },
  };
}
