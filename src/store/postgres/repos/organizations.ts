// Organizations and projects on PostgreSQL. Projects read by id are cached, checked against the config version
// (config-cache.ts).
import type { OrganizationRepo, ProjectListFilter, ProjectRepo, Range } from '../../contract/store.ts';
import type { Sql } from '../db.ts';
import { cachedRead, cachedWrite, type ConfigView } from './config-cache.ts';
import {
  toOrg,
  toProject,
  toProjectWithCounts,
  type OrgRow,
  type ProjectCountsRow,
  type ProjectRow,
} from '../../sql/rows.ts';

// Keyset paging compares and orders ids byte-wise, as SQLite does, whatever the database's default collation.

export function createOrganizationRepo(sql: Sql): OrganizationRepo {
  return {
    async create(o) {
      await sql.run('INSERT INTO organizations (id, display_name, create_time) VALUES ($1, $2, $3)', [
        o.id,
        o.displayName,
        o.createTime,
      ]);
    },
    async get(id) {
      const [r] = await sql.query<OrgRow>('SELECT * FROM organizations WHERE id = $1', [id]);
      return r ? toOrg(r) : null;
    },
    async list(ids, range) {
      const rows = await sql.query<OrgRow>(
        'SELECT * FROM organizations WHERE id = ANY($1::text[]) AND id COLLATE "C" > $2 ORDER BY id COLLATE "C" LIMIT $3',
        [ids, range.after ?? '', range.limit],
      );
      return rows.map(toOrg);
    },
    async count() {
      const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM organizations');
      return r!.n;
    },
  };
}

const WITH_COUNTS = `SELECT p.*, o.display_name AS organization_display_name,
  (SELECT count(*) FROM devices d WHERE d.project_id = p.id AND d.type <> 'ccon') AS sensor_count,
  (SELECT count(*) FROM devices d WHERE d.project_id = p.id AND d.type = 'ccon') AS ccon_count
  FROM projects p JOIN organizations o ON o.id = p.organization_id`;

export function createProjectRepo(sql: Sql, view?: ConfigView): ProjectRepo {
  return {
    async create(p) {
      await cachedWrite(view, () =>
        sql.run(
          'INSERT INTO projects (id, organization_id, display_name, location, labels, create_time, update_time) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [
            p.id,
            p.organizationId,
            p.displayName,
            JSON.stringify(p.location),
            JSON.stringify(p.labels),
            p.createTime,
            p.updateTime,
          ],
        ),
      );
    },
    async get(id) {
      return cachedRead(
        view,
        (c) => c.projects,
        id,
        async () => {
          const [r] = await sql.query<ProjectRow>('SELECT * FROM projects WHERE id = $1', [id]);
          return r ? toProject(r) : null;
        },
      );
    },
    async getForUpdate(id) {
      // Past the cache: the row as committed, locked until the commit (NO KEY UPDATE, the lock the UPDATE takes).
      const [r] = await sql.query<ProjectRow>('SELECT * FROM projects WHERE id = $1 FOR NO KEY UPDATE', [id]);
      return r ? toProject(r) : null;
    },
    async getWithCounts(id) {
      const [r] = await sql.query<ProjectCountsRow>(`${WITH_COUNTS} WHERE p.id = $1`, [id]);
      return r ? toProjectWithCounts(r) : null;
    },
    async list(filter: ProjectListFilter, range: Range) {
      // The query is a case-insensitive substring beyond ASCII too, lower-cased as JavaScript does it: the ICU
      // root collation's lower() folds every script, where a C-locale database's folds ASCII letters only. strpos
      // takes it literally (% and _ are characters).
      const rows = await sql.query<ProjectCountsRow>(
        `${WITH_COUNTS}
         WHERE (p.id = ANY($1::text[]) OR p.organization_id = ANY($2::text[]))
           AND ($3::text IS NULL OR p.organization_id = $3)
           AND ($4::text IS NULL OR strpos(lower(p.display_name COLLATE "und-x-icu"), $4) > 0)
           AND p.id COLLATE "C" > $5
         ORDER BY p.id COLLATE "C" LIMIT $6`,
        [
          filter.projectIds,
          filter.organizationIds,
          filter.organizationId ?? null,
          filter.query?.toLowerCase() ?? null,
          range.after ?? '',
          range.limit,
        ],
      );
      return rows.map(toProjectWithCounts);
    },
    async update(p) {
      await cachedWrite(view, () =>
        sql.run('UPDATE projects SET display_name = $1, location = $2, labels = $3, update_time = $4 WHERE id = $5', [
          p.displayName,
          JSON.stringify(p.location),
          JSON.stringify(p.labels),
          p.updateTime,
          p.id,
        ]),
      );
    },
    async delete(id) {
      // One statement, so the cascade is all or nothing outside a transaction too. The foreign keys are checked
      // at its end, once the keys and accounts are gone.
      await cachedWrite(view, () =>
        sql.run(
          `WITH sas AS (SELECT id FROM service_accounts WHERE project_id = $1),
           m AS (DELETE FROM memberships WHERE member_id IN (SELECT id FROM sas) OR (scope_type = 'project' AND scope_id = $1)),
           k AS (DELETE FROM service_account_keys WHERE service_account_id IN (SELECT id FROM sas)),
           s AS (DELETE FROM service_accounts WHERE project_id = $1)
         DELETE FROM projects WHERE id = $1`,
          [id],
        ),
      );
    },
    async countContents(id) {
      const [r] = await sql.query<{ devices: number; data_connectors: number }>(
        `SELECT (SELECT count(*) FROM devices WHERE project_id = $1) AS devices,
                (SELECT count(*) FROM data_connectors WHERE project_id = $1) AS data_connectors`,
        [id],
      );
      return { devices: r!.devices, dataConnectors: r!.data_connectors };
    },
  };
}
