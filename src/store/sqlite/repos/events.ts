// Event history on SQLite.
import type { EventRepo } from '../../contract/store.ts';
import { readWithinPageBytes } from '../../../domain/paging.ts';
import { firstIdOfSecond } from '../../../runtime/ids.ts';
import { toJson, type SqliteDb } from '../db.ts';
import { toEvent, type EventRow } from '../../sql/rows.ts';

/** A device's history, newest first: a backward walk of its time index (migration 090), no sort. */
export const HISTORY_SQL = `SELECT * FROM events
  WHERE device_id = ? AND timestamp >= ? AND timestamp <= ?
    AND (? = 0 OR event_type IN (SELECT value FROM json_each(?)))
    AND (? = 1 OR timestamp < ? OR (timestamp = ? AND id < ?))
  ORDER BY timestamp DESC, id DESC LIMIT +?`;

export function createEventRepo(db: SqliteDb): EventRepo {
  return {
    async insert(e) {
      db.run(
        'INSERT INTO events (id, project_id, device_id, event_type, timestamp, create_time, body) VALUES (?, ?, ?, ?, ?, ?, ?)',
        e.id,
        e.projectId,
        e.deviceId,
        e.eventType,
        e.timestamp,
        e.createTime,
        e.body,
      );
    },
    async listByDevice(q) {
      const [bt, bid] = q.before ?? [Number.MAX_SAFE_INTEGER, ''];
      const noCursor = q.before ? 0 : 1;
      const rows = db
        .stmt(HISTORY_SQL)
        .iterate(
          q.deviceId,
          q.startTime,
          q.endTime,
          q.eventTypes.length,
          toJson(q.eventTypes),
          noCursor,
          bt,
          bt,
          bid,
          q.limit,
        ) as Iterable<EventRow>;
      return readWithinPageBytes(rows, q.limit, q.maxBytes ?? Infinity, (r) => r.body.length).map(toEvent);
    },
    async latestPerType(projectId, eventTypes, devices) {
      // The devices' latest_events point at the events (migration 080). When retention has deleted the pointed-at
      // event, the latest one still stored is older and was stored after it (so has a greater id): one walk of
      // the device's time index from that time back, which holds only events older than the deleted one.
      return db
        .all<EventRow>(
          `SELECT e.* FROM (SELECT id, latest_events FROM devices WHERE project_id = ? AND id > ? ORDER BY id LIMIT +?) d, json_each(d.latest_events) l
           JOIN events e ON e.id = coalesce(
             (SELECT id FROM events WHERE id = json_extract(l.value, '$[1]')),
             (SELECT x.id FROM events x
              WHERE x.device_id = d.id AND x.timestamp <= json_extract(l.value, '$[0]')
                AND x.event_type = l.key AND x.id > json_extract(l.value, '$[1]')
              ORDER BY x.timestamp DESC, x.id DESC LIMIT 1))
           WHERE l.key IN (SELECT value FROM json_each(?))
           ORDER BY d.id, e.timestamp, e.id`,
          projectId,
          devices?.after ?? '',
          devices === undefined ? -1 : devices.limit,
          toJson(eventTypes),
        )
        .map(toEvent);
    },
    async deleteByDevice(deviceId, limit) {
      // By rowid, which the device's time index holds: no look-up of each id in the primary key's index.
      return db.run(
        'DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE device_id = ? LIMIT +?)',
        deviceId,
        limit,
      ).changes;
    },
    async deleteStoredBefore(createTime, limit) {
      // A range of the primary key instead of an index on create_time, which cost every insert ~10 % of its
      // time: an event stored before the cutoff has an id from its second or earlier (ids.ts), so every
      // candidate lies below the first id of the second after the cutoff's; create_time settles that second.
      const upTo = firstIdOfSecond(Math.floor(createTime / 1_000_000) + 1);
      return db.run(
        'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id < ? AND create_time < ? LIMIT +?)',
        upTo,
        createTime,
        limit,
      ).changes;
    },
  };
}
