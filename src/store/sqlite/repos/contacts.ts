// Contact groups (of an organization) and contacts (of a project) on SQLite.
import type { ContactRepo } from '../../contract/alerting.ts';
import type { SqliteDb } from '../db.ts';
import { toContact, toContactGroup, type ContactGroupRow, type ContactRow } from '../../sql/alerting-rows.ts';

export function createContactRepo(db: SqliteDb): ContactRepo {
  return {
    async createGroup(g) {
      db.run(
        'INSERT INTO contact_groups (id, organization_id, display_name, description, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?)',
        g.id,
        g.organizationId,
        g.displayName,
        g.description,
        g.createTime,
        g.updateTime,
      );
    },
    async getGroup(id) {
      const r = db.get<ContactGroupRow>('SELECT * FROM contact_groups WHERE id = ?', id);
      return r ? toContactGroup(r) : null;
    },
    async listGroups(organizationId, range) {
      return db
        .all<ContactGroupRow>(
          'SELECT * FROM contact_groups WHERE organization_id = ? AND id > ? ORDER BY id LIMIT +?',
          organizationId,
          range.after ?? '',
          range.limit,
        )
        .map(toContactGroup);
    },
    async updateGroup(g) {
      db.run(
        'UPDATE contact_groups SET display_name = ?, description = ?, update_time = ? WHERE id = ?',
        g.displayName,
        g.description,
        g.updateTime,
        g.id,
      );
    },
    async deleteGroup(id) {
      // Called in a transaction or not: one writer, and the two statements in a savepoint of their own.
      const run = () => {
        db.run("UPDATE contacts SET contact_group_id = '' WHERE contact_group_id = ?", id);
        db.run('DELETE FROM contact_groups WHERE id = ?', id);
      };
      if (db.raw.inTransaction) run();
      else db.raw.transaction(run)();
    },
    async countInGroup(groupId) {
      if (groupId === '') return 0;
      return db.get<{ n: number }>('SELECT count(*) AS n FROM contacts WHERE contact_group_id = ?', groupId)!.n;
    },
    async create(c) {
      db.run(
        `INSERT INTO contacts (id, project_id, contact_group_id, display_name, email, phone_number, create_time, update_time)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        c.id,
        c.projectId,
        c.contactGroupId,
        c.displayName,
        c.email,
        c.phoneNumber,
        c.createTime,
        c.updateTime,
      );
    },
    async get(id) {
      const r = db.get<ContactRow>('SELECT * FROM contacts WHERE id = ?', id);
      return r ? toContact(r) : null;
    },
    async listByProject(projectId, range) {
      return db
        .all<ContactRow>(
          'SELECT * FROM contacts WHERE project_id = ? AND id > ? ORDER BY id LIMIT +?',
          projectId,
          range.after ?? '',
          range.limit,
        )
        .map(toContact);
    },
    async listInGroup(projectId, groupId) {
      // '' is no group: never a group's contacts.
      if (groupId === '') return [];
      return db
        .all<ContactRow>(
          'SELECT * FROM contacts WHERE contact_group_id = ? AND project_id = ? ORDER BY id',
          groupId,
          projectId,
        )
        .map(toContact);
    },
    async update(c) {
      db.run(
        'UPDATE contacts SET contact_group_id = ?, display_name = ?, email = ?, phone_number = ?, update_time = ? WHERE id = ?',
        c.contactGroupId,
        c.displayName,
        c.email,
        c.phoneNumber,
        c.updateTime,
        c.id,
      );
    },
    async delete(id) {
      db.run('DELETE FROM contacts WHERE id = ?', id);
    },
  };
}
