// Event history on PostgreSQL. Ids compare byte-wise (COLLATE "C"), as on SQLite, whatever the database's
// default collation.
import type { EventHistoryQuery, EventRepo } from '../../contract/store.ts';
import { firstIdOfSecond } from '../../../runtime/ids.ts';
import type { Sql } from '../db.ts';
import { toEvent, type EventRow } from '../../sql/rows.ts';

const NEWEST_FIRST = 'e.timestamp DESC, e.id COLLATE "C" DESC';

/**
 * A device's history, newest first: events_by_device_time walked back in time. The byte bound
 * (readWithinPageBytes) is kept by the server: a row is served while the bodies before it add up to at most the
 * bound, and the first two always; the window streams under the LIMIT, and rows past the bound are never sent.
 * length() counts code points, never more than JavaScript's .length, which toPage measures with.
 * The type filter and the cursor appear only when asked for: four statement shapes.
 */
function historyQuery(q: EventHistoryQuery): { text: string; params: unknown[] } {
  const params: unknown[] = [
    q.deviceId,
    q.startTime,
    q.endTime,
    q.limit,
    Math.floor(Math.min(q.maxBytes ?? Infinity, Number.MAX_SAFE_INTEGER)),
  ];
  let filters = '';
  if (q.eventTypes.length > 0) {
    params.push(q.eventTypes);
    filters += ` AND e.event_type = ANY($${params.length}::text[])`;
  }
  if (q.before) {
    params.push(q.before[0], q.before[1]);
    const [t, id] = [`$${params.length - 1}::bigint`, `$${params.length}::text`];
    filters += ` AND (e.timestamp < ${t} OR (e.timestamp = ${t} AND e.id COLLATE "C" < ${id}))`;
  }
  const text = `SELECT id, project_id, device_id, event_type, timestamp, create_time, body FROM (
      SELECT e.*, row_number() OVER w AS n, sum(length(e.body)) OVER w - length(e.body) AS bytes_before
      FROM events e
      WHERE e.device_id = $1 AND e.timestamp >= $2 AND e.timestamp <= $3${filters}
      WINDOW w AS (ORDER BY ${NEWEST_FIRST} ROWS UNBOUNDED PRECEDING)
      ORDER BY ${NEWEST_FIRST}
      LIMIT $4
    ) p
    WHERE p.n <= 2 OR p.bytes_before <= $5
    ORDER BY p.n`;
  return { text, params };
}

export function createEventRepo(sql: Sql): EventRepo {
  return {
    async insert(e) {
      await sql.run(
        'INSERT INTO events (id, project_id, device_id, event_type, timestamp, create_time, body) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [e.id, e.projectId, e.deviceId, e.eventType, e.timestamp, e.createTime, e.body],
      );
    },
    async listByDevice(q) {
      const { text, params } = historyQuery(q);
      return (await sql.query<EventRow>(text, params)).map(toEvent);
    },
    async latestPerType(projectId, eventTypes, devices) {
      // The devices' latest_events point at the events. When retention has deleted the pointed-at event, the
      // latest one still stored is older and was stored after it (so has a greater id): one walk of the device's
      // time index from that time back. UNION ALL under LIMIT 1 runs that walk only when the first branch is empty.
      const rows = await sql.query<EventRow>(
        `SELECT e.* FROM (
           SELECT id, latest_events FROM devices WHERE project_id = $1 AND id COLLATE "C" > $2 ORDER BY id COLLATE "C" LIMIT $3
         ) d
         CROSS JOIN LATERAL jsonb_each(d.latest_events::jsonb) l
         CROSS JOIN LATERAL (
           (SELECT * FROM events WHERE id = l.value ->> 1)
           UNION ALL
           (SELECT * FROM events x
            WHERE x.device_id = d.id AND x.event_type = l.key AND x.timestamp <= (l.value ->> 0)::bigint
              AND x.id COLLATE "C" > l.value ->> 1
            ORDER BY x.timestamp DESC, x.id COLLATE "C" DESC LIMIT 1)
           LIMIT 1
         ) e
         WHERE l.key = ANY($4::text[])
         ORDER BY d.id COLLATE "C", e.timestamp, e.id COLLATE "C"`,
        [projectId, devices?.after ?? '', devices?.limit ?? null, eventTypes],
      );
      return rows.map(toEvent);
    },
    async deleteByDevice(deviceId, limit) {
      // By the rows' addresses, as a piece of a queue is deleted (deliveries.ts).
      return sql.run(
        'DELETE FROM events WHERE ctid = ANY(ARRAY(SELECT ctid FROM events WHERE device_id = $1 LIMIT $2))',
        [deviceId, limit],
      );
    },
    async deleteStoredBefore(createTime, limit) {
      // As on SQLite: an event stored before the cutoff has an id from its second or earlier (ids.ts), so every
      // candidate lies below the first id of the second after the cutoff's; create_time settles that second.
      const upTo = firstIdOfSecond(Math.floor(createTime / 1_000_000) + 1);
      return sql.run(
        'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id COLLATE "C" < $1 AND create_time < $2 LIMIT $3)',
        [upTo, createTime, limit],
      );
    },
  };
}
