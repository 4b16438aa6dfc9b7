// The delivery log on SQLite (store/contract/delivery-log.ts): a row per delivery from its first outcome on, the
// queue read for the deliveries still waiting for one. A statement per outcome costs no round trip here, so record
// runs in the outcomes' transaction as it is called.
import { DEFERRED_DUE } from '../../contract/connector-repos.ts';
import type { DeliveryLogFilter, DeliveryLogRepo } from '../../contract/delivery-log.ts';
import {
  attemptsJson,
  DELIVERED,
  LOGGED_STATES,
  newest,
  passes,
  PENDING,
  RETRYING,
  stateCode,
  statePlan,
  toLogRecord,
  triggerCode,
  type DeliveryLogRow,
  type StatePlan,
} from '../../sql/delivery-log-rows.ts';
import { toJson, type SqliteDb } from '../db.ts';

const COLUMNS =
  'id, connector_id, event_id, event_type, device_id, trigger, state, attempt_count, create_time, update_time, next_attempt_time, attempts';

// The first outcome of a delivery makes its row; each later one appends its attempt (`->` gives the attempt as JSON,
// so json_insert adds it as an object, not as a string).
const RECORD = `
  INSERT INTO delivery_log (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET state = excluded.state, update_time = excluded.update_time,
    next_attempt_time = excluded.next_attempt_time, attempt_count = delivery_log.attempt_count + 1,
    attempts = json_insert(delivery_log.attempts, '$[#]', excluded.attempts -> 0)`;

// A TEST's id, from the queue's own sequence (AUTOINCREMENT's row in sqlite_sequence), so it never meets a queue
// row's id: the next id the queue would have used, taken. The row is there once the queue has had a row; before,
// it is made here, as the first insert would have made it.
const NEXT_ID = `UPDATE sqlite_sequence SET seq = max(seq, coalesce((SELECT max(id) FROM deliveries), 0)) + 1
  WHERE name = 'deliveries' RETURNING seq AS id`;
const FIRST_ID = `INSERT INTO sqlite_sequence (name, seq) VALUES ('deliveries', coalesce((SELECT max(id) FROM deliveries), 0) + 1)
  RETURNING seq AS id`;

/**
 * The push body's event type and device (push-body.ts) of a queue row's `body` column; NULL for a body that is not
 * JSON, so that no read or removal fails on one. CAST: a BLOB given to the JSON functions is read as SQLite's binary
 * JSON.
 */
const bodyField = (body: string, path: string) =>
  `CASE WHEN json_valid(CAST(${body} AS TEXT)) THEN json_extract(CAST(${body} AS TEXT), '${path}') END`;
export const bodyEventType = (body: string): string => bodyField(body, '$.event.eventType');
export const bodyDeviceId = (body: string): string => bodyField(body, '$.metadata.deviceId');

const STORED = `l.id, l.connector_id, l.event_id, l.event_type, l.device_id, l.trigger, l.state, l.attempt_count,
  l.create_time, l.update_time, l.next_attempt_time`;
// A logged delivery, its state as read: a RETRYING one whose queue row is leased past now (`f`: its next attempt is in
// flight) reads PENDING, with no next attempt time. Parameter: now.
const AS_READ = `CASE WHEN f.id IS NULL THEN l.state ELSE ${PENDING} END`;
const LOGGED = `
  SELECT l.id, l.connector_id, l.event_id, l.event_type, l.device_id, l.trigger, ${AS_READ} AS state, l.attempt_count,
    l.create_time, l.update_time, CASE WHEN f.id IS NULL THEN l.next_attempt_time END AS next_attempt_time`;
const IN_FLIGHT = `LEFT JOIN deliveries f ON f.id = l.id AND l.state = ${RETRYING} AND f.lease_until > ?`;
// A queued row without a log row: PENDING, due at its due time unless leased past now, or deferred (a :replay row
// waiting to be let in: DEFERRED_DUE is no time to show). Parameter: now.
const QUEUED = `
  SELECT d.id, d.connector_id, d.event_id, ${bodyEventType('d.body')} AS event_type, ${bodyDeviceId('d.body')} AS device_id,
    d.trigger, ${PENDING} AS state, d.attempts AS attempt_count, d.enqueue_time AS create_time,
    d.enqueue_time AS update_time,
    CASE WHEN d.lease_until > ? OR d.due_time >= ${DEFERRED_DUE} THEN NULL ELSE d.due_time END AS next_attempt_time`;
