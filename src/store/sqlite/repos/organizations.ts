// Organizations and projects on SQLite.
import type { ProjectRecord } from '../../contract/records.ts';
import type { OrganizationRepo, ProjectListFilter, ProjectRepo, Range } from '../../contract/store.ts';
import { toJson, type SqliteDb } from '../db.ts';
import {
  toOrg,
  toProject,
  toProjectWithCounts,
  type OrgRow,
  type ProjectCountsRow,
  type ProjectRow,
} from '../../sql/rows.ts';

export function createOrganizationRepo(db: SqliteDb): OrganizationRepo {
  return {
    async create(o) {
      db.run(
        'INSERT INTO organizations (id, display_name, create_time) VALUES (?, ?, ?)',
        o.id,
        o.displayName,
        o.createTime,
      );
    },
    async get(id) {
      const r = db.get<OrgRow>('SELECT * FROM organizations WHERE id = ?', id);
      return r ? toOrg(r) : null;
    },
    async list(ids, range) {
      return db
        .all<OrgRow>(
          'SELECT * FROM organizations WHERE id IN (SELECT value FROM json_each(?)) AND id > ? ORDER BY id LIMIT +?',
          toJson(ids),
          range.after ?? '',
          range.limit,
        )
        .map(toOrg);
    },
    async count() {
      return db.get<{ n: number }>('SELECT count(*) AS n FROM organizations')!.n;
    },
  };
}

const WITH_COUNTS = `SELECT p.*, o.display_name AS organization_display_name,
  (SELECT count(*) FROM devices d WHERE d.project_id = p.id AND d.type <> 'ccon') AS sensor_count,
  (SELECT count(*) FROM devices d WHERE d.project_id = p.id AND d.type = 'ccon') AS ccon_count
  FROM projects p JOIN organizations o ON o.id = p.organization_id`;

export function createProjectRepo(db: SqliteDb): ProjectRepo {
  // The list's query is a case-insensitive substring beyond ASCII too: SQLite's lower() folds ASCII letters only
  // (a query 'öl' missed 'Ölhafen'), so the name is lower-cased as JavaScript does it, like the query.
  db.raw.function('sc_lower', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? s.toLowerCase() : s));
  // get() runs on every authorised request (requireProject): cached, cleared by every project write.
  const byId = db.caches.create<ProjectRecord | null>();
  const read = async (id: string) =>
    byId.get(id, () => {
      const r = db.get<ProjectRow>('SELECT * FROM projects WHERE id = ?', id);
      return r ? toProject(r) : null;
    });
  return {
    async create(p) {
      byId.clear();
      db.run(
        'INSERT INTO projects (id, organization_id, display_name, location, labels, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?)',
        p.id,
        p.organizationId,
        p.displayName,
        toJson(p.location),
        toJson(p.labels),
        p.createTime,
        p.updateTime,
      );
    },
    get: read,
    // One writer: a transaction's read is never overtaken, so no lock is needed; the cache holds what was written.
    getForUpdate: read,
    async getWithCounts(id) {
      const r = db.get<ProjectCountsRow>(`${WITH_COUNTS} WHERE p.id = ?`, id);
      return r ? toProjectWithCounts(r) : null;
    },
    async list(filter: ProjectListFilter, range: Range) {
      const rows = db.all<ProjectCountsRow>(
        `${WITH_COUNTS}
         WHERE (p.id IN (SELECT value FROM json_each(?)) OR p.organization_id IN (SELECT value FROM json_each(?)))
           AND (? IS NULL OR p.organization_id = ?)
           AND (? IS NULL OR instr(sc_lower(p.display_name), ?) > 0)
           AND p.id > ?
         ORDER BY p.id LIMIT +?`,
        toJson(filter.projectIds),
        toJson(filter.organizationIds),
        filter.organizationId ?? null,
        filter.organizationId ?? null,
        filter.query ?? null,
        filter.query?.toLowerCase() ?? null,
        range.after ?? '',
        range.limit,
      );
      return rows.map(toProjectWithCounts);
    },
    async update(p) {
      byId.clear();
      db.run(
        'UPDATE projects SET display_name = ?, location = ?, labels = ?, update_time = ? WHERE id = ?',
        p.displayName,
        toJson(p.location),
        toJson(p.labels),
        p.updateTime,
        p.id,
      );
    },
    async delete(id) {
      byId.clear();
      db.authWrites++; // the project's service accounts, keys and memberships go with it
      const sas = `SELECT id FROM service_accounts WHERE project_id = ?`;
      db.run(`DELETE FROM memberships WHERE member_id IN (${sas})`, id);
      db.run(`DELETE FROM service_account_keys WHERE service_account_id IN (${sas})`, id);
      db.run('DELETE FROM service_accounts WHERE project_id = ?', id);
      db.run(`DELETE FROM memberships WHERE scope_type = 'project' AND scope_id = ?`, id);
      db.run('DELETE FROM projects WHERE id = ?', id);
    },
    async countContents(id) {
      const devices = db.get<{ n: number }>('SELECT count(*) AS n FROM devices WHERE project_id = ?', id)!.n;
      const dataConnectors = db.get<{ n: number }>(
        'SELECT count(*) AS n FROM data_connectors WHERE project_id = ?',
        id,
      )!.n;
      return { devices, dataConnectors };
    },
  };
}
