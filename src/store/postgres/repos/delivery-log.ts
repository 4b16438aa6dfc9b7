// The delivery log on PostgreSQL (store/contract/delivery-log.ts): a row per delivery from its first outcome on, the
// queue read for the deliveries still waiting for one. Inside an outcome batch, record is held and written by the
// batch's one statement (write-behind.ts, held-outcomes.ts); outside one, that same statement writes it alone.
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
import { HeldOutcomes } from '../batching/held-outcomes.ts';
import type { Sql } from '../db.ts';

/**
 * A queue row's body (bytea) as jsonb, for its event type and device (push-body.ts). The API refuses text holding
 * NUL (api/body.ts), so no body holds the `\u0000` that jsonb cannot take.
 */
export const BODY_JSON = (body: string): string => `convert_from(${body}, 'UTF8')::jsonb`;

const MAX_ID = '9223372036854775807';
/** The newest queue rows a page looks at first, whatever their connector, then the next ones (see queued()). */
const WINDOWS = [1024, 8192];
/** A connector with fewer queue rows than this (waiting, and leased) has them all read at once (see queued()). */
const FEW = 1024;

const STORED = `l.id, l.connector_id, l.event_id, l.event_type, l.device_id, l.trigger, l.state, l.attempt_count,
  l.create_time, l.update_time, l.next_attempt_time`;
// A logged delivery, its state as read: a RETRYING one whose queue row is leased past now (`f`: its next attempt is in
// flight) reads PENDING, with no next attempt time. `now` is the parameter named; `attempts` for get.
const logged = (now: string, attempts = false) => `
  SELECT l.id, l.connector_id, l.event_id, l.event_type, l.device_id, l.trigger,
    CASE WHEN f.id IS NULL THEN l.state ELSE ${PENDING} END AS state, l.attempt_count, l.create_time, l.update_time,
    CASE WHEN f.id IS NULL THEN l.next_attempt_time END AS next_attempt_time${attempts ? ', l.attempts' : ''}
  FROM delivery_log l LEFT JOIN deliveries f ON f.id = l.id AND l.state = ${RETRYING} AND f.lease_until > ${now}`;
// A queued row without a log row: PENDING, due at its due time unless leased past now, or deferred (a :replay row
// waiting to be let in: DEFERRED_DUE is no time to show).
const queuedColumns = (now: string) => `
  SELECT d.id, d.connector_id, d.event_id, b.j -> 'event' ->> 'eventType' AS event_type,
    b.j -> 'metadata' ->> 'deviceId' AS device_id, d.trigger, ${PENDING} AS state, d.attempts AS attempt_count,
    d.enqueue_time AS create_time, d.enqueue_time AS update_time,
    CASE WHEN d.lease_until > ${now} OR d.due_time >= ${DEFERRED_DUE} THEN NULL ELSE d.due_time END AS next_attempt_time`;
const BODY = `CROSS JOIN LATERAL (SELECT ${BODY_JSON('d.body')} AS j) b`;
const NOT_LOGGED = 'NOT EXISTS (SELECT 1 FROM delivery_log l WHERE l.id = d.id)';
// One connector's deliveries of one state, newest first: delivery_log_by_connector's order, which the primary key
// cannot give. The state is written as a range of one value: as an equality, the planner drops it from the order (and
// the connector too, a parameter of the lateral subquery), is left with id order, and takes the primary key for it
// whenever the statistics say that one connector holds most rows: with one connector logged so far, a page of
// another read the whole log (50 ms for 100,000 rows).
const ofState = (state: string) => `l.state >= ${state} AND l.state <= ${state}`;
const BY_CONNECTOR = 'ORDER BY l.state DESC, l.id DESC';

/** Numbered parameters of a statement being built, each numbered when first used (PostgreSQL types only those used). */
class Params {
  readonly values: unknown[] = [];
  private readonly named = new Map<string, string>();
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
  /** The parameter of that name, added with `value` on first use. */
  of(name: string, value: unknown): string {
    let p = this.named.get(name);
    if (p === undefined) this.named.set(name, (p = this.add(value)));
    return p;
  }
}

