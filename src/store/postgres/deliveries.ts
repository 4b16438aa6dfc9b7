// The delivery queue on PostgreSQL, shared by every process. As on SQLite, a claim sets lease_until and pushes
// due_time to the lease end, so a row whose process died mid-attempt becomes due again by itself and "due" stays
// a plain range on (connector_id, due_time). Claims of several processes run at once: FOR UPDATE SKIP LOCKED
// gives each the rows no other claim holds, without waiting.
import type { DeliveryRepo, NewDelivery } from '../connector-repos.ts';
import type { Sql } from './db.ts';
import { toDelivery, type DeliveryRow } from '../rows.ts';

// One statement for the whole batch. ORDER BY ord makes the ids follow the input order (the sequence is drawn
// row by row as the rows arrive), so the ids sorted ascending are the rows' ids in order.
const INSERT = `
  INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, lease_until)
  SELECT connector_id, event_id, body, enqueue_time, due_time, lease_until
  FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[], $5::bigint[], $6::bigint[])
    WITH ORDINALITY AS u(connector_id, event_id, body, enqueue_time, due_time, lease_until, ord)
  ORDER BY ord
  RETURNING id`;

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

// The cluster-wide per-connector limit (DeliveryRepo.claim's cap): a transaction-scoped advisory lock per connector,
// and the connector's rows in flight (leased, lease not over; the partial index deliveries_leased holds just them).
const CLAIM_LOCK = `SELECT pg_try_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || $1, 0)) AS ok`;
const IN_FLIGHT = `
  SELECT count(*)::int AS n, count(*) FILTER (WHERE lease_until <= $3)::int AS hanging
  FROM deliveries WHERE connector_id = $1 AND lease_until > $2`;

// Ids follow enqueue order (the interface's promise), so the oldest rows are the lowest ids. Rows another process
// holds locked (being claimed or settled) are skipped: the next pass takes them.
const DELETE_EXPIRED = `
  DELETE FROM deliveries WHERE id IN (
    SELECT id FROM deliveries WHERE enqueue_time <= $1 AND (lease_until IS NULL OR lease_until <= $2)
    ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)`;

/** The columns of rows to insert, as the arrays INSERT (and write-behind.ts) unnest. */
export const deliveryColumns = (rows: readonly NewDelivery[]): unknown[] => [
  rows.map((r) => r.connectorId), rows.map((r) => r.eventId), rows.map((r) => r.body),
  rows.map((r) => r.enqueueTime), rows.map((r) => r.dueTime), rows.map((r) => r.leaseUntil ?? null),
];

export function createDeliveryRepo(sql: Sql): DeliveryRepo {
  const insert = async (rows: NewDelivery[]) => {
    if (rows.length === 0) return [];
    const inserted = await sql.query<{ id: number }>(INSERT, deliveryColumns(rows));
    return inserted.map((r) => r.id).sort((a, b) => a - b);
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
      if (cap !== undefined) {
        // One claimer per connector at a time in the whole cluster, so what it counts stays true until it commits;
        // a claimer that finds the connector taken passes over it (no waiting, no lock-order deadlock between
        // claims of several connectors): the other process is leasing its rows right now.
        const [lock] = await sql.query<{ ok: boolean }>(CLAIM_LOCK, [connectorId]);
        if (!lock?.ok) return [];
        // Counted after the lock, in a statement of its own: its snapshot sees every claim committed before.
        const [flight] = await sql.query<{ n: number; hanging: number }>(IN_FLIGHT, [connectorId, now, cap.hangingIfLeasedBefore]);
        const room = (flight!.hanging > 0 ? cap.whileHanging : cap.max) - flight!.n;
        limit = Math.min(limit, room);
        if (limit <= 0) return [];
      }
      const rows = await sql.query<DeliveryRow>(CLAIM, [leaseUntil, connectorId, now, enqueuedAfter, limit]);
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
