// Notification rules on SQLite. The enabled rules of a project are read for every published event and written rarely:
// cached (read-cache.ts), and the cache cleared by every write to the table.
import type { RuleRecord, RuleRepo } from '../../contract/alerting.ts';
import type { SqliteDb } from '../db.ts';
import { toRule, type RuleRow } from '../../sql/alerting-rows.ts';

export function createRuleRepo(db: SqliteDb): RuleRepo {
  const enabledByProject = db.caches.create<RuleRecord[]>();
  return {
    async create(r) {
      enabledByProject.clear();
      db.run(
        'INSERT INTO rules (id, project_id, display_name, enabled, spec, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?)',
        r.id,
        r.projectId,
        r.displayName,
        r.enabled ? 1 : 0,
        r.spec,
        r.createTime,
        r.updateTime,
      );
    },
    async get(id) {
      const r = db.get<RuleRow>('SELECT * FROM rules WHERE id = ?', id);
      return r ? toRule(r) : null;
    },
    async listByProject(projectId, range) {
      return db
        .all<RuleRow>(
          'SELECT * FROM rules WHERE project_id = ? AND id > ? ORDER BY id LIMIT +?',
          projectId,
          range.after ?? '',
          range.limit,
        )
        .map(toRule);
    },
    async countByProject(projectId) {
      return db.get<{ n: number }>('SELECT count(*) AS n FROM rules WHERE project_id = ?', projectId)!.n;
    },
    async listEnabledByProject(projectId) {
      return enabledByProject.get(projectId, () =>
        db.all<RuleRow>('SELECT * FROM rules WHERE project_id = ? AND enabled = 1 ORDER BY id', projectId).map(toRule),
      );
    },
    async listEnabled(range) {
      return db
        .all<RuleRow>(
          'SELECT * FROM rules WHERE enabled = 1 AND id > ? ORDER BY id LIMIT +?',
          range.after ?? '',
          range.limit,
        )
        .map(toRule);
    },
    async update(r) {
      enabledByProject.clear();
      db.run(
        'UPDATE rules SET display_name = ?, enabled = ?, spec = ?, update_time = ? WHERE id = ?',
        r.displayName,
        r.enabled ? 1 : 0,
        r.spec,
        r.updateTime,
        r.id,
      );
    },
    async delete(id) {
      enabledByProject.clear();
      // Its alerts, their outbox rows and its conditions go by the foreign keys' cascades (migration 170).
      db.run('DELETE FROM rules WHERE id = ?', id);
    },
  };
}
