// The device list's serializer: each device's JSON built from the stored JSON columns, byte for byte what
// JSON.stringify(presentDevice(record)) gives, without parsing labels or building a record per device (a page
// of 100 spent most of its time there), and the page assembled as UTF-8 bytes.
import { presentReported } from '../domain/device-types.ts';
import { deviceName } from '../domain/names.ts';
import type { DeviceListingRow } from '../store/contract/store.ts';

/** Served `reported` texts per device type, keyed by the stored text; a pure function's memo, so bounded and shared. */
const reportedMemo = new Map<string, Map<string, string>>();
const REPORTED_MEMO_MAX = 256;

/** JSON.stringify(presentReported(type, JSON.parse(reportedJson))), memoised. */
export function presentReportedJson(type: string, reportedJson: string): string {
  let byText = reportedMemo.get(type);
  if (!byText) {
    if (reportedMemo.size >= 100) reportedMemo.clear(); // types are a fixed set; this only bounds stray rows
    byText = new Map();
    reportedMemo.set(type, byText);
  }
  let out = byText.get(reportedJson);
  if (out === undefined) {
    out = JSON.stringify(presentReported(type, JSON.parse(reportedJson) as Record<string, unknown>));
    if (byText.size >= REPORTED_MEMO_MAX) byText.clear();
    byText.set(reportedJson, out);
  }
  return out;
}

/** One device as JSON text, keys in contract order (§3.7). */
export function presentDeviceJson(d: DeviceListingRow): string {
  // The labels column holds JSON.stringify of the labels object, which is what re-parsing and re-stringifying
  // it would give again, so it is used verbatim.
  return `{"name":${JSON.stringify(deviceName(d.projectId, d.id))},"type":${JSON.stringify(d.type)},"productNumber":${JSON.stringify(d.productNumber)},"labels":${d.labelsJson},"reported":${presentReportedJson(d.type, d.reportedJson)}}`;
}

/** UTF-8 of rows the store hands out again from its page cache (frozen rows only; see store/sqlite/repos/device-query.ts). */
const encoded = new WeakMap<DeviceListingRow, Buffer>();

function deviceJsonBytes(d: DeviceListingRow): Buffer {
  if (!Object.isFrozen(d)) return Buffer.from(presentDeviceJson(d));
  let bytes = encoded.get(d);
  if (bytes === undefined) {
    bytes = Buffer.from(presentDeviceJson(d));
    encoded.set(d, bytes);
  }
  return bytes;
}

const OPEN = Buffer.from('{"devices":[');
const COMMA = 0x2c;

/**
 * The body of GET …/devices: the UTF-8 of JSON.stringify({ devices, nextPageToken }) and a newline (as every JSON
 * body of the API), assembled from per-device bytes (a string of 100 concatenated parts cost more to flatten and
 * measure than everything else in the request).
 */
export function devicePageBody(items: DeviceListingRow[], nextPageToken: string): Buffer {
  const first = items[0];
  const memo = first === undefined ? undefined : pageMemo.get(first);
  if (memo !== undefined && memo.token === nextPageToken && sameRows(memo.rows, items)) return memo.body;
  const body = assemblePage(items, nextPageToken);
  if (first !== undefined && items.every((r) => Object.isFrozen(r)))
    pageMemo.set(first, { rows: items.slice(), token: nextPageToken, body });
  return body;
}

/**
 * Bodies of pages made of the store's cached (frozen, so unchanging) rows, by their first row: a page polled while
 * its devices are quiet is served without copying its ~23 KB again (8 % of the busy main thread in the API bench's
 * profile). Kept while that row object lives, so a listing cache that drops its rows drops the body too.
 */
const pageMemo = new WeakMap<DeviceListingRow, { rows: DeviceListingRow[]; token: string; body: Buffer }>();

function sameRows(a: DeviceListingRow[], b: DeviceListingRow[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function assemblePage(items: DeviceListingRow[], nextPageToken: string): Buffer {
  const parts = items.map(deviceJsonBytes);
  const close = Buffer.from(`],"nextPageToken":${JSON.stringify(nextPageToken)}}\n`);
  let length = OPEN.length + Math.max(parts.length - 1, 0) + close.length;
  for (const p of parts) length += p.length;
  const out = Buffer.allocUnsafe(length);
  let at = OPEN.copy(out, 0);
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) out[at++] = COMMA;
    out.set(parts[i]!, at);
    at += parts[i]!.length;
  }
  out.set(close, at);
  return out;
}
