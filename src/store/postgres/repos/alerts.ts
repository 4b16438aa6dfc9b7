// Alerts, the pending conditions of rules and the outbox of notifications on PostgreSQL, shared by every process.
// - One open alert per rule and target: createIfNone inserts with ON CONFLICT DO NOTHING on the partial unique index
//   of open alerts (migration 019), so of two processes racing, the second waits for the first's commit and writes
//   nothing (or writes, if the first rolled back).
// - A transition reads its alert with a row lock (getForUpdate, openFor: FOR NO KEY UPDATE, the lock its UPDATE takes
//   itself), so a timer firing in one process and an acknowledgement in another take turns.
// - createIfNone and conditions.put write only while the rule is there, and hold it (FOR KEY SHARE, the lock the
//   foreign key's check takes anyway) until the commit: a rule's delete waits for them, and its cascades then find what
//   they wrote (rules.ts).
// - The outbox is claimed like the delivery queue: FOR UPDATE SKIP LOCKED over the due rows, the lease end written as
//   lease_until and due_time; a sent or failed row's outcome is written only under the lease it was claimed with.
import type { AlertRepo, AlertState, ConditionRepo, OutboxRepo } from '../../contract/alerting.ts';
import type { Sql } from '../db.ts';
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

// INSERT … SELECT: the parameters are typed, since a SELECT's are resolved before the insert's columns are seen. The
// conflict target names the partial unique index: a clash of ids still fails.
const CREATE_IF_NONE = `INSERT INTO alerts (${ALERT_COLUMNS})
  SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::int, $8::bigint, $9::bigint, $10::text,
    $11::bigint, $12::text, $13::text, $14::bigint, $15::bigint, $16::bigint
  WHERE EXISTS (SELECT 1 FROM rules WHERE id = $3 FOR KEY SHARE)
  ON CONFLICT (rule_id, target_id) WHERE state <> 'RESOLVED' DO NOTHING`;

const UPDATE = `UPDATE alerts SET ${ALERT_UPDATE_COLUMNS.map((c, i) => `${c} = $${i + 1}`).join(', ')}
  WHERE id = $${ALERT_UPDATE_COLUMNS.length + 1}`;

export function createAlertRepo(sql: Sql): AlertRepo {
  const one = async (text: string, params: unknown[]) => {
    const [r] = await sql.query<AlertRow>(text, params);
    return r ? toAlert(r) : null;
  };
  return {
    async createIfNone(a) {
      return (await sql.run(CREATE_IF_NONE, alertValues(a))) > 0;
    },
    get: (id) => one('SELECT * FROM alerts WHERE id = $1', [id]),
    getForUpdate: (id) => one('SELECT * FROM alerts WHERE id = $1 FOR NO KEY UPDATE', [id]),
    // A row another transaction resolves while this one waits for its lock is read again after, and passed over.
    openFor: (ruleId, targetId) =>
      one("SELECT * FROM alerts WHERE rule_id = $1 AND target_id = $2 AND state <> 'RESOLVED' FOR NO KEY UPDATE", [
        ruleId,
        targetId,
      ]),
    async openForTarget(targetId) {
      const rows = await sql.query<AlertRow>(
        "SELECT * FROM alerts WHERE target_id = $1 AND state <> 'RESOLVED' FOR NO KEY UPDATE",
        [targetId],
      );
      // A row another transaction resolved while this one waited for its lock is passed over: at READ COMMITTED the
      // locked row's new version is checked against the WHERE clause again (as openFor relies on).
      return rows.map(toAlert);
    },
    async update(a) {
      await sql.run(UPDATE, alertUpdateValues(a));
    },
    async list(filter, range) {
      const params: unknown[] = [filter.projectId];
      let text = 'SELECT * FROM alerts WHERE project_id = $1';
      if (filter.states !== undefined && filter.states.length > 0) {
        params.push(filter.states);
        text += ` AND state = ANY($${params.length}::text[])`;
      }
      if (filter.ruleId !== undefined) {
        params.push(filter.ruleId);
        text += ` AND rule_id = $${params.length}`;
      }
      if (filter.targetId !== undefined) {
        params.push(filter.targetId);
        text += ` AND target_id = $${params.length}`;
      }
      if (range.after != null) {
        params.push(range.after);
        text += ` AND id < $${params.length}`;
      }
      params.push(range.limit);
      const rows = await sql.query<AlertRow>(`${text} ORDER BY id DESC LIMIT $${params.length}`, params);
      return rows.map(toAlert);
    },
    async due(now, limit) {
      const rows = await sql.query<{ id: string }>(
        "SELECT id FROM alerts WHERE timer_due <= $1 AND timer_due IS NOT NULL AND state <> 'RESOLVED' ORDER BY timer_due, id LIMIT $2",
        [now, limit],
      );
      return rows.map((r) => r.id);
    },
    async countOpen(projectId) {
      const [r] = await sql.query<{ n: number }>(
        'SELECT count(*) AS n FROM alerts WHERE project_id = $1 AND state IN ($2, $3)',
        [projectId, ...OPEN],
      );
      return r!.n;
    },
  };
}