/** The filters on log rows (alias l) besides the connector, the state and the paging, each starting with AND. */
function loggedWhere(f: DeliveryLogFilter, p: Params): string {
  const sql: string[] = [];
  if (f.trigger !== undefined) sql.push(`l.trigger = ${p.add(triggerCode(f.trigger))}`);
  if (f.eventId !== undefined) sql.push(`l.event_id = ${p.add(f.eventId)}`);
  if (f.deviceId !== undefined) sql.push(`l.device_id = ${p.add(f.deviceId)}`);
  if (f.startTime !== undefined) sql.push(`l.create_time >= ${p.add(f.startTime)}`);
  if (f.endTime !== undefined) sql.push(`l.create_time < ${p.add(f.endTime)}`);
  return sql.map((s) => ` AND ${s}`).join('');
}

/**
 * The filters on queue rows (alias d) besides the connector and the paging, each starting with AND. The device is
 * looked for in the body's bytes first: the JSON is parsed only for a body that holds it.
 */
function queuedWhere(f: DeliveryLogFilter, p: Params): string {
  const sql: string[] = [];
  if (f.trigger !== undefined) sql.push(`d.trigger = ${p.add(triggerCode(f.trigger))}`);
  if (f.eventId !== undefined) sql.push(`d.event_id = ${p.add(f.eventId)}`);
  if (f.deviceId !== undefined) {
    const device = p.add(f.deviceId);
    sql.push(
      `position(convert_to(${device}::text, 'UTF8') IN d.body) > 0 AND ${BODY_JSON('d.body')} -> 'metadata' ->> 'deviceId' = ${device}`,
    );
  }
  if (f.startTime !== undefined) sql.push(`d.enqueue_time >= ${p.add(f.startTime)}`);
  if (f.endTime !== undefined) sql.push(`d.enqueue_time < ${p.add(f.endTime)}`);
  return sql.map((s) => ` AND ${s}`).join('');
}

/**
 * The statement of the connectors' newest `limit` logged deliveries that pass the filters, their states as read. Each
 * state asked for is a range of delivery_log_by_connector per connector, newest first, stopping at the limit, so a
 * rare state costs no more than a common one; an event's deliveries are few, read through delivery_log_by_event (and
 * their states checked by the caller). RETRYING deliveries in flight (asked for as PENDING alone) are found from the
 * connectors' leased queue rows (deliveries_leased).
 */
function loggedSql(
  f: DeliveryLogFilter,
  plan: StatePlan,
  limit: number,
  now: number,
): { text: string; params: unknown[] } {
  const p = new Params();
  const conns = p.add([...new Set(f.connectorIds)]);
  const before = p.add(f.beforeId ?? MAX_ID);
  const at = () => p.of('now', now);
  const most = () => p.of('limit', limit);
  const w = loggedWhere(f, p);
  if (f.eventId !== undefined)
    return {
      text: `${logged(at())} WHERE l.connector_id = ANY(${conns}::text[]) AND l.id < ${before}${w}`,
      params: p.values,
    };
  const parts: string[] = [];
  if (plan.ended.length > 0)
    parts.push(`SELECT x.* FROM c CROSS JOIN unnest(${p.add(plan.ended)}::smallint[]) AS s(state) CROSS JOIN LATERAL (
      SELECT ${STORED} FROM delivery_log l WHERE l.connector_id = c.id AND ${ofState('s.state')} AND l.id < ${before}${w}
      ${BY_CONNECTOR} LIMIT ${most()}) x`);
  if (plan.retrying === 'all' || plan.retrying === 'waiting')
    parts.push(`SELECT x.* FROM c CROSS JOIN LATERAL (
      ${logged(at())} WHERE l.connector_id = c.id AND ${ofState(String(RETRYING))} AND l.id < ${before}${w}${plan.retrying === 'waiting' ? ' AND f.id IS NULL' : ''}
      ${BY_CONNECTOR} LIMIT ${most()}) x`);
  else if (plan.retrying === 'in-flight')
    parts.push(`SELECT x.* FROM c CROSS JOIN LATERAL (
      SELECT l.id, l.connector_id, l.event_id, l.event_type, l.device_id, l.trigger, ${PENDING} AS state, l.attempt_count,
        l.create_time, l.update_time, NULL::bigint AS next_attempt_time
      FROM deliveries d JOIN delivery_log l ON l.id = d.id
      WHERE d.connector_id = c.id AND d.lease_until > ${at()} AND l.state = ${RETRYING} AND l.id < ${before}${w}
      ORDER BY l.id DESC LIMIT ${most()}) x`);
  if (parts.length === 0) return { text: '', params: [] };
  return {
    text: `WITH c AS (SELECT DISTINCT unnest(${conns}::text[]) AS id)
      SELECT * FROM (${parts.join(' UNION ALL ')}) u ORDER BY id DESC LIMIT ${most()}`,
    params: p.values,
  };
}

