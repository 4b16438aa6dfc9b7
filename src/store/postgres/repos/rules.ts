// Notification rules on PostgreSQL. The enabled rules of a project, read for every published event, are cached with the
// projects and active connectors (config-cache.ts), checked against the config version that a statement trigger on
// rules moves too (migration 019); a single rule and the lists are always read from the database.
import type { RuleRepo } from '../../contract/alerting.ts';
import type { Sql } from '../db.ts';
import { cachedRead, cachedWrite, type ConfigView } from './config-cache.ts';
import { toRule, type RuleRow } from '../../sql/alerting-rows.ts';

export function createRuleRepo(sql: Sql, view?: ConfigView): RuleRepo {
  return {
    async create(r) {
      await cachedWrite(view, () =>
        sql.run(
          'INSERT INTO rules (id, project_id, display_name, enabled, spec, create_time, update_time) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [r.id, r.projectId, r.displayName, r.enabled, r.spec, r.createTime, r.updateTime],
        ),
      );
    },
    async get(id) {
      const [r] = await sql.query<RuleRow>('SELECT * FROM rules WHERE id = $1', [id]);
      return r ? toRule(r) : null;
    },
    async listByProject(projectId, range) {
      const rows = await sql.query<RuleRow>(
        'SELECT * FROM rules WHERE project_id = $1 AND id > $2 ORDER BY id LIMIT $3',
        [projectId, range.after ?? '', range.limit],
      );
      return rows.map(toRule);
    },
    async countByProject(projectId) {
      const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM rules WHERE project_id = $1', [projectId]);
      return r!.n;
    },
    async listEnabledByProject(projectId) {
      return cachedRead(
        view,
        (c) => c.enabledRules,
        projectId,
        async () =>
          (
            await sql.query<RuleRow>('SELECT * FROM rules WHERE project_id = $1 AND enabled ORDER BY id', [projectId])
          ).map(toRule),
      );
    },
    async listEnabled(range) {
      return (
        await sql.query<RuleRow>('SELECT * FROM rules WHERE enabled AND id > $1 ORDER BY id LIMIT $2', [
          range.after ?? '',
          range.limit,
        ])
      ).map(toRule);
    },
    async update(r) {
      await cachedWrite(view, () =>
        sql.run('UPDATE rules SET display_name = $1, enabled = $2, spec = $3, update_time = $4 WHERE id = $5', [
          r.displayName,
          r.enabled,
          r.spec,
          r.updateTime,
          r.id,
        ]),
      );
    },
    async delete(id) {
      // One statement: its alerts, their outbox rows and its conditions go by the foreign keys' cascades (migration
      // 019), which run once the rule's row is had, on a snapshot of their own: an alert or condition written by a
      // transaction that held the rule (createIfNone, conditions.put) meanwhile goes too.
      await cachedWrite(view, () => sql.run('DELETE FROM rules WHERE id = $1', [id]));
    },
  };
}
