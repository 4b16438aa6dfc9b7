// The delivery queue on SQLite. One writer claims in batches: a claim sets lease_until and pushes due_time to
// the lease end, so a row whose process died mid-attempt becomes due again by itself, and "due" stays a plain
// range on (connector_id, due_time).
import { DEFERRED_DUE, type ConnectorMetricRepo, type DeliveryRepo } from '../../contract/connector-repos.ts';
import { withDeliveryDefaults } from '../../contract/defaults.ts';
import { toJson, type SqliteDb } from '../db.ts';
import { toDelivery, toSync, type DeliveryRow, type SyncRow } from '../../sql/rows.ts';
import { DISCARDED, EXPIRED, RETRYING, triggerCode } from '../../sql/delivery-log-rows.ts';
import { bodyDeviceId, bodyEventType } from './delivery-log.ts';

// Loose index scan: one seek per connector that has queued rows, however long its backlog is.
const CONNECTORS_WITH_DUE = `
  WITH RECURSIVE c(id) AS (
    SELECT (SELECT connector_id FROM deliveries ORDER BY connector_id LIMIT 1)
    UNION ALL
    SELECT (SELECT connector_id FROM deliveries WHERE connector_id > c.id ORDER BY connector_id LIMIT 1) FROM c WHERE c.id IS NOT NULL
  )
  SELECT id FROM c WHERE id IS NOT NULL
    AND EXISTS (SELECT 1 FROM deliveries d WHERE d.connector_id = c.id AND d.due_time <= ? AND d.enqueue_time > ?)`;

// The same loose scan, probing each connector for a deferred row (one seek on (connector_id, due_time, id)).
const CONNECTORS_WITH_DEFERRED = `
  WITH RECURSIVE c(id) AS (
    SELECT (SELECT connector_id FROM deliveries ORDER BY connector_id LIMIT 1)
    UNION ALL
    SELECT (SELECT connector_id FROM deliveries WHERE connector_id > c.id ORDER BY connector_id LIMIT 1) FROM c WHERE c.id IS NOT NULL
  )
  SELECT id FROM c WHERE id IS NOT NULL
    AND EXISTS (SELECT 1 FROM deliveries d WHERE d.connector_id = c.id AND d.due_time >= ${DEFERRED_DUE})`;

// A piece of deferred rows made due: as many as the connector's due rows (counted up to keepDue) leave of keepDue.
const RELEASE_DEFERRED = `
  UPDATE deliveries SET due_time = :now WHERE id IN (
    SELECT id FROM deliveries WHERE connector_id = :c AND due_time >= ${DEFERRED_DUE} ORDER BY due_time, id
    LIMIT max(0, :keep - (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE connector_id = :c AND due_time <= :now LIMIT :keep))))`;

const INSERT =
  'INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, attempts, lease_until) VALUES (?, ?, ?, ?, ?, 0, ?)';
const INSERT_TRIGGERED =
  'INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, attempts, lease_until, trigger) VALUES (?, ?, ?, ?, ?, 0, ?, ?)';
// A published event's row names its deliveries' first and last ids (migration 190): the delivery log finds them from
// the event instead of an index entry per delivery. Widened, never narrowed, should an event's rows come in two calls.
const NAME_DELIVERIES = `UPDATE events SET first_delivery = min(coalesce(first_delivery, ?), ?),
  last_delivery = max(coalesce(last_delivery, ?), ?) WHERE id = ?`;

// What a removal logs of the rows it removes (DeliveryRepo.deleteByConnector's logAt, deleteExpired's log), read
// from them before they go: a row with a log row ends in the removal's state, unless its log already holds an end (an
// acknowledgement recorded late, while another process had the row: it was delivered); one without gets a row with its
// attempt count and no attempts (they were made before the log was, or none was). Parameters: the state, the time,
// the rows' ids as a JSON array.
const LOG_REMOVED = `
  INSERT INTO delivery_log (id, connector_id, event_id, event_type, device_id, trigger, state, attempt_count, create_time,
    update_time, next_attempt_time, attempts)
  SELECT d.id, d.connector_id, d.event_id, coalesce(${bodyEventType('d.body')}, ''), coalesce(${bodyDeviceId('d.body')}, ''),
    d.trigger, ?, d.attempts, d.enqueue_time, ?, NULL, '[]'
  FROM deliveries d WHERE d.id IN (SELECT value FROM json_each(?))
  ON CONFLICT (id) DO UPDATE SET state = excluded.state, update_time = excluded.update_time, next_attempt_time = NULL
    WHERE delivery_log.state = ${RETRYING}`;

