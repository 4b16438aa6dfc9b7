// Devices on SQLite. Every write calls devicesChanged() (the device list's page cache, device-query.ts).
import type { DeviceRecord } from '../../contract/records.ts';
import type { DeviceRepo } from '../../contract/store.ts';
import { fromJson, toJson, type SqliteDb } from '../db.ts';
import { createDeviceQueries } from './device-query.ts';

// `labels` always holds JSON.stringify of the labels object: the device list serves that text verbatim.
interface Row {
  id: string;
  project_id: string;
  type: string;
  product_number: string;
  labels: string;
  reported: string;
  latest_events: string;
  emulated: number;
  create_time: number;
  update_time: number;
}
export const toDevice = (r: Row): DeviceRecord => {
  const device: DeviceRecord = {
    id: r.id,
    projectId: r.project_id,
    type: r.type,
    productNumber: r.product_number,
    labels: fromJson(r.labels),
    reported: fromJson(r.reported),
    latestEvents: fromJson(r.latest_events),
    emulated: r.emulated === 1,
    createTime: r.create_time,
    updateTime: r.update_time,
  };
  rowBytes.set(device, r.labels.length + r.reported.length + r.latest_events.length);
  return device;
};

/** The stored size of a device read from its row (its JSON columns' length), for the read cache's bound. */
const rowBytes = new WeakMap<DeviceRecord, number>();

/** The device cache holds at most this many bytes of rows (as read; write-through updates keep the size read). */
export const DEVICE_CACHE_MAX_BYTES = 64 * 1024 * 1024;

export function createDeviceRepo(db: SqliteDb): DeviceRepo {
  const { queryListing, devicesChanged } = createDeviceQueries(db);
  // Every publish reads its device and writes its `reported` back: the read (a query and three JSON parses)
  // is served from this cache, which the write updates in place (write-through).
  const byId = db.caches.create<DeviceRecord | null>({
    weigh: (d) => (d ? (rowBytes.get(d) ?? 0) : 0),
    maxWeight: DEVICE_CACHE_MAX_BYTES,
  });
  return {
    async create(d) {
      devicesChanged();
      byId.delete(d.id);
      db.run(
        `INSERT INTO devices (id, project_id, type, product_number, labels, reported, latest_events, emulated, create_time, update_time)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        d.id,
        d.projectId,
        d.type,
        d.productNumber,
        toJson(d.labels),
        toJson(d.reported),
        toJson(d.latestEvents),
        d.emulated ? 1 : 0,
        d.createTime,
        d.updateTime,
      );
    },
    async get(id) {
      return byId.get(id, () => {
        const r = db.get<Row>('SELECT * FROM devices WHERE id = ?', id);
        return r ? toDevice(r) : null;
      });
    },
    async updateReported(id, reported, latestEvents, updateTime) {
      devicesChanged();
      const changes = db.run(
        'UPDATE devices SET reported = ?, latest_events = ?, update_time = ? WHERE id = ?',
        toJson(reported),
        toJson(latestEvents),
        updateTime,
        id,
      ).changes;
      if (changes > 0) {
        byId.update(id, (d) => {
          if (!d) return d;
          const next = { ...d, reported: { ...reported }, latestEvents: { ...latestEvents }, updateTime };
          rowBytes.set(next, rowBytes.get(d) ?? 0);
          return next;
        });
      } else byId.delete(id);
    },
    async updateLabels(id, labels, updateTime) {
      devicesChanged();
      byId.delete(id);
      db.run('UPDATE devices SET labels = ?, update_time = ? WHERE id = ?', toJson(labels), updateTime, id);
    },
    async move(id, projectId, updateTime) {
      devicesChanged();
      byId.delete(id);
      // Its history is read by device id: it moves with the device, and its rows are not touched (records.ts).
      db.run('UPDATE devices SET project_id = ?, update_time = ? WHERE id = ?', projectId, updateTime, id);
    },
    async delete(id) {
      devicesChanged();
      byId.delete(id);
      db.run('DELETE FROM events WHERE device_id = ?', id);
      db.run('DELETE FROM devices WHERE id = ?', id);
    },
    async listByProject(projectId, range) {
      return db
        .all<Row>(
          'SELECT * FROM devices WHERE project_id = ? AND id > ? ORDER BY id LIMIT +?',
          projectId,
          range.after ?? '',
          range.limit,
        )
        .map(toDevice);
    },
    async listEmulated(range) {
      // Columns from the start of the row only (migration 100): big labels and reported state are never read.
      return db
        .all<Pick<Row, 'id' | 'type' | 'latest_events'>>(
          'SELECT id, type, latest_events FROM devices WHERE emulated = 1 AND id > ? ORDER BY id LIMIT +?',
          range.after ?? '',
          range.limit,
        )
        .map((r) => ({ id: r.id, type: r.type, latestEvents: fromJson(r.latest_events) }));
    },
    queryListing,
  };
}