const NOT_LOGGED = 'NOT EXISTS (SELECT 1 FROM delivery_log l WHERE l.id = d.id)';

const MAX_ID = Number.MAX_SAFE_INTEGER;

// A connector's oldest deliveries up to an id (trim), the oldest of each state merged; `settled`: those whose queue row
// is gone. Parameters per state: the connector, the state, the greatest id, how many.
const oldest = (settled: boolean) =>
  LOGGED_STATES.map(
    () =>
      `SELECT * FROM (SELECT l.id FROM delivery_log l WHERE l.connector_id = ? AND l.state = ? AND l.id <= ?${
        settled ? ' AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = l.id)' : ''
      } ORDER BY l.id LIMIT +?)`,
  ).join(' UNION ALL ');
/** The newest queue rows a page looks at first, whatever their connector, then the next ones (see queued()). */
const WINDOWS = [1024, 8192];
/** A connector with fewer queue rows than this has them all read at once (see queued()). */
const FEW = 1024;

/** Conditions (each starting with AND) and their parameters, in order. */
interface Where {
  sql: string;
  params: unknown[];
}

/** Where a filter reads its fields: the log's columns, or a queue row's. */
interface FilterColumns {
  trigger: string;
  eventId: string;
  /** The condition (and its parameters) that the row is of the device. */
  device: (deviceId: string) => Where;
  /** The time createTime is, for the window. */
  time: string;
}

/** The filters besides the connector, the state and the paging, on the given columns. */
function filterWhere(f: DeliveryLogFilter, c: FilterColumns): Where {
  const sql: string[] = [];
  const params: unknown[] = [];
  const add = (cond: string, ...values: unknown[]) => {
    sql.push(cond);
    params.push(...values);
  };
  if (f.trigger !== undefined) add(`${c.trigger} = ?`, triggerCode(f.trigger));
  if (f.eventId !== undefined) add(`${c.eventId} = ?`, f.eventId);
  if (f.deviceId !== undefined) {
    const d = c.device(f.deviceId);
    add(d.sql, ...d.params);
  }
  if (f.startTime !== undefined) add(`${c.time} >= ?`, f.startTime);
  if (f.endTime !== undefined) add(`${c.time} < ?`, f.endTime);
  return { sql: sql.map((s) => ` AND ${s}`).join(''), params };
}

/** The filters on log rows (alias l). */
const loggedWhere = (f: DeliveryLogFilter): Where =>
  filterWhere(f, {
    trigger: 'l.trigger',
    eventId: 'l.event_id',
    device: (id) => ({ sql: 'l.device_id = ?', params: [id] }),
    time: 'l.create_time',
  });

/**
 * The filters on queue rows (alias d). The device is looked for in the body's bytes first: the JSON is parsed only
 * for a body that holds it.
 */
const queuedWhere = (f: DeliveryLogFilter): Where =>
  filterWhere(f, {
    trigger: 'd.trigger',
    eventId: 'd.event_id',
    device: (id) => ({
      sql: `instr(d.body, ?) > 0 AND ${bodyDeviceId('d.body')} = ?`,
      params: [Buffer.from(id, 'utf8'), id],
    }),
    time: 'd.enqueue_time',
  });