/** `metrics`: the connector metric repo of the same connection (deleteCounted's counter: defaults.ts). */
export function createDeliveryRepo(db: SqliteDb, metrics: ConnectorMetricRepo): DeliveryRepo {
  /**
   * Removes the rows `piece` selects and logs them in `state` at `at`, in one transaction (a savepoint inside the
   * caller's); returns how many rows it removed.
   */
  function removeLogged(piece: string, params: unknown[], state: number, at: number): number {
    const run = () => {
      // The piece's ids first (one writer: nothing changes the queue between these statements), then the rows logged,
      // then removed: no row travels to JavaScript and back.
      const ids = toJson(db.all<{ id: number }>(piece, ...params).map((r) => r.id));
      db.run(LOG_REMOVED, state, at, ids);
      return db.run('DELETE FROM deliveries WHERE id IN (SELECT value FROM json_each(?))', ids).changes;
    };
    return db.raw.inTransaction ? run() : db.raw.transaction(run)();
  }

  // add, deleteMany, deleteCounted and claimMany are the defaults (a statement per row or claim costs no round trip
  // here). leaseIf and claim's cap are ignored: one process owns the store, and its engine counts its own attempts.
  return withDeliveryDefaults(
    {
      async insert(rows) {
        // The published events' id ranges, by event (the enqueue consumer's rows are all of one event).
        let event: string | null = null;
        let first = 0;
        let last = 0;
        const name = () => {
          if (event !== null) db.run(NAME_DELIVERIES, first, first, last, last, event);
        };
        const ids = rows.map((r) => {
          // A published event's row leaves trigger to its default: the live path's statement is as it was.
          const trigger = triggerCode(r.trigger);
          const id = Number(
            (trigger === 0
              ? db.run(INSERT, r.connectorId, r.eventId, r.body, r.enqueueTime, r.dueTime, r.leaseUntil ?? null)
              : db.run(
                  INSERT_TRIGGERED,
                  r.connectorId,
                  r.eventId,
                  r.body,
                  r.enqueueTime,
                  r.dueTime,
                  r.leaseUntil ?? null,
                  trigger,
                )
            ).lastInsertRowid,
          );
          r.queued = { id, leased: r.leaseUntil != null };
          if (trigger === 0) {
            if (r.eventId !== event) {
              name();
              event = r.eventId;
              first = id;
            }
            last = id;
          }
          return id;
        });
        name();
        return ids;
      },
      async connectorsWithDeferred() {
        return db.all<{ id: string }>(CONNECTORS_WITH_DEFERRED).map((r) => r.id);
      },
      async releaseDeferred(connectorId, now, keepDue) {
        return db.run(RELEASE_DEFERRED, { now, c: connectorId, keep: keepDue }).changes;
      },
      async connectorsWithDue(now, enqueuedAfter) {
        return db.all<{ id: string }>(CONNECTORS_WITH_DUE, now, enqueuedAfter).map((r) => r.id);
      },
      async claim(connectorId, now, enqueuedAfter, leaseUntil, limit) {
        return db
          .all<DeliveryRow>(
            `UPDATE deliveries SET lease_until = ?, due_time = ?
           WHERE id IN (SELECT id FROM deliveries WHERE connector_id = ? AND due_time <= ? AND enqueue_time > ? ORDER BY due_time, id LIMIT +?)
           RETURNING *`,
            leaseUntil,
            leaseUntil,
            connectorId,
            now,
            enqueuedAfter,
            limit,
          )
          .map(toDelivery)
          .sort((a, b) => a.id - b.id);
      },
      async pacingForUpdate(connectorId) {
        // One writer: nothing else can pace the connector before this transaction commits.
        const r = db.get<{ next_start: number }>(
          'SELECT next_start FROM connector_pacing WHERE connector_id = ?',
          connectorId,
        );
        return r ? r.next_start : null;
      },
      async setPacing(connectorId, nextStart) {
        db.run(
          'INSERT INTO connector_pacing (connector_id, next_start) VALUES (?, ?) ON CONFLICT (connector_id) DO UPDATE SET next_start = excluded.next_start',
          connectorId,
          nextStart,
        );
      },
      async get(id) {
        const r = db.get<DeliveryRow>('SELECT * FROM deliveries WHERE id = ?', id);
        return r ? toDelivery(r) : null;
      },
      async delete(id, leaseUntil) {
        if (leaseUntil === undefined) return db.run('DELETE FROM deliveries WHERE id = ?', id).changes > 0;
        return db.run('DELETE FROM deliveries WHERE id = ? AND lease_until IS ?', id, leaseUntil).changes > 0;
      },
      async reschedule(id, attempts, dueTime, leaseUntil) {
        return (
          db.run(
            'UPDATE deliveries SET attempts = ?, due_time = ?, lease_until = NULL WHERE id = ? AND lease_until IS ?',
            attempts,
            dueTime,
            id,
            leaseUntil,
          ).changes > 0
        );
      },
      async deleteByConnector(connectorId, limit, logAt) {
        const piece = 'SELECT id FROM deliveries WHERE connector_id = ? LIMIT +?';
        if (logAt === undefined)
          return db.run(`DELETE FROM deliveries WHERE id IN (${piece})`, connectorId, limit).changes;
        return removeLogged(piece, [connectorId, limit], DISCARDED, logAt);
      },
      async deleteExpired(enqueuedAtOrBefore, now, limit, log) {
        // Rows are queued with enqueue_time = now and ids in insert order, so the expired rows are the lowest ids:
        // a walk along the primary key up to the first row not yet expired finds them, without an index on
        // enqueue_time, which was one more B-tree written for every row queued. (Should the clock step back, rows
        // queued after the step are dropped with the ones before it: late by the size of the step, and never
        // attempted meanwhile, since a claim skips expired rows.) A row in flight (lease not yet over) may finish
        // its attempt; its outcome drops it.
        const piece = `SELECT id FROM deliveries
           WHERE id < coalesce((SELECT id FROM deliveries WHERE enqueue_time > ? ORDER BY id LIMIT 1), 9223372036854775807)
             AND (lease_until IS NULL OR lease_until <= ?)
           ORDER BY id LIMIT +?`;
        const params = [enqueuedAtOrBefore, now, limit];
        if (log !== true) return db.run(`DELETE FROM deliveries WHERE id IN (${piece})`, ...params).changes;
        return removeLogged(piece, params, EXPIRED, now);
      },
      async releaseLeases(now, ids) {
        if (ids === undefined)
          return db.run('UPDATE deliveries SET lease_until = NULL, due_time = ? WHERE lease_until IS NOT NULL', now)
            .changes;
        return db.run(
          'UPDATE deliveries SET lease_until = NULL, due_time = ? WHERE id IN (SELECT value FROM json_each(?)) AND lease_until IS NOT NULL',
          now,
          toJson(ids),
        ).changes;
      },
      async count() {
        return db.get<{ n: number }>('SELECT count(*) AS n FROM deliveries')!.n;
      },
      async lastSync(connectorId) {
        const r = db.get<SyncRow>('SELECT * FROM connector_syncs WHERE connector_id = ?', connectorId);
        return r ? toSync(r) : null;
      },
      async recordSync(s) {
        db.run(
          `INSERT INTO connector_syncs (connector_id, first_id, last_id, enqueue_time, scope) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (connector_id) DO UPDATE SET first_id = excluded.first_id, last_id = excluded.last_id,
           enqueue_time = excluded.enqueue_time, scope = excluded.scope`,
          s.connectorId,
          s.firstId,
          s.lastId,
          s.enqueueTime,
          s.scope,
        );
      },
      async syncQueued(s) {
        // Along the primary key: the sync's rows and whatever other transactions queued between them, never the backlog.
        return (
          db.get(
            'SELECT 1 FROM deliveries WHERE id BETWEEN ? AND ? AND connector_id = ? AND enqueue_time = ? LIMIT 1',
            s.firstId,
            s.lastId,
            s.connectorId,
            s.enqueueTime,
          ) !== undefined
        );
      },
    },
    () => metrics,
  );
}
