// The delivery queue on PostgreSQL, shared by every process. As on SQLite, a claim sets lease_until and pushes
// due_time to the lease end, so a row whose process died mid-attempt becomes due again by itself and "due" stays
// a plain range on (connector_id, due_time). Claims of several processes run at once: FOR UPDATE SKIP LOCKED
// gives each the rows no other claim holds, without waiting.
import type { DeliveryRepo, NewDelivery } from '../connector-repos.ts';
import type { Sql } from './db.ts';
import type { QueueVacuum } from './queue-vacuum.ts';
import { toDelivery, type DeliveryRow } from '../rows.ts';

/**
 * The CTEs that queue rows (ending in `dl`, which returns each new row's id and whether it is leased), their
 * parameters from $p on (queueColumns). ORDER BY ord makes the ids follow the input order (the sequence is drawn row
 * by row as the rows arrive), so the ids sorted ascending are the rows' ids in order. With `capped`, rows queued
 * leased under NewDelivery.leaseIf first take their connectors' claim locks and count what is in flight
 * (migration 003); a row whose lease does not fit, or whose connector has a row due, is queued due at its enqueue
 * time instead. The rank counts the rows of a connector in this statement that ask for a lease under a cap.
 */
export function queueRowsSql(p: number, capped: boolean): string {
  const u = `unnest($${p}::text[], $${p + 1}::text[], $${p + 2}::bytea[], $${p + 3}::bigint[], $${p + 4}::bigint[], $${p + 5}::bigint[], $${p + 6}::int[], $${p + 7}::int[])
      WITH ORDINALITY AS u(connector_id, event_id, body, enqueue_time, due_time, lease_until, cap_max, cap_hanging, ord)`;
  if (!capped) {
    return `dl AS (
    INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, lease_until)
    SELECT connector_id, event_id, body, enqueue_time, due_time, lease_until FROM ${u}
    ORDER BY ord
    RETURNING id, lease_until IS NOT NULL AS leased)`;
  }
  return `flight AS (
    SELECT * FROM sensorcloud_lock_in_flight($${p + 8}::text[], $${p + 9}::bigint[], $${p + 10}::bigint[], $${p + 11}::bigint[])
  ), ranked AS (
    SELECT u.*, count(*) FILTER (WHERE u.cap_max IS NOT NULL AND u.lease_until IS NOT NULL) OVER (PARTITION BY u.connector_id ORDER BY u.ord) AS rank
    FROM ${u}
  ), decided AS (
    SELECT r.*, r.lease_until IS NOT NULL AND (r.cap_max IS NULL
      OR (NOT f.due AND f.n + r.rank <= CASE WHEN f.hanging > 0 THEN r.cap_hanging ELSE r.cap_max END)) AS leased
    FROM ranked r LEFT JOIN flight f ON f.connector_id = r.connector_id
  ), dl AS (
    INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, lease_until)
    SELECT connector_id, event_id, body, enqueue_time, CASE WHEN leased THEN due_time ELSE enqueue_time END, CASE WHEN leased THEN lease_until END
    FROM decided ORDER BY ord
    RETURNING id, lease_until IS NOT NULL AS leased)`;
}

/** Whether queueRowsSql must take locks for these rows: some ask for a lease under a cap. */
export const capped = (rows: readonly NewDelivery[]): boolean => rows.some((r) => r.leaseUntil != null && r.leaseIf !== undefined);

/** The parameters of queueRowsSql: the rows' columns, then (capped) one entry per connector, in id order. */
export function queueColumns(rows: readonly NewDelivery[], withLocks: boolean): unknown[] {
  const leased = (r: NewDelivery) => (r.leaseUntil != null ? r.leaseIf?.cap : undefined);
  const columns: unknown[] = [
    rows.map((r) => r.connectorId), rows.map((r) => r.eventId), rows.map((r) => r.body),
    rows.map((r) => r.enqueueTime), rows.map((r) => r.dueTime), rows.map((r) => r.leaseUntil ?? null),
    rows.map((r) => leased(r)?.max ?? null), rows.map((r) => leased(r)?.whileHanging ?? null),
  ];
  if (!withLocks) return columns;
  const first = new Map<string, NewDelivery>();
  for (const r of rows) if (leased(r) && !first.has(r.connectorId)) first.set(r.connectorId, r);
  // Sorted byte-wise, as every process sorts them: locks taken in one order never deadlock.
  const ids = [...first.keys()].sort();
  const of = ids.map((id) => first.get(id)!);
  return [...columns, ids, of.map((r) => r.enqueueTime), of.map((r) => r.leaseIf!.cap.hangingIfLeasedBefore), of.map((r) => r.leaseIf!.enqueuedAfter)];
}

/** Sets each row's `queued` from what queueRowsSql's `dl` returned (rows follow their ids' order). */
export function markQueued(rows: readonly NewDelivery[], written: Array<{ id: number; leased: boolean }>): number[] {
  written.sort((a, b) => a.id - b.id);
  rows.forEach((r, i) => {
    r.queued = written[i]!;
  });
  return written.map((w) => w.id);
}