export function createDeliveryLogRepo(sql: Sql): DeliveryLogRepo {
  /** Of these queue rows, the newest `limit` that pass the filters (`w` of `p`) and have no log row, read (PENDING). */
  async function queuedRows(ids: readonly number[], limit: number, now: number, f?: DeliveryLogFilter) {
    if (ids.length === 0) return [];
    const p = new Params();
    const [list, at, most] = [p.add(ids), p.add(now), p.add(limit)];
    const w = f === undefined ? '' : queuedWhere(f, p);
    return sql.query<DeliveryLogRow>(
      `WITH q AS (
         SELECT d.id FROM deliveries d WHERE d.id = ANY(${list}::bigint[])${w} AND ${NOT_LOGGED} ORDER BY d.id DESC LIMIT ${most})
       ${queuedColumns(at)} FROM q JOIN deliveries d ON d.id = q.id ${BODY}`,
      p.values,
    );
  }

  /**
   * The queued rows without a log row that can make the page, added to it: every one newer than its last delivery,
   * up to `limit`. The queue has no index in id order by connector (one more B-tree written for every queued row, on
   * the live path), and a connector's rows sorted by id cost ~0.5 µs each (50 ms for a backlog of 100,000), so:
   * - the newest rows of the queue below the page's start, whatever their connector (a walk of the primary key down
   *   from there), with the page's rows among them, in one statement: a connector with a backlog owns most of them,
   *   and the page is done; then the next ones, more of them (another connector's burst came after);
   * - otherwise each connector's rows below that window: all of them at once when it has fewer than FEW waiting and
   *   FEW leased (read in the order of deliveries_waiting and deliveries_leased, which the planner takes for a short
   *   LIMIT in an index's order, whatever the table's statistics say);
   * - otherwise (a long backlog of a connector sparse among the newest rows) its newest ids, a few more than the page
   *   first, all of them when most of those have a log row (a backlog being retried).
   */
  async function queued(f: DeliveryLogFilter, page: DeliveryLogRow[], limit: number, now: number) {
    const conns = [...new Set(f.connectorIds)];
    const rows: DeliveryLogRow[] = [];
    let low = f.beforeId ?? Number.MAX_SAFE_INTEGER;
    for (const size of WINDOWS) {
      const p = new Params();
      const [below, window, list, most, at] = [p.add(low), p.add(size), p.add(conns), p.add(limit), p.add(now)];
      const filters = queuedWhere(f, p);
      const got = await sql.query<DeliveryLogRow & { scanned: number; low: number | null }>(
        `WITH w AS MATERIALIZED (SELECT id, connector_id FROM deliveries WHERE id < ${below} ORDER BY id DESC LIMIT ${window}),
         edge AS (SELECT count(*)::int AS scanned, min(id) AS low FROM w),
         q AS (
           SELECT d.id FROM w JOIN deliveries d ON d.id = w.id
           WHERE w.connector_id = ANY(${list}::text[])${filters} AND ${NOT_LOGGED}
           ORDER BY d.id DESC LIMIT ${most})
         SELECT r.*, edge.scanned, edge.low FROM edge LEFT JOIN LATERAL (
           ${queuedColumns(at)} FROM q JOIN deliveries d ON d.id = q.id ${BODY}) r ON true`,
        p.values,
      );
      rows.push(...got.filter((r) => r.id !== null));
      const found = newest([...page, ...rows], limit);
      if (got[0]!.scanned < size || got[0]!.low === null) return found;
      low = got[0]!.low;
      if (found.length === limit && found[found.length - 1]!.id >= low) return found;
    }
    const probed = await sql.query<{ connector_id: string; waiting: boolean; id: number }>(
      `SELECT c.id AS connector_id, x.waiting, x.id FROM unnest($1::text[]) AS c(id) CROSS JOIN LATERAL (
         (SELECT true AS waiting, d.id FROM deliveries d WHERE d.connector_id = c.id AND d.lease_until IS NULL
          ORDER BY d.due_time DESC, d.id DESC LIMIT $2)
         UNION ALL
         (SELECT false, d.id FROM deliveries d WHERE d.connector_id = c.id AND d.lease_until IS NOT NULL
          ORDER BY d.lease_until DESC LIMIT $2)) x`,
      [conns, FEW],
    );
    const few: number[] = [];
    for (const c of conns) {
      const of = probed.filter((r) => r.connector_id === c);
      if (of.filter((r) => r.waiting).length < FEW && of.filter((r) => !r.waiting).length < FEW) {
        few.push(...of.map((r) => r.id).filter((id) => id < low));
        continue;
      }
      for (const candidates of [2 * limit + 32, 2 ** 31 - 1]) {
        const q = new Params();
        const [conn, below, max] = [q.add(c), q.add(low), q.add(candidates)];
        const qw = queuedWhere(f, q);
        const branch = (leased: boolean) =>
          `(SELECT d.id FROM deliveries d WHERE d.connector_id = ${conn} AND d.lease_until IS ${leased ? 'NOT ' : ''}NULL
            AND d.id < ${below}${qw} ORDER BY d.id DESC LIMIT ${max})`;
        const ids = (await sql.query<{ id: number }>(`${branch(false)} UNION ALL ${branch(true)}`, q.values))
          .map((r) => r.id)
          .sort((a, b) => b - a)
          .slice(0, candidates);
        const got = await queuedRows(ids, limit, now);
        if (got.length >= limit || ids.length < candidates) {
          rows.push(...got);
          break;
        }
      }
    }
    rows.push(...(await queuedRows(few, limit, now, f)));
    return newest([...page, ...rows], limit);
  }

  return {
    async record(outcomes) {
      if (outcomes.length === 0) return;
      // The statement an outcome batch writes what it holds with (held-outcomes.ts), holding only the log's rows.
      const held = new HeldOutcomes();
      held.record(outcomes);
      await held.write(sql);
    },
    async recordTest(o) {
      const [r] = await sql.query<{ id: number }>(
        `INSERT INTO delivery_log (id, connector_id, event_id, event_type, device_id, trigger, state, attempt_count,
           create_time, update_time, next_attempt_time, attempts)
         VALUES (nextval(pg_get_serial_sequence('deliveries', 'id')), $1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10::jsonb)
         RETURNING id`,
        [
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
        ],
      );
      return r!.id;
    },
    async list(filter, limit, now) {
      if (limit <= 0 || filter.connectorIds.length === 0) return [];
      const plan = statePlan(filter);
      const { text, params } = loggedSql(filter, plan, limit, now);
      let page =
        text === ''
          ? []
          : newest(
              (await sql.query<DeliveryLogRow>(text, params)).filter((r) => passes(r.state, plan)),
              limit,
            );
      if (plan.queued) page = await queued(filter, page, limit, now);
      return page.map(toLogRecord);
    },
    async get(connectorId, id, now) {
      const [found] = await sql.query<DeliveryLogRow>(`${logged('$2', true)} WHERE l.id = $1 AND l.connector_id = $3`, [
        id,
        now,
        connectorId,
      ]);
      if (found) return toLogRecord(found);
      const [queued] = await sql.query<DeliveryLogRow>(
        `${queuedColumns('$2')}, '[]'::jsonb AS attempts FROM deliveries d ${BODY} WHERE d.id = $1 AND d.connector_id = $3`,
        [id, now, connectorId],
      );
      return queued ? toLogRecord(queued) : null;
    },
    async deliveredEventIds(connectorId, eventIds) {
      if (eventIds.length === 0) return new Set();
      const rows = await sql.query<{ event_id: string }>(
        `SELECT DISTINCT event_id FROM delivery_log
         WHERE event_id = ANY($1::text[]) AND connector_id = $2 AND state = ${DELIVERED}`,
        [eventIds, connectorId],
      );
      return new Set(rows.map((r) => r.event_id));
    },
    async deleteBefore(createdBefore, limit) {
      // Along the primary key, up to the first delivery not yet old enough (ids follow create_time, migration 016).
      // A delivery still queued (a retry of a row older than the retention) stays until its queue row ends: its row
      // gone, its next outcome would start a new one without its attempts. Rows an outcome batch holds are left for
      // the next pass.
      return sql.run(
        `DELETE FROM delivery_log WHERE id IN (
           SELECT l.id FROM delivery_log l
           WHERE l.id < coalesce((SELECT id FROM delivery_log WHERE create_time >= $1 ORDER BY id LIMIT 1), ${MAX_ID})
             AND l.create_time < $1 AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = l.id)
           ORDER BY l.id LIMIT $2 FOR UPDATE OF l SKIP LOCKED)`,
        [createdBefore, limit],
      );
    },
    async connectorsOver(keep) {
      // Loose index scan: one seek per connector, then its first keep + 1 entries counted, no more.
      const rows = await sql.query<{ id: string }>(
        `WITH RECURSIVE c(id) AS (
           (SELECT connector_id FROM delivery_log ORDER BY connector_id LIMIT 1)
           UNION ALL
           SELECT (SELECT connector_id FROM delivery_log WHERE connector_id > c.id ORDER BY connector_id LIMIT 1)
           FROM c WHERE c.id IS NOT NULL
         )
         SELECT id FROM c WHERE id IS NOT NULL
           AND (SELECT count(*) FROM (SELECT 1 FROM delivery_log l WHERE l.connector_id = c.id LIMIT $1 + 1) x) > $1`,
        [keep],
      );
      return rows.map((r) => r.id);
    },
    async trimEdge(connectorId, keep) {
      // Its deliveries beyond the newest `keep` are its oldest (count - keep), each state's oldest merged.
      const [{ n }] = (await sql.query<{ n: number }>(
        'SELECT count(*) AS n FROM delivery_log WHERE connector_id = $1',
        [connectorId],
      )) as [{ n: number }];
      const over = n - Math.max(0, keep);
      if (over <= 0) return null;
      const [edge] = await sql.query<{ id: string }>(
        `SELECT y.id FROM unnest($2::smallint[]) AS t(state) CROSS JOIN LATERAL (
           SELECT id FROM delivery_log WHERE connector_id = $1 AND state = t.state ORDER BY id LIMIT $3) y
         ORDER BY y.id OFFSET $3 - 1 LIMIT 1`,
        [connectorId, LOGGED_STATES, over],
      );
      return edge === undefined ? null : Number(edge.id);
    },
    async trim(connectorId, upTo, limit) {
      // Oldest first (each state's oldest, merged), a delivery still queued staying (deleteBefore). Rows an outcome
      // batch holds are left for the next pass.
      return sql.run(
        `DELETE FROM delivery_log WHERE id IN (
           SELECT x.id FROM unnest($2::smallint[]) AS s(state) CROSS JOIN LATERAL (
             SELECT l.id FROM delivery_log l
             WHERE l.connector_id = $1 AND l.state = s.state AND l.id <= $3
               AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = l.id)
             ORDER BY l.id LIMIT $4 FOR UPDATE OF l SKIP LOCKED) x
           ORDER BY x.id LIMIT $4)`,
        [connectorId, LOGGED_STATES, upTo, limit],
      );
    },
    async deleteByConnector(connectorId, limit) {
      // Rows an outcome batch still recording an attempt of the deleted connector holds are skipped, never waited for
      // (their locks are taken in another order): the last piece, or the retention, takes them.
      return sql.run(
        'DELETE FROM delivery_log WHERE id IN (SELECT id FROM delivery_log WHERE connector_id = $1 LIMIT $2 FOR UPDATE SKIP LOCKED)',
        [connectorId, limit],
      );
    },
    async count() {
      const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM delivery_log');
      return r!.n;
    },
  };
}