export function createConditionRepo(sql: Sql): ConditionRepo {
  return {
    async get(ruleId, targetId) {
      const [r] = await sql.query<ConditionRow>('SELECT * FROM rule_conditions WHERE rule_id = $1 AND target_id = $2', [
        ruleId,
        targetId,
      ]);
      return r ? toCondition(r) : null;
    },
    async listForTarget(targetId) {
      return (await sql.query<ConditionRow>('SELECT * FROM rule_conditions WHERE target_id = $1', [targetId])).map(
        toCondition,
      );
    },
    async put(c) {
      await sql.run(
        `INSERT INTO rule_conditions (rule_id, target_id, project_id, since, count, due, last_value)
         SELECT $1::text, $2::text, $3::text, $4::bigint, $5::int, $6::bigint, $7::text
         WHERE EXISTS (SELECT 1 FROM rules WHERE id = $1 FOR KEY SHARE)
         ON CONFLICT (rule_id, target_id) DO UPDATE SET project_id = excluded.project_id, since = excluded.since,
           count = excluded.count, due = excluded.due, last_value = excluded.last_value`,
        [c.ruleId, c.targetId, c.projectId, c.since, c.count, c.due, c.lastValue],
      );
    },
    async delete(ruleId, targetId) {
      // Of two processes deleting it at once, the second waits for the first's commit and finds it gone.
      return (
        (await sql.run('DELETE FROM rule_conditions WHERE rule_id = $1 AND target_id = $2', [ruleId, targetId])) > 0
      );
    },
    async due(now, limit) {
      const rows = await sql.query<ConditionRow>(
        'SELECT * FROM rule_conditions WHERE due <= $1 AND due IS NOT NULL ORDER BY due, rule_id, target_id LIMIT $2',
        [now, limit],
      );
      return rows.map(toCondition);
    },
  };
}

// The rows in input order (ORDER BY ord draws the ids in that order, so the ids ascending are the rows' in order).
const ADD = `INSERT INTO alert_outbox (alert_id, entry, type, payload, enqueue_time, due_time)
  SELECT alert_id, entry, type, payload, enqueue_time, due_time
  FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])
    WITH ORDINALITY AS u(alert_id, entry, type, payload, enqueue_time, due_time, ord)
  ORDER BY ord
  RETURNING id`;

// Rows another claim has locked are passed over; one another claim leased and committed meanwhile is read again after
// its lock and, its due time now the lease end, passed over too. Answered earliest due first.
const CLAIM = `WITH c AS (
    SELECT id, due_time FROM alert_outbox WHERE due_time <= $1 ORDER BY due_time, id LIMIT $3 FOR UPDATE SKIP LOCKED
  ), u AS (
    UPDATE alert_outbox o SET lease_until = $2, due_time = $2 FROM c WHERE o.id = c.id RETURNING o.*, c.due_time AS was_due
  )
  SELECT * FROM u ORDER BY was_due, id`;

export function createOutboxRepo(sql: Sql): OutboxRepo {
  return {
    async add(rows) {
      if (rows.length === 0) return [];
      const ids = await sql.query<{ id: number }>(ADD, [
        rows.map((r) => r.alertId),
        rows.map((r) => r.entry),
        rows.map((r) => r.type),
        rows.map((r) => r.payload),
        rows.map((r) => r.enqueueTime),
        rows.map((r) => r.dueTime),
      ]);
      return ids.map((r) => r.id).sort((a, b) => a - b);
    },
    async claim(now, leaseUntil, limit) {
      if (limit <= 0) return [];
      return (await sql.query<OutboxRow>(CLAIM, [now, leaseUntil, limit])).map(toOutbox);
    },
    async delete(id, leaseUntil) {
      return (
        (await sql.run('DELETE FROM alert_outbox WHERE id = $1 AND lease_until IS NOT DISTINCT FROM $2', [
          id,
          leaseUntil,
        ])) > 0
      );
    },
    async reschedule(id, attempts, dueTime, leaseUntil) {
      return (
        (await sql.run(
          'UPDATE alert_outbox SET attempts = $1, due_time = $2, lease_until = NULL WHERE id = $3 AND lease_until IS NOT DISTINCT FROM $4',
          [attempts, dueTime, id, leaseUntil],
        )) > 0
      );
    },
    async count() {
      const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM alert_outbox');
      return r!.n;
    },
  };
}
