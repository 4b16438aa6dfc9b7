// Devices on PostgreSQL. No read cache: other processes write the same devices (every event writes `reported`).
// Inside a transaction a device is read with a row lock: an event's read of `reported` and `latest_events` and its
// write of them must not interleave with another transaction's (read committed would lose one of the updates).
// A group-commit batch (group-commit.ts) locks the devices its events name first (lockDevices); it never waits
// for another device it reads: it skips a held row and throws BusyRow.
import type { DeviceRecord, LatestEvent } from '../../contract/records.ts';
import type { DeviceRepo } from '../../contract/store.ts';
import type { Sql } from '../db.ts';
import { createDeviceListingQuery } from './device-query.ts';
import type { DeviceVersion } from '../batching/device-versions.ts';
import { BusyRow } from '../batching/group-commit.ts';

// `labels` always holds JSON.stringify of the labels object: the device list serves that text verbatim.
interface Row {
  id: string;
  project_id: string;
  type: string;
  product_number: string;
  labels: string;
  reported: string;
  latest_events: string;
  emulated: boolean;
  create_time: number;
  update_time: number;
}
const toDevice = (r: Row): DeviceRecord => ({
  id: r.id,
  projectId: r.project_id,
  type: r.type,
  productNumber: r.product_number,
  labels: JSON.parse(r.labels) as Record<string, string>,
  reported: JSON.parse(r.reported) as Record<string, unknown>,
  latestEvents: JSON.parse(r.latest_events) as Record<string, LatestEvent>,
  emulated: r.emulated,
  createTime: r.create_time,
  updateTime: r.update_time,
});

/** How get locks the row it reads: not at all (outside a transaction), waiting for it, or not waiting (a batch). */
export type RowLocking = 'none' | 'wait' | 'skip';

const GET = 'SELECT * FROM devices WHERE id = $1';
const LOCK = ' FOR NO KEY UPDATE';

/**
 * Reads and locks the devices of a group-commit batch (write-behind.ts) in one statement, its first, waiting for
 * rows other transactions hold; with each row's version (device-versions.ts). Every batch takes its rows in id
 * order (the rows are locked as the sort returns them) while holding none, so batches of several processes wait
 * for each other but never deadlock.
 */
export async function lockDevices(sql: Sql, ids: readonly string[]): Promise<DeviceVersion[]> {
  const rows = await sql.query<Row & { row_xmin: string }>(
    `SELECT *, xmin::text AS row_xmin FROM devices WHERE id = ANY($1::text[]) ORDER BY id COLLATE "C"${LOCK}`,
    [ids],
  );
  return rows.map((r) => ({ device: toDevice(r), xmin: r.row_xmin }));
}

export function createDeviceRepo(sql: Sql, locking: RowLocking): DeviceRepo {
  const getDevice = locking === 'none' ? GET : locking === 'wait' ? GET + LOCK : `${GET}${LOCK} SKIP LOCKED`;
  return {
    async create(d) {
      await sql.run(
        `INSERT INTO devices (id, project_id, type, product_number, labels, reported, latest_events, emulated, create_time, update_time)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          d.id,
          d.projectId,
          d.type,
          d.productNumber,
          JSON.stringify(d.labels),
          JSON.stringify(d.reported),
          JSON.stringify(d.latestEvents),
          d.emulated,
          d.createTime,
          d.updateTime,
        ],
      );
    },
    async get(id) {
      const [r] = await sql.query<Row>(getDevice, [id]);
      if (r) return toDevice(r);
      if (locking === 'skip' && (await sql.query('SELECT 1 FROM devices WHERE id = $1', [id])).length > 0)
        throw new BusyRow();
      return null;
    },
    async updateReported(id, reported, latestEvents, updateTime) {
      await sql.run('UPDATE devices SET reported = $1, latest_events = $2, update_time = $3 WHERE id = $4', [
        JSON.stringify(reported),
        JSON.stringify(latestEvents),
        updateTime,
        id,
      ]);
    },
    async updateLabels(id, labels, updateTime) {
      await sql.run('UPDATE devices SET labels = $1, update_time = $2 WHERE id = $3', [
        JSON.stringify(labels),
        updateTime,
        id,
      ]);
    },
    async move(id, projectId, updateTime) {
      // Its history is read by device id: it moves with the device, and its rows are not touched (records.ts).
      await sql.run('UPDATE devices SET project_id = $1, update_time = $2 WHERE id = $3', [projectId, updateTime, id]);
    },
    async delete(id) {
      await sql.run('WITH e AS (DELETE FROM events WHERE device_id = $1) DELETE FROM devices WHERE id = $1', [id]);
    },
    async listByProject(projectId, range) {
      // Ids compare byte-wise (COLLATE "C"), as on SQLite, whatever the database's default collation.
      const rows = await sql.query<Row>(
        'SELECT * FROM devices WHERE project_id = $1 AND id COLLATE "C" > $2 ORDER BY id COLLATE "C" LIMIT $3',
        [projectId, range.after ?? '', range.limit],
      );
      return rows.map(toDevice);
    },
    async listEmulated(range) {
      // Big labels and reported state are never read: a heartbeat scan walks every emulated device.
      const rows = await sql.query<Pick<Row, 'id' | 'type' | 'latest_events'>>(
        'SELECT id, type, latest_events FROM devices WHERE emulated AND id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2',
        [range.after ?? '', range.limit],
      );
      return rows.map((r) => ({
        id: r.id,
        type: r.type,
        latestEvents: JSON.parse(r.latest_events) as Record<string, LatestEvent>,
      }));
    },
    queryListing: createDeviceListingQuery(sql),
  };
}
