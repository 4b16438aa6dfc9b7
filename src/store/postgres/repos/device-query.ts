// Device list query on PostgreSQL (contract §4.6): filters, order_by, keyset paging and the page's byte bound in
// one statement. No page cache: other processes write the same devices. Lists are bound as arrays and only the
// filters asked for appear in the text, so the statement shapes stay few (each is prepared once per connection)
// and no user value is ever part of the SQL text.
import type { DeviceListingRow, DeviceQuery, DeviceSort } from '../../contract/store.ts';
import type { Sql } from '../db.ts';

interface ListingRow {
  id: string;
  project_id: string;
  type: string;
  product_number: string;
  labels: string;
  reported: string;
  sort_num: number | null;
  sort_text: string | null;
}

type Bind = (value: unknown, type: string) => string;

/**
 * Case-insensitive containment, lower-cased beyond ASCII as JavaScript does: the ICU root collation's lower()
 * folds every script (a C-locale database's folds ASCII only). strpos takes the needle literally (% and _ too).
 */
const contains = (haystack: string, needle: string) => `strpos(lower(${haystack} COLLATE "und-x-icu"), ${needle}) > 0`;

/**
 * The sort value of a device as SQLite's json_extract gives it: a number (JSON booleans as 1 and 0) or a text
 * (strings, and objects and arrays as their JSON text); JSON null or a missing value is neither.
 */
function sortValue(sort: Exclude<DeviceSort, { kind: 'id' }>, bind: Bind): { from: string; num: string; text: string } {
  switch (sort.kind) {
    case 'type':
      return { from: '', num: 'NULL::float8', text: 'd.type' };
    case 'productNumber':
      return { from: '', num: 'NULL::float8', text: 'd.product_number' };
    case 'label':
      return { from: '', num: 'NULL::float8', text: `d.labels::jsonb ->> ${bind(sort.key, 'text')}` };
    case 'reported':
      // json, not jsonb: an object or array keeps the text it was stored with, as json_extract gives it.
      return {
        from: `CROSS JOIN LATERAL (SELECT d.reported::json #> ${bind([sort.eventType, ...sort.fields], 'text[]')} AS v) r`,
        num: `CASE json_typeof(r.v) WHEN 'number' THEN (r.v #>> '{}')::float8 WHEN 'boolean' THEN CASE r.v #>> '{}' WHEN 'true' THEN 1 ELSE 0 END END`,
        text: `CASE WHEN json_typeof(r.v) IN ('string', 'object', 'array') THEN r.v #>> '{}' END`,
      };
  }
}

/**
 * Where a sort value falls, as in SQLite: numbers before texts ascending (texts before numbers descending),
 * missing values last in both directions.
 */
const rankOf = (hasNum: string, hasText: string, descending: boolean) =>
  `CASE WHEN ${hasNum} THEN ${descending ? 1 : 0} WHEN ${hasText} THEN ${descending ? 0 : 1} ELSE 2 END`;

