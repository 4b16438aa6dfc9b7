// Device list query on SQLite (contract §4.6): filters, order_by and keyset paging in one statement. Lists are
// bound as JSON (json_each) so the number of distinct statement shapes stays small for the statement cache.
// The default order (id) walks devices_by_project(project_id, id) and stops after `limit` rows.
import type { DeviceRecord } from '../records.ts';
import type { DeviceQuery, DeviceQueryRow, DeviceSortValue } from '../store.ts';
import { toJson, type SqliteDb } from './db.ts';

/** Case-insensitive containment with JavaScript's Unicode lower-casing (SQLite's lower() is ASCII only). */
function registerFunctions(db: SqliteDb): void {
  db.raw.function('sc_icontains', { deterministic: true }, (haystack: unknown, needle: unknown) =>
    typeof haystack === 'string' && typeof needle === 'string' && haystack.toLowerCase().includes(needle) ? 1 : 0,
  );
}

/** A JSON path into `reported`; fields are plain identifiers (checked by the service), quoted anyway. */
const reportedPath = (eventType: string, fields: string[]) => '$' + [eventType, ...fields].map((f) => `."${f}"`).join('');

export function createDeviceQuery<Row>(db: SqliteDb, toDevice: (row: Row) => DeviceRecord): (q: DeviceQuery) => Promise<DeviceQueryRow[]> {
  registerFunctions(db);
  return async (q) => {
    const where: string[] = [];
    const params: Record<string, unknown> = { limit: q.limit };
    if (q.projectIds.length === 1) {
      where.push('d.project_id = @project');
      params.project = q.projectIds[0];
    } else {
      where.push('d.project_id IN (SELECT value FROM json_each(@projects))');
      params.projects = toJson(q.projectIds);
    }
    if (q.deviceIds.length > 0) {
      where.push('d.id IN (SELECT value FROM json_each(@deviceIds))');
      params.deviceIds = toJson(q.deviceIds);
    }
    if (q.deviceTypes.length > 0) {
      where.push('d.type IN (SELECT value FROM json_each(@deviceTypes))');
      params.deviceTypes = toJson(q.deviceTypes);
    }
    if (q.productNumbers.length > 0) {
      where.push('d.product_number IN (SELECT value FROM json_each(@productNumbers))');
      params.productNumbers = toJson(q.productNumbers);
    }
    if (q.labelFilters.length > 0) {
      // Every filter {k, v} must match a label: same key, and the same value unless v is null.
      where.push(`NOT EXISTS (SELECT 1 FROM json_each(@labelFilters) f WHERE NOT EXISTS (
        SELECT 1 FROM json_each(d.labels) l
        WHERE l.key = json_extract(f.value, '$.k') AND (json_extract(f.value, '$.v') IS NULL OR l.value = json_extract(f.value, '$.v'))))`);
      params.labelFilters = toJson(q.labelFilters.map((f) => ({ k: f.key, v: f.value })));
    }
    if (q.query !== null) {
      where.push(`(sc_icontains(d.id, @query) OR sc_icontains(d.type, @query)
        OR EXISTS (SELECT 1 FROM json_each(d.labels) l WHERE sc_icontains(l.key, @query) OR sc_icontains(l.value, @query)))`);
      params.query = q.query;
    }

    if (q.sort.kind === 'id') {
      if (q.after) {
        where.push(q.descending ? 'd.id < @afterId' : 'd.id > @afterId');
        params.afterId = q.after.id;
      }
      const sql = `SELECT d.* FROM devices d WHERE ${where.join(' AND ')} ORDER BY d.id ${q.descending ? 'DESC' : 'ASC'} LIMIT @limit`;
      return db.all<Row>(sql, params).map((r) => ({ device: toDevice(r), sortValue: null }));
    }

    let expr: string;
    switch (q.sort.kind) {
      case 'type': expr = 'd.type'; break;
      case 'productNumber': expr = 'd.product_number'; break;
      case 'label':
        expr = '(SELECT l.value FROM json_each(d.labels) l WHERE l.key = @sortKey)';
        params.sortKey = q.sort.key;
        break;
      case 'reported':
        expr = 'json_extract(d.reported, @sortPath)';
        params.sortPath = reportedPath(q.sort.eventType, q.sort.fields);
        break;
    }
    // Missing values (NULL) sort last in both directions; ties break on the id, ascending.
    const cmp = q.descending ? '<' : '>';
    let keyset = '';
    if (q.after) {
      params.afterId = q.after.id;
      if (q.after.value === null) {
        keyset = 'WHERE s.sort_value IS NULL AND s.id > @afterId';
      } else {
        keyset = `WHERE s.sort_value IS NULL OR s.sort_value ${cmp} @afterValue OR (s.sort_value = @afterValue AND s.id > @afterId)`;
        params.afterValue = q.after.value;
      }
    }
    const sql = `SELECT * FROM (SELECT d.*, ${expr} AS sort_value FROM devices d WHERE ${where.join(' AND ')}) s ${keyset}
      ORDER BY s.sort_value IS NULL, s.sort_value ${q.descending ? 'DESC' : 'ASC'}, s.id ASC LIMIT @limit`;
    return db.all<Row & { sort_value: DeviceSortValue }>(sql, params).map((r) => ({ device: toDevice(r), sortValue: r.sort_value }));
  };
}