// Loose index scan: one seek per connector that has queued rows, however long its backlog is.
const CONNECTORS_WITH_DUE = `
  WITH RECURSIVE c(id) AS (
    (SELECT connector_id FROM deliveries ORDER BY connector_id LIMIT 1)
    UNION ALL
    SELECT (SELECT connector_id FROM deliveries WHERE connector_id > c.id ORDER BY connector_id LIMIT 1) FROM c WHERE c.id IS NOT NULL
  )
  SELECT id FROM c WHERE id IS NOT NULL
    AND EXISTS (SELECT 1 FROM deliveries d WHERE d.connector_id = c.id AND d.due_time <= $1 AND d.enqueue_time > $2)`;

// SKIP LOCKED passes over rows another claim is leasing right now; a row it leased and committed meanwhile is
// re-checked against due_time <= now once locked, and fails it (its due_time is now the lease end).
const CLAIM = `
  UPDATE deliveries SET lease_until = $1, due_time = $1
  WHERE id IN (
    SELECT id FROM deliveries WHERE connector_id = $2 AND due_time <= $3 AND enqueue_time > $4
    ORDER BY due_time, id LIMIT $5 FOR UPDATE SKIP LOCKED)
  RETURNING *`;

// The cluster-wide per-connector limit (DeliveryRepo.claim's cap): lock, count and claim in one statement
// (migration 003), waiting for the connector's lock, which inserts of leased rows take too.
const CLAIM_CAPPED = 'SELECT * FROM sensorcloud_claim($1, $2, $3, $4, $5, $6, $7, $8)';

// Ids follow enqueue order (the interface's promise), so the oldest rows are the lowest ids. Rows another process
// holds locked (being claimed or settled) are skipped: the next pass takes them.
const DELETE_EXPIRED = `
  DELETE FROM deliveries WHERE id IN (
    SELECT id FROM deliveries WHERE enqueue_time <= $1 AND (lease_until IS NULL OR lease_until <= $2)
    ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)`;

const INSERT = `WITH ${queueRowsSql(1, false)} SELECT id, leased FROM dl`;
const INSERT_CAPPED = `WITH ${queueRowsSql(1, true)} SELECT id, leased FROM dl`;

export function createDeliveryRepo(sql: Sql, vacuum?: Pick<QueueVacuum, 'queued'>): DeliveryRepo {
  const insert = async (rows: NewDelivery[]) => {
    if (rows.length === 0) return [];
    const locks = capped(rows);
    vacuum?.queued(rows.length);
    return markQueued(rows, await sql.query<{ id: number; leased: boolean }>(locks ? INSERT_CAPPED : INSERT, queueColumns(rows, locks)));
  };
  return {
    insert,
    async add(rows) {
      await insert(rows);
    },
    async connectorsWithDue(now, enqueuedAfter) {
      return (await sql.query<{ id: string }>(CONNECTORS_WITH_DUE, [now, enqueuedAfter])).map((r) => r.id);
    },
    async claim(connectorId, now, enqueuedAfter, leaseUntil, limit, cap) {
      const rows = cap === undefined
        ? await sql.query<DeliveryRow>(CLAIM, [leaseUntil, connectorId, now, enqueuedAfter, limit])
        : await sql.query<DeliveryRow>(CLAIM_CAPPED, [connectorId, now, enqueuedAfter, leaseUntil, limit, cap.max, cap.whileHanging, cap.hangingIfLeasedBefore]);
      return rows.map(toDelivery).sort((a, b) => a.id - b.id);
    },
    async get(id) {
      const [r] = await sql.query<DeliveryRow>('SELECT * FROM deliveries WHERE id = $1', [id]);
      return r ? toDelivery(r) : null;
    },
    async delete(id) {
      return (await sql.run('DELETE FROM deliveries WHERE id = $1', [id])) > 0;
    },
    async deleteMany(ids) {
      if (ids.length === 0) return 0;
      return sql.run('DELETE FROM deliveries WHERE id = ANY($1::bigint[])', [ids]);
    },
    async reschedule(id, attempts, dueTime) {
      return (await sql.run('UPDATE deliveries SET attempts = $1, due_time = $2, lease_until = NULL WHERE id = $3', [attempts, dueTime, id])) > 0;
    },
    async deleteByConnector(connectorId) {
      return sql.run('DELETE FROM deliveries WHERE connector_id = $1', [connectorId]);
    },
    async deleteExpired(enqueuedAtOrBefore, now, limit) {
      return sql.run(DELETE_EXPIRED, [enqueuedAtOrBefore, now, limit]);
    },
    async releaseLeases(now, ids) {
      if (ids === undefined) return sql.run('UPDATE deliveries SET lease_until = NULL, due_time = $1 WHERE lease_until IS NOT NULL', [now]);
      if (ids.length === 0) return 0;
      return sql.run(
        'UPDATE deliveries SET lease_until = NULL, due_time = $1 WHERE id = ANY($2::bigint[]) AND lease_until IS NOT NULL', [now, ids],
      );
    },
    async count() {
      const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM deliveries');
      return r!.n;
    },
  };
}
