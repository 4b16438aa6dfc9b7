// Device list query on SQLite (contract §4.6): filters, order_by and keyset paging in one statement. Lists are
// bound as JSON (json_each) so the number of distinct statement shapes stays small for the statement cache.
// The default order (id) walks devices_by_project(project_id, id) and stops after `limit` rows.
import type Database from 'better-sqlite3';
import type { DeviceListingRow, DeviceQuery, DeviceSortValue } from '../../contract/store.ts';
import { readWithinPageBytes } from '../../../domain/paging.ts';
import { toJson, type SqliteDb } from '../db.ts';

/** Case-insensitive containment with JavaScript's Unicode lower-casing (SQLite's lower() is ASCII only). */
function registerFunctions(db: SqliteDb): void {
  db.raw.function('sc_icontains', { deterministic: true }, (haystack: unknown, needle: unknown) =>
    typeof haystack === 'string' && typeof needle === 'string' && haystack.toLowerCase().includes(needle) ? 1 : 0,
  );
}

/** A JSON path into `reported`; fields are plain identifiers (checked by the service), quoted anyway. */
const reportedPath = (eventType: string, fields: string[]) =>
  '$' + [eventType, ...fields].map((f) => `."${f}"`).join('');

/** The statement of one device query: `columns` of the devices row (as `d.` / `s.` prefixed lists), then sort_value. */
function buildQuery(
  q: DeviceQuery,
  columns: (alias: string) => string,
): { sql: string; params: Record<string, unknown> } {
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
    const sql = `SELECT ${columns('d')}, NULL AS sort_value FROM devices d WHERE ${where.join(' AND ')} ORDER BY d.id ${q.descending ? 'DESC' : 'ASC'} LIMIT @limit`;
    return { sql, params };
  }

  let expr: string;
  switch (q.sort.kind) {
    case 'type':
      expr = 'd.type';
      break;
    case 'productNumber':
      expr = 'd.product_number';
      break;
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
  const sql = `SELECT ${columns('s')}, s.sort_value FROM (SELECT d.*, ${expr} AS sort_value FROM devices d WHERE ${where.join(' AND ')}) s ${keyset}
    ORDER BY s.sort_value IS NULL, s.sort_value ${q.descending ? 'DESC' : 'ASC'}, s.id ASC LIMIT @limit`;
  return { sql, params };
}

export function createDeviceQueries(db: SqliteDb): {
  queryListing: (q: DeviceQuery) => Promise<DeviceListingRow[]>;
  /** Must be called by every write to the devices table (it drops the cached listing pages). */
  devicesChanged: () => void;
} {
  registerFunctions(db);
  const pages = new ListingCache();
  return { queryListing: createDeviceListingQuery(db, pages), devicesChanged: () => pages.clear() };
}

type ListingTuple = [string, string, string, string, string, string, DeviceSortValue];

/**
 * The device list's query: only the served columns, fetched as arrays (raw mode) and left unparsed. Building
 * a row object per device and parsing three JSON columns was most of the cost of a page of 100.
 */
function createDeviceListingQuery(db: SqliteDb, pages: ListingCache): (q: DeviceQuery) => Promise<DeviceListingRow[]> {
  // Raw-mode statements of their own, so the shared object-mode cache never hands one out.
  const statements = new Map<string, Database.Statement>();
  return async (q) => {
    const { sql, params } = buildQuery(
      q,
      (a) => `${a}.id, ${a}.project_id, ${a}.type, ${a}.product_number, ${a}.labels, ${a}.reported`,
    );
    const key = `${sql}\n${JSON.stringify(params)}\n${q.maxBytes}`;
    const hit = pages.get(key);
    if (hit) return hit;
    let stmt = statements.get(sql);
    if (!stmt) {
      stmt = db.raw.prepare(sql).raw(true);
      statements.set(sql, stmt);
    }
    const tuples = readWithinPageBytes(
      stmt.iterate(params) as Iterable<ListingTuple>,
      q.limit,
      q.maxBytes,
      (r) => r[4].length + r[5].length,
    );
    const rows = tuples.map(
      (r): DeviceListingRow =>
        Object.freeze({
          id: r[0],
          projectId: r[1],
          type: r[2],
          productNumber: r[3],
          labelsJson: r[4],
          reportedJson: r[5],
          sortValue: r[6],
        }),
    );
    // Inside a transaction the rows may be uncommitted: never cache those.
    if (!db.raw.inTransaction) pages.set(key, rows);
    return rows;
  };
}

/**
 * Listing pages by statement and parameters, dropped by any write to the devices table. A list polled while its
 * devices are quiet (dashboards) then costs no query; under a steady event stream (every event writes `reported`)
 * it mostly misses, which costs one map lookup. Bounded by rows and by the bytes of their JSON columns; over
 * either bound it starts afresh.
 */
class ListingCache {
  private readonly pages = new Map<string, readonly DeviceListingRow[]>();
  private rows = 0;
  private bytes = 0;
  static readonly MAX_ROWS = 20_000;
  static readonly MAX_BYTES = 32 * 1024 * 1024;

  /** A copy of the page (the rows themselves are frozen; a frozen array would make slice() 40 times slower). */
  get(key: string): DeviceListingRow[] | undefined {
    return this.pages.get(key)?.slice();
  }

  set(key: string, rows: readonly DeviceListingRow[]): void {
    let bytes = 0;
    for (const r of rows) bytes += r.labelsJson.length + r.reportedJson.length;
    if (this.rows + rows.length > ListingCache.MAX_ROWS || this.bytes + bytes > ListingCache.MAX_BYTES) this.clear();
    if (bytes > ListingCache.MAX_BYTES) return;
    this.pages.set(key, rows.slice());
    this.rows += rows.length;
    this.bytes += bytes;
  }

  clear(): void {
    if (this.pages.size === 0) return;
    this.pages.clear();
    this.rows = 0;
    this.bytes = 0;
  }
}
