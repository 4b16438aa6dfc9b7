// Keyset paging (contract §1.5): the page token encodes the sort key of the last item returned, plus a
// fingerprint of the filters it was issued for.
import { badRequest } from './errors.ts';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;
/**
 * The most a page of stored JSON (devices with their labels and reported state, events) holds: past it the page
 * ends early, with a nextPageToken, however large pageSize is. A page of typical devices (~1-2 KB each) never gets
 * near it; a page of 1,000 devices of 800 KB each would otherwise be 800 MB of JSON built in one go.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

export interface PageRequest {
  pageSize: number;
  /** Sort key of the last item of the previous page, or null for the first page. */
  after: unknown[] | null;
}

export function encodePageToken(key: unknown[], filters: string = ''): string {
  return Buffer.from(JSON.stringify({ k: key, f: filters })).toString('base64url');
}

export function decodePageToken(token: string | undefined, filters: string = ''): unknown[] | null {
  if (token === undefined || token === '') return null;
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (!parsed || !Array.isArray(parsed.k) || (parsed.f ?? '') !== filters) throw new Error('bad');
    // Keys are only ever strings, numbers or null: anything else is a forged token.
    if (
      !parsed.k.every(
        (v: unknown) => v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)),
      )
    )
      throw new Error('bad');
    return parsed.k;
  } catch {
    throw badRequest('invalid pageToken');
  }
}

/** pageSize: absent, empty or 0 = default; larger than the maximum = clamped; negative or non-integer = 400. */
export function parsePageSize(raw: unknown): number {
  if (raw === undefined || raw === '' || raw === null) return DEFAULT_PAGE_SIZE;
  // Only plain decimal digits: Number() would also accept '1e3', '0x10' or ' 5'.
  if (typeof raw === 'string' && !/^\d+$/.test(raw)) throw badRequest('pageSize must be a non-negative integer');
  const n = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isInteger(n) || n < 0) throw badRequest('pageSize must be a non-negative integer');
  if (n === 0) return DEFAULT_PAGE_SIZE;
  return Math.min(n, MAX_PAGE_SIZE);
}

export function pageRequest(query: { pageSize?: unknown; pageToken?: string }, filters = ''): PageRequest {
  return { pageSize: parsePageSize(query.pageSize), after: decodePageToken(query.pageToken, filters) };
}

/** The id a page of a list keyed by one id starts after (a pageRequest's `after`); 400 for a token of another shape. */
export function afterId(after: unknown[] | null): string | null {
  if (after === null) return null;
  if (after.length !== 1 || typeof after[0] !== 'string') throw badRequest('invalid pageToken');
  return after[0];
}

/**
 * Given pageSize+1 rows, returns the page and the next token ("" when no further item exists). With `sizeOf`, the
 * page also ends before the row that would take it past MAX_PAGE_BYTES (it holds at least one row); the store read
 * the rows with the same bound (see readWithinPageBytes), so a row beyond the page is there whenever one exists.
 */
export function toPage<T>(
  rows: T[],
  req: PageRequest,
  keyOf: (row: T) => unknown[],
  filters = '',
  sizeOf?: (row: T) => number,
): { items: T[]; nextPageToken: string } {
  let n = Math.min(rows.length, req.pageSize);
  if (sizeOf !== undefined) {
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      bytes += sizeOf(rows[i]!);
      if (bytes > MAX_PAGE_BYTES && i > 0) n = i;
    }
  }
  if (n === rows.length) return { items: rows, nextPageToken: '' };
  const items = rows.slice(0, n);
  return { items, nextPageToken: encodePageToken(keyOf(items[items.length - 1]!), filters) };
}

/**
 * The store's side of MAX_PAGE_BYTES: takes rows from `rows` (a lazy statement iterator) until `limit`, or until
 * their sizes add up past `maxBytes` with at least two rows taken (the one past the bound tells toPage that more
 * exist). Memory stays near maxBytes plus one row however large the rows are.
 */
export function readWithinPageBytes<T>(
  rows: Iterable<T>,
  limit: number,
  maxBytes: number,
  sizeOf: (row: T) => number,
): T[] {
  const out: T[] = [];
  let bytes = 0;
  for (const row of rows) {
    out.push(row);
    bytes += sizeOf(row);
    if (out.length >= limit || (bytes > maxBytes && out.length >= 2)) break;
  }
  return out;
}
