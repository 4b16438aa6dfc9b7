// Alerts, the pending conditions of rules and the outbox of notifications on SQLite. One writer: a read is as good as a
// lock (getForUpdate, openFor), and a claim's select and update are never overtaken. An alert, a condition and an
// outbox row go with their rule (the foreign keys' cascades, migration 170); createIfNone and put write nothing for a
// rule that is gone.
import type { AlertRepo, AlertState, ConditionRepo, OutboxRepo } from '../../contract/alerting.ts';
import { toJson, type SqliteDb } from '../db.ts';
import {
  ALERT_COLUMNS,
  ALERT_UPDATE_COLUMNS,
  alertUpdateValues,
  alertValues,
  toAlert,
  toCondition,
  toOutbox,
  type AlertRow,
  type ConditionRow,
  type OutboxRow,
} from '../../sql/alerting-rows.ts';

const OPEN: readonly AlertState[] = ['TRIGGERED', 'ACKNOWLEDGED'];

// The conflict target names the partial unique index (one open alert per rule and target): a clash of ids still fails.
const CREATE_IF_NONE = `INSERT INTO alerts (${ALERT_COLUMNS})
  SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM rules WHERE id = ?)
  ON CONFLICT (rule_id, target_id) WHERE state <> 'RESOLVED' DO NOTHING`;

const UPDATE = `UPDATE alerts SET ${ALERT_UPDATE_COLUMNS.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`;

export function createAlertRepo(db: SqliteDb): AlertRepo {
  const get = async (id: string) => {
    const r = db.get<AlertRow>('SELECT * FROM alerts WHERE id = ?', id);
    return r ? toAlert(r) : null;
  };
  return {
    async createIfNone(a) {
      return db.run(CREATE_IF_NONE, ...alertValues(a), a.ruleId).changes > 0;
    },
    get,
    getForUpdate: get,
    async openFor(ruleId, targetId) {
      const r = db.get<AlertRow>(
        "SELECT * FROM alerts WHERE rule_id = ? AND target_id = ? AND state <> 'RESOLVED'",
        ruleId,
        targetId,
      );
      return r ? toAlert(r) : null;
    },
    async openForTarget(targetId) {
      return db
        .all<AlertRow>("SELECT * FROM alerts WHERE target_id = ? AND state <> 'RESOLVED'", targetId)
        .map(toAlert);
    },
    async update(a) {
      db.run(UPDATE, ...alertUpdateValues(a));
    },
    async list(filter, range) {
      let sql = 'SELECT * FROM alerts WHERE project_id = ?';
      const params: unknown[] = [filter.projectId];
      if (filter.states !== undefined && filter.states.length > 0) {
        sql += ` AND state IN (${filter.states.map(() => '?').join(', ')})`;
        params.push(...filter.states);
      }
      if (filter.ruleId !== undefined) {
        sql += ' AND rule_id = ?';
        params.push(filter.ruleId);
      }
      if (filter.targetId !== undefined) {
        sql += ' AND target_id = ?';
        params.push(filter.targetId);
      }
      if (range.after != null) {
        sql += ' AND id < ?';
        params.push(range.after);
      }
      return db.all<AlertRow>(`${sql} ORDER BY id DESC LIMIT +?`, ...params, range.limit).map(toAlert);
    },
    async due(now, limit) {
      return db
        .all<{ id: string }>(
          "SELECT id FROM alerts WHERE timer_due <= ? AND timer_due IS NOT NULL AND state <> 'RESOLVED' ORDER BY timer_due, id LIMIT +?",
          now,
          limit,
        )
        .map((r) => r.id);
    },
    async countOpen(projectId) {
      return db.get<{ n: number }>(
        'SELECT count(*) AS n FROM alerts WHERE project_id = ? AND state IN (?, ?)',
        projectId,
        ...OPEN,
      )!.n;
    },
  };
}

export function createConditionRepo(db: SqliteDb): ConditionRepo {
  return {
    async get(ruleId, targetId) {
      const r = db.get<ConditionRow>(
        'SELECT * FROM rule_conditions WHERE rule_id = ? AND target_id = ?',
        ruleId,
        targetId,
      );
      return r ? toCondition(r) : null;
    },
    async listForTarget(targetId) {
      return db.all<ConditionRow>('SELECT * FROM rule_conditions WHERE target_id = ?', targetId).map(toCondition);
    },
    async put(c) {
      db.run(
        `INSERT INTO rule_conditions (rule_id, target_id, project_id, since, count, due, last_value)
         SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM rules WHERE id = ?)
         ON CONFLICT (rule_id, target_id) DO UPDATE SET project_id = excluded.project_id, since = excluded.since,
           count = excluded.count, due = excluded.due, last_value = excluded.last_value`,
        c.ruleId,
        c.targetId,
        c.projectId,
        c.since,
        c.count,
        c.due,
        c.lastValue,
        c.ruleId,
      );
    },
    async delete(ruleId, targetId) {
      return db.run('DELETE FROM rule_conditions WHERE rule_id = ? AND target_id = ?', ruleId, targetId).changes > 0;
    },
    async due(now, limit) {
      return db
        .all<ConditionRow>(
          'SELECT * FROM rule_conditions WHERE due <= ? AND due IS NOT NULL ORDER BY due, rule_id, target_id LIMIT +?',
          now,
          limit,
        )
        .map(toCondition);
    },
  };
}

export function createOutboxRepo(db: SqliteDb): OutboxRepo {
  return {
    async add(rows) {
      return rows.map((r) =>
        Number(
          db.run(
            'INSERT INTO alert_outbox (alert_id, entry, type, payload, enqueue_time, due_time) VALUES (?, ?, ?, ?, ?, ?)',
            r.alertId,
            r.entry,
            r.type,
            r.payload,
            r.enqueueTime,
            r.dueTime,
          ).lastInsertRowid,
        ),
      );
    },
    async claim(now, leaseUntil, limit) {
      // The due rows' ids first, in their order (one writer: nothing changes the table between the two statements).
      const ids = db
        .all<{ id: number }>(
          'SELECT id FROM alert_outbox WHERE due_time <= ? ORDER BY due_time, id LIMIT +?',
          now,
          limit,
        )
        .map((r) => r.id);
      if (ids.length === 0) return [];
      const order = new Map(ids.map((id, i) => [id, i]));
      return db
        .all<OutboxRow>(
          'UPDATE alert_outbox SET lease_until = ?, due_time = ? WHERE id IN (SELECT value FROM json_each(?)) RETURNING *',
          leaseUntil,
          leaseUntil,
          toJson(ids),
        )
        .map(toOutbox)
        .sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    },
    async delete(id, leaseUntil) {
      return db.run('DELETE FROM alert_outbox WHERE id = ? AND lease_until IS ?', id, leaseUntil).changes > 0;
    },
    async reschedule(id, attempts, dueTime, leaseUntil) {
      return (
        db.run(
          'UPDATE alert_outbox SET attempts = ?, due_time = ?, lease_until = NULL WHERE id = ? AND lease_until IS ?',
          attempts,
          dueTime,
          id,
          leaseUntil,
        ).changes > 0
      );
    },
    async count() {
      return db.get<{ n: number }>('SELECT count(*) AS n FROM alert_outbox')!.n;
    },
  };
}
