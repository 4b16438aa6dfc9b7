// Event history on SQLite.
import type { EventRecord } from '../records.ts';
import type { EventRepo } from '../store.ts';
import { firstIdOfSecond } from '../../runtime/ids.ts';
import { toJson, type SqliteDb } from './db.ts';

interface Row { id: string; project_id: string; device_id: string; event_type: string; timestamp: number; create_time: number; body: string }
const toEvent = (r: Row): EventRecord => ({
  id: r.id, projectId: r.project_id, deviceId: r.device_id, eventType: r.event_type, timestamp: r.timestamp, createTime: r.create_time, body: r.body,
});

export function createEventRepo(db: SqliteDb): EventRepo {
  return {
    async insert(e) {
      db.run(
        'INSERT INTO events (id, project_id, device_id, event_type, timestamp, create_time, body) VALUES (?, ?, ?, ?, ?, ?, ?)',
        e.id, e.projectId, e.deviceId, e.eventType, e.timestamp, e.createTime, e.body,
      );
    },
    async listByDevice(q) {
      const [bt, bid] = q.before ?? [Number.MAX_SAFE_INTEGER, ''];
      const noCursor = q.before ? 0 : 1;
      return db
        .all<Row>(
          `SELECT * FROM events
           WHERE device_id = ? AND timestamp >= ? AND timestamp <= ?
             AND (? = 0 OR event_type IN (SELECT value FROM json_each(?)))
             AND (? = 1 OR timestamp < ? OR (timestamp = ? AND id < ?))
           ORDER BY timestamp DESC, id DESC LIMIT ?`,
          q.deviceId, q.startTime, q.endTime, q.eventTypes.length, toJson(q.eventTypes), noCursor, bt, bt, bid, q.limit,
        )
        .map(toEvent);
    },
    async latestPerType(projectId, eventTypes) {
      // One index seek (events_by_device_type_time) per device and type.
      return db
        .all<Row>(
          `SELECT e.* FROM devices d, json_each(?) t
           JOIN events e ON e.id = (SELECT x.id FROM events x WHERE x.device_id = d.id AND x.event_type = t.value
                                    ORDER BY x.timestamp DESC, x.id DESC LIMIT 1)
           WHERE d.project_id = ?
           ORDER BY d.id, e.timestamp, e.id`,
          toJson(eventTypes), projectId,
        )
        .map(toEvent);
    },
    async deleteStoredBefore(createTime, limit) {
      // A range of the primary key instead of an index on create_time, which cost every insert ~10 % of its
      // time: an event stored before the cutoff has an id from its second or earlier (ids.ts), so every
      // candidate lies below the first id of the second after the cutoff's; create_time settles that second.
      const upTo = firstIdOfSecond(Math.floor(createTime / 1_000_000) + 1);
      return db.run('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id < ? AND create_time < ? LIMIT ?)', upTo, createTime, limit).changes;
    },
  };
}