export function createDeliveryLogRepo(db: SqliteDb): DeliveryLogRepo {
  /**
   * One connector's newest `limit` logged deliveries that pass the filters, their states as read. Each state asked for
   * is a range of delivery_log_by_connector, newest first, stopping at the limit, so a rare state costs no more than a
   * common one; an event's deliveries are few, read as below (migration 190). RETRYING deliveries in flight
   * (asked for as PENDING alone) are found from the connector's leased queue rows: a leased row's due time is its
   * lease end (deliveries.ts), so they are a range of deliveries_by_connector_due.
   */
  function logged(c: string, f: DeliveryLogFilter, plan: StatePlan, limit: number, now: number): DeliveryLogRow[] {
    const w = loggedWhere(f);
    const before = f.beforeId ?? MAX_ID;
    if (f.eventId !== undefined) {
      // An event's deliveries are few: those it was published with, named by its row in the history (migration 190),
      // or, once it has left the history, among the connector's own; the rest (sync, resend, replay, test) through the
      // partial delivery_log_by_event. One statement each (an OR of them would be planned as a scan).
      const where = `l.connector_id = ? AND l.id < ?${w.sql}`;
      const read = (from: string, condition: string, ...params: unknown[]) =>
        db.all<DeliveryLogRow>(
          `${LOGGED} FROM ${from} ${IN_FLIGHT} WHERE ${condition} AND ${where}`,
          now,
          ...params,
          c,
          before,
          ...w.params,
        );
      const published = db.get<{ first: number | null; last: number | null }>(
        'SELECT first_delivery AS first, last_delivery AS last FROM events WHERE id = ?',
        f.eventId,
      );
      const rows = read(
        'delivery_log l INDEXED BY delivery_log_by_event',
        'l.event_id = ? AND l.trigger <> 0',
        f.eventId,
      );
      if (published === undefined) {
        rows.push(
          ...read('delivery_log l INDEXED BY delivery_log_by_connector', 'l.trigger = 0 AND l.event_id = ?', f.eventId),
        );
      } else if (published.first !== null && published.last !== null) {
        rows.push(
          ...read(
            // Along the primary key: the planner, without statistics, would walk the connector's index instead.
            'delivery_log l NOT INDEXED',
            'l.id BETWEEN ? AND ? AND l.trigger = 0 AND l.event_id = ?',
            published.first,
            published.last,
            f.eventId,
          ),
        );
      }
      return rows.filter((r) => passes(r.state, plan));
    }
    const rows: DeliveryLogRow[] = [];
    for (const state of plan.ended) {
      rows.push(
        ...db.all<DeliveryLogRow>(
          `SELECT ${STORED} FROM delivery_log l WHERE l.connector_id = ? AND l.state = ? AND l.id < ?${w.sql}
           ORDER BY l.id DESC LIMIT +?`,
          c,
          state,
          before,
          ...w.params,
          limit,
        ),
      );
    }
    if (plan.retrying === 'all' || plan.retrying === 'waiting') {
      rows.push(
        ...db.all<DeliveryLogRow>(
          `${LOGGED} FROM delivery_log l ${IN_FLIGHT}
           WHERE l.connector_id = ? AND l.state = ${RETRYING} AND l.id < ?${w.sql}${plan.retrying === 'waiting' ? ' AND f.id IS NULL' : ''}
           ORDER BY l.id DESC LIMIT +?`,
          now,
          c,
          before,
          ...w.params,
          limit,
        ),
      );
    } else if (plan.retrying === 'in-flight') {
      rows.push(
        ...db.all<DeliveryLogRow>(
          `SELECT l.id, l.connector_id, l.event_id, l.event_type, l.device_id, l.trigger, ${PENDING} AS state,
             l.attempt_count, l.create_time, l.update_time, NULL AS next_attempt_time
           FROM deliveries d INDEXED BY deliveries_by_connector_due JOIN delivery_log l ON l.id = d.id
           WHERE d.connector_id = ? AND d.due_time > ? AND d.lease_until > ? AND l.state = ${RETRYING} AND l.id < ?${w.sql}
           ORDER BY l.id DESC LIMIT +?`,
          c,
          now,
          now,
          before,
          ...w.params,
          limit,
        ),
      );
    }
    return newest(rows, limit);
  }

  /** Of these queue rows, the newest `limit` that pass `w` and have no log row, read (PENDING). */
  function queuedRows(ids: readonly number[], w: Where, limit: number, now: number): DeliveryLogRow[] {
    if (ids.length === 0) return [];
    const passed = db.all<{ id: number }>(
      `SELECT d.id FROM deliveries d WHERE d.id IN (SELECT value FROM json_each(?))${w.sql} AND ${NOT_LOGGED}
       ORDER BY d.id DESC LIMIT +?`,
      toJson(ids),
      ...w.params,
      limit,
    );
    if (passed.length === 0) return [];
    return db.all<DeliveryLogRow>(
      `${QUEUED} FROM deliveries d WHERE d.id IN (SELECT value FROM json_each(?))`,
      now,
      toJson(passed.map((r) => r.id)),
    );
  }

  /**
   * The queued rows without a log row that can make the page: every one newer than the page's last delivery, up to
   * `limit`. The queue has no index in id order by connector (one more B-tree written for every queued row, on the
   * live path), and sorting a connector's rows by id costs ~0.6 µs a row (60 ms for a backlog of 100,000), so:
   * - the newest rows of the queue below the page's start, whatever their connector (a walk of the primary key down
   *   from there): a connector with a backlog owns most of them, and the page is done; then the next ones, more of
   *   them (another connector's burst came after);
   * - otherwise each connector's rows below that window: all of them at once when it has fewer than FEW (read in
   *   deliveries_by_connector_due's order, no sort);
   * - otherwise (a long backlog of a connector sparse among the newest rows) its newest ids sorted, a few more than
   *   the page first, all of them when most of those have a log row (a backlog being retried).
   */
  function queued(conns: readonly string[], f: DeliveryLogFilter, page: DeliveryLogRow[], limit: number, now: number) {
    const w = queuedWhere(f);
    const wanted = new Set(conns);
    const rows: DeliveryLogRow[] = [];
    let below = f.beforeId ?? MAX_ID;
    for (const size of WINDOWS) {
      const window = db.all<{ id: number; connector_id: string }>(
        'SELECT id, connector_id FROM deliveries WHERE id < ? ORDER BY id DESC LIMIT +?',
        below,
        size,
      );
      rows.push(
        ...queuedRows(
          window.filter((r) => wanted.has(r.connector_id)).map((r) => r.id),
          w,
          limit,
          now,
        ),
      );
      const found = newest([...page, ...rows], limit);
      if (window.length < size) return found;
      below = window[window.length - 1]!.id;
      if (found.length === limit && found[found.length - 1]!.id >= below) return found;
    }
    for (const c of conns) {
      const all = db.all<{ id: number }>(
        'SELECT id FROM deliveries INDEXED BY deliveries_by_connector_due WHERE connector_id = ? ORDER BY due_time DESC, id DESC LIMIT +?',
        c,
        FEW,
      );
      if (all.length < FEW) {
        rows.push(
          ...queuedRows(
            all.map((r) => r.id).filter((id) => id < below),
            w,
            limit,
            now,
          ),
        );
        continue;
      }
      for (let candidates = 2 * limit + 32; ; candidates = MAX_ID) {
        const ids = db.all<{ id: number }>(
          `SELECT d.id FROM deliveries d INDEXED BY deliveries_by_connector_due WHERE d.connector_id = ? AND d.id < ?${w.sql}
           ORDER BY d.id DESC LIMIT +?`,
          c,
          below,
          ...w.params,
          candidates,
        );
        const found = queuedRows(
          ids.map((r) => r.id),
          { sql: '', params: [] },
          limit,
          now,
        );
        if (found.length >= limit || ids.length < candidates) {
          rows.push(...found);
          break;
        }
      }
    }
    return newest([...page, ...rows], limit);
  }

  return {
    async record(outcomes) {
      for (const o of outcomes) {
        db.run(
          RECORD,
          o.id,
          o.connectorId,
          o.eventId,
          o.eventType,
          o.deviceId,
          triggerCode(o.trigger),
          stateCode(o.state),
          o.createTime,
          o.updateTime,
          o.nextAttemptTime,
          attemptsJson([o.attempt]),
        );
      }
    },
    async recordTest(o) {
      const id = (db.get<{ id: number }>(NEXT_ID) ?? db.get<{ id: number }>(FIRST_ID)!).id;
      db.run(
        `INSERT INTO delivery_log (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)`,
        id,
        o.connectorId,
        o.eventId,
        o.eventType,
        o.deviceId,
        triggerCode(o.trigger),
        stateCode(o.state),
        o.createTime,
        o.updateTime,
        o.nextAttemptTime,
        attemptsJson([o.attempt]),
      );
      return id;
    },
    async list(filter, limit, now) {
      const conns = [...new Set(filter.connectorIds)];
      if (limit <= 0 || conns.length === 0) return [];
      const plan = statePlan(filter);
      // Connector by connector (no round trip to save here): the newest `limit` of all is among each one's newest.
      let page = newest(
        conns.flatMap((c) => logged(c, filter, plan, limit, now)),
        limit,
      );
      if (plan.queued) page = queued(conns, filter, page, limit, now);
      return page.map(toLogRecord);
    },
    async get(connectorId, id, now) {
      const logged = db.get<DeliveryLogRow>(
        `${LOGGED}, l.attempts FROM delivery_log l ${IN_FLIGHT} WHERE l.id = ? AND l.connector_id = ?`,
        now,
        id,
        connectorId,
      );
      if (logged) return toLogRecord(logged);
      const queued = db.get<DeliveryLogRow>(
        `${QUEUED}, '[]' AS attempts FROM deliveries d WHERE d.id = ? AND d.connector_id = ?`,
        now,
        id,
        connectorId,
      );
      return queued ? toLogRecord(queued) : null;
    },
    async deliveredEventIds(connectorId, eventIds) {
      if (eventIds.length === 0) return new Set();
      // As logged() finds an event's deliveries: those it was published with from its row in the history, or among
      // the connector's delivered ones for an event no longer there (:replay asks about events it read from the
      // history, so rarely), the rest through the partial delivery_log_by_event.
      const ids = toJson(eventIds);
      const gone = db
        .all<{ id: string }>('SELECT value AS id FROM json_each(?) WHERE value NOT IN (SELECT id FROM events)', ids)
        .map((r) => r.id);
      const rows = db.all<{ event_id: string }>(
        `SELECT l.event_id FROM json_each(?) j JOIN events e ON e.id = j.value
           JOIN delivery_log l ON l.id BETWEEN e.first_delivery AND e.last_delivery
         WHERE l.event_id = j.value AND l.trigger = 0 AND l.connector_id = ? AND l.state = ${DELIVERED}
         UNION
         SELECT event_id FROM delivery_log INDEXED BY delivery_log_by_event
         WHERE event_id IN (SELECT value FROM json_each(?)) AND trigger <> 0 AND connector_id = ? AND state = ${DELIVERED}`,
        ids,
        connectorId,
        ids,
        connectorId,
      );
      if (gone.length > 0)
        rows.push(
          ...db.all<{ event_id: string }>(
            `SELECT event_id FROM delivery_log INDEXED BY delivery_log_by_connector
             WHERE connector_id = ? AND state = ${DELIVERED} AND trigger = 0 AND event_id IN (SELECT value FROM json_each(?))`,
            connectorId,
            toJson(gone),
          ),
        );
      return new Set(rows.map((r) => r.event_id));
    },
    async deleteBefore(createdBefore, limit) {
      // Along the primary key, up to the first delivery not yet old enough (ids follow create_time, migration 140).
      // A delivery still queued (a retry of a row older than the retention) stays until its queue row ends: its row
      // gone, its next outcome would start a new one without its attempts.
      return db.run(
        `DELETE FROM delivery_log WHERE id IN (
           SELECT l.id FROM delivery_log l
           WHERE l.id < coalesce((SELECT id FROM delivery_log WHERE create_time >= ? ORDER BY id LIMIT 1), ${MAX_ID})
             AND l.create_time < ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = l.id)
           ORDER BY l.id LIMIT +?)`,
        createdBefore,
        createdBefore,
        limit,
      ).changes;
    },
    async connectorsOver(keep) {
      // Loose index scan: one seek per connector, then its first keep + 1 entries counted, no more.
      return db
        .all<{ id: string }>(
          `WITH RECURSIVE c(id) AS (
             SELECT (SELECT connector_id FROM delivery_log ORDER BY connector_id LIMIT 1)
             UNION ALL
             SELECT (SELECT connector_id FROM delivery_log WHERE connector_id > c.id ORDER BY connector_id LIMIT 1) FROM c WHERE c.id IS NOT NULL
           )
           SELECT id FROM c WHERE id IS NOT NULL
             AND (SELECT count(*) FROM (SELECT 1 FROM delivery_log l WHERE l.connector_id = c.id LIMIT +?)) > ?`,
          keep + 1,
          keep,
        )
        .map((r) => r.id);
    },
    async trimEdge(connectorId, keep) {
      // Its deliveries beyond the newest `keep` are its oldest (count - keep), found by merging the oldest of each state.
      const n = db.get<{ n: number }>('SELECT count(*) AS n FROM delivery_log WHERE connector_id = ?', connectorId)!.n;
      const over = n - Math.max(0, keep);
      if (over <= 0) return null;
      return db.get<{ id: number }>(
        `SELECT id FROM (${oldest(false)}) ORDER BY id LIMIT 1 OFFSET +?`,
        ...LOGGED_STATES.flatMap((state) => [connectorId, state, MAX_ID, over]),
        over - 1,
      )!.id;
    },
    async trim(connectorId, upTo, limit) {
      // Oldest first, a delivery still queued staying (deleteBefore).
      return db.run(
        `DELETE FROM delivery_log WHERE id IN (SELECT id FROM (${oldest(true)}) ORDER BY id LIMIT +?)`,
        ...LOGGED_STATES.flatMap((state) => [connectorId, state, upTo, limit]),
        limit,
      ).changes;
    },
    async deleteByConnector(connectorId, limit) {
      return db.run(
        'DELETE FROM delivery_log WHERE id IN (SELECT id FROM delivery_log WHERE connector_id = ? LIMIT +?)',
        connectorId,
        limit,
      ).changes;
    },
    async count() {
      return db.get<{ n: number }>('SELECT count(*) AS n FROM delivery_log')!.n;
    },
  };
}
