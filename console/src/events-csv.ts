// The events CSV of the device page's Export CSV: the same shape, byte for byte, as `sensorcloud events export
// --format csv` (src/cli/event-format.ts; the console builds on its own, so the code is repeated there and
// test/cli/export.test.ts holds both to the same output). The shape is documented in docs/console.md and
// docs/cli.md:
//
//   timestamp,device,eventType,eventId,field,value
//
// newest first (the API's order), one row per field of each event's own data (`data[eventType]`; labelsChanged:
// its data), so every cell holds one value a spreadsheet can sort, filter and chart: nested objects become
// `added.name`, lists `available[0]`. `updateTime` (the event's timestamp again) and `samples` are left out
// (NDJSON has them). An event without fields has one row with field and value empty. Lines end with \n; a cell
// with a comma, a quote or a line break is quoted (RFC 4180); a cell that a spreadsheet would run as a formula
// (starting with = + - @, a tab or CR, and not a number) is prefixed with '.

export const EVENTS_CSV_HEADER = 'timestamp,device,eventType,eventId,field,value';

/** A CSV cell: formula-like text disarmed, quoted when it holds a separator, a quote or a line break. */
function csvCell(value: string): string {
  const cell = /^[=+\-@\t\r]/.test(value) && !/^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell;
}

/** [field path, value] of every scalar in `value`, depth first, in the data's own key order. */
function flatten(value: unknown, path: string, out: [string, string][]): void {
  if (Array.isArray(value)) value.forEach((item, i) => flatten(item, `${path}[${i}]`, out));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) flatten(v, path === '' ? k : `${path}.${k}`, out);
  } else out.push([path, value === null || value === undefined ? '' : String(value)]);
}

/** The CSV lines (each ending with \n) of one event as the API returns it. */
export function eventCsvRows(event: {
  eventId: string;
  targetName: string;
  eventType: string;
  data: unknown;
  timestamp: string;
}): string {
  const data = event.data as Record<string, unknown> | null;
  const inner = event.eventType === 'labelsChanged' ? data : data?.[event.eventType];
  const fields: [string, string][] = [];
  if (inner !== null && typeof inner === 'object' && !Array.isArray(inner)) {
    for (const [k, v] of Object.entries(inner)) if (k !== 'updateTime' && k !== 'samples') flatten(v, k, fields);
  } else if (inner !== undefined && inner !== null) flatten(inner, 'value', fields);
  if (fields.length === 0) fields.push(['', '']);
  const device = event.targetName.slice(event.targetName.lastIndexOf('/') + 1);
  return fields
    .map(
      ([field, value]) =>
        `${[event.timestamp, device, event.eventType, event.eventId, field, value].map(csvCell).join(',')}\n`,
    )
    .join('');
}

/** The whole file for events in the API's order (newest first). */
export function eventsToCsv(events: Parameters<typeof eventCsvRows>[0][]): string {
  return `${EVENTS_CSV_HEADER}\n${events.map(eventCsvRows).join('')}`;
}