function buildQuery(q: DeviceQuery): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const bind: Bind = (value, type) => {
    params.push(value);
    return `$${params.length}::${type}`;
  };

  const where = [`d.project_id = ANY(${bind(q.projectIds, 'text[]')})`];
  if (q.deviceIds.length > 0) where.push(`d.id = ANY(${bind(q.deviceIds, 'text[]')})`);
  if (q.deviceTypes.length > 0) where.push(`d.type = ANY(${bind(q.deviceTypes, 'text[]')})`);
  if (q.productNumbers.length > 0) where.push(`d.product_number = ANY(${bind(q.productNumbers, 'text[]')})`);
  if (q.labelFilters.length > 0) {
    // No filter may fail: each needs its key present (label values are strings, never JSON null), with its value
    // unless that is null.
    const keys = bind(
      q.labelFilters.map((f) => f.key),
      'text[]',
    );
    const values = bind(
      q.labelFilters.map((f) => f.value),
      'text[]',
    );
    where.push(`NOT EXISTS (SELECT 1 FROM unnest(${keys}, ${values}) f(k, v)
      WHERE (d.labels::jsonb ->> f.k) IS NULL OR (f.v IS NOT NULL AND (d.labels::jsonb ->> f.k) <> f.v))`);
  }
  if (q.query !== null) {
    const needle = bind(q.query, 'text');
    where.push(`(${contains('d.id', needle)} OR ${contains('d.type', needle)}
      OR EXISTS (SELECT 1 FROM jsonb_each_text(d.labels::jsonb) l WHERE ${contains('l.key', needle)} OR ${contains('l.value', needle)}))`);
  }

  // Ids compare byte-wise (COLLATE "C"), as on SQLite, whatever the database's default collation.
  const dir = q.descending ? 'DESC' : 'ASC';
  const cmp = q.descending ? '<' : '>';
  let from = '';
  let sortNum = 'NULL::float8';
  let sortText = 'NULL::text';
  let order: string;
  let keyset = 'true';
  if (q.sort.kind === 'id') {
    order = `s.id COLLATE "C" ${dir}`;
    if (q.after) keyset = `s.id COLLATE "C" ${cmp} ${bind(q.after.id, 'text')}`;
  } else {
    ({ from, num: sortNum, text: sortText } = sortValue(q.sort, bind));
    const rank = rankOf('s.sort_num IS NOT NULL', 's.sort_text IS NOT NULL', q.descending);
    order = `${rank}, s.sort_num ${dir}, s.sort_text COLLATE "C" ${dir}, s.id COLLATE "C" ASC`;
    if (q.after) {
      const v = q.after.value;
      const afterRank = bind(
        typeof v === 'number' ? (q.descending ? 1 : 0) : typeof v === 'string' ? (q.descending ? 0 : 1) : 2,
        'int',
      );
      const afterNum = bind(typeof v === 'number' ? v : null, 'float8');
      const afterText = bind(typeof v === 'string' ? v : null, 'text');
      keyset = `(${rank} > ${afterRank} OR (${rank} = ${afterRank} AND (s.sort_num ${cmp} ${afterNum} OR s.sort_text COLLATE "C" ${cmp} ${afterText}
        OR (s.sort_num IS NOT DISTINCT FROM ${afterNum} AND s.sort_text IS NOT DISTINCT FROM ${afterText} AND s.id COLLATE "C" > ${bind(q.after.id, 'text')}))))`;
    }
  }

  // The byte bound (readWithinPageBytes) is kept by the server: a row is served while the rows before it add up
  // to at most maxBytes, and the first two always. The window streams under the LIMIT, and rows past the bound are
  // never sent. length() counts code points, never more than JavaScript's .length, so toPage (which measures
  // with .length) still finds the row past the bound whenever one exists.
  const size = 'length(s.labels) + length(s.reported)';
  const text = `SELECT id, project_id, type, product_number, labels, reported, sort_num, sort_text FROM (
      SELECT s.*, row_number() OVER w AS n, sum(${size}) OVER w - (${size}) AS bytes_before
      FROM (SELECT d.id, d.project_id, d.type, d.product_number, d.labels, d.reported, ${sortNum} AS sort_num, ${sortText} AS sort_text
            FROM devices d ${from} WHERE ${where.join(' AND ')}) s
      WHERE ${keyset}
      WINDOW w AS (ORDER BY ${order} ROWS UNBOUNDED PRECEDING)
      ORDER BY ${order}
      LIMIT ${bind(q.limit, 'bigint')}
    ) p
    WHERE p.n <= 2 OR p.bytes_before <= ${bind(Math.floor(Math.min(q.maxBytes, Number.MAX_SAFE_INTEGER)), 'bigint')}
    ORDER BY p.n`;
  return { text, params };
}

export function createDeviceListingQuery(sql: Sql): (q: DeviceQuery) => Promise<DeviceListingRow[]> {
  return async (q) => {
    const { text, params } = buildQuery(q);
    const rows = await sql.query<ListingRow>(text, params);
    return rows.map((r) => ({
      id: r.id,
      projectId: r.project_id,
      type: r.type,
      productNumber: r.product_number,
      labelsJson: r.labels,
      reportedJson: r.reported,
      sortValue: q.sort.kind === 'id' ? null : (r.sort_num ?? r.sort_text),
    }));
  };
}
