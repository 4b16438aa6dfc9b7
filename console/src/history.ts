// Event history of a device for a time range: fetched page by page (bounded), turned into chart series,
// markers and CSV.
import { api, query } from './api.ts';

/** At most this many events are read for one range (20 pages of 1000). */
export const MAX_HISTORY_EVENTS = 20_000;

export interface HistoryResult {
  events: any[];
  truncated: boolean;
}

export async function fetchHistory(projectId: string, deviceId: string, from: Date, to: Date): Promise<HistoryResult> {
  const events: any[] = [];
  let pageToken = '';
  do {
    const page = await api<{ events: any[]; nextPageToken: string }>('GET', `/projects/${projectId}/devices/${deviceId}/events${query({
      startTime: from.toISOString(), endTime: to.toISOString(), pageSize: 1000, pageToken,
    })}`);
    events.push(...page.events);
    pageToken = page.nextPageToken;
  } while (pageToken !== '' && events.length < MAX_HISTORY_EVENTS);
  return { events, truncated: pageToken !== '' };
}

/** Numeric fields charted per event type: [label, unit, read]. */
export const NUMERIC: Record<string, [string, (d: any) => number][]> = {
  temperature: [['Temperature (°C)', (d) => d.value]],
  humidity: [['Relative humidity (%)', (d) => d.relativeHumidity], ['Temperature (°C)', (d) => d.temperature]],
  co2: [['CO2 (ppm)', (d) => d.ppm]],
  pressure: [['Pressure (hPa)', (d) => d.pascal / 100]],
  objectPresentCount: [['Object count', (d) => d.total]],
  touchCount: [['Touch count', (d) => d.total]],
};

/** Discrete event types drawn as markers. */
export const MARKER_TYPES = ['touch', 'motion', 'contact', 'objectPresent', 'deskOccupancy', 'waterPresent'];

const CSV_HEADER = ['timestamp', 'eventType', 'eventId', 'field', 'value'];

function csvCell(v: unknown): string {
  let s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  // A cell starting like a formula is not run by a spreadsheet that opens the file.
  if (/^[=+@\t\r]/.test(s)) s = `'${s}`;
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One row per field of each event (long format: every type has other fields), oldest first. */
export function eventsToCsv(events: any[]): string {
  const rows = [CSV_HEADER.join(',')];
  for (const e of [...events].reverse()) {
    const inner = e.eventType === 'labelsChanged' ? e.data : e.data?.[e.eventType];
    const fields = inner && typeof inner === 'object' ? Object.entries(inner).filter(([k]) => k !== 'updateTime' && k !== 'samples') : [];
    if (fields.length === 0) rows.push([e.timestamp, e.eventType, e.eventId, '', ''].map(csvCell).join(','));
    for (const [k, v] of fields) rows.push([e.timestamp, e.eventType, e.eventId, k, v].map(csvCell).join(','));
  }
  return `${rows.join('\r\n')}\r\n`;
}

export const RANGES: [string, string, number][] = [
  ['1h', 'Last hour', 3600], ['6h', 'Last 6 hours', 6 * 3600], ['24h', 'Last 24 hours', 86400], ['7d', 'Last 7 days', 7 * 86400], ['31d', 'Last 31 days', 31 * 86400],
];

/** The range a URL names: a preset (`range=24h`) or `from`/`to` (ISO). */
export function rangeFromParams(params: URLSearchParams, now = Date.now()): { from: Date; to: Date; key: string } {
  const key = params.get('range') ?? '24h';
  if (key === 'custom') {
    const from = new Date(params.get('from') ?? '');
    const to = new Date(params.get('to') ?? '');
    if (!Number.isNaN(from.getTime()) && !Number.isNaN(to.getTime()) && from < to) return { from, to, key };
  }
  const preset = RANGES.find((r) => r[0] === key) ?? RANGES[2]!;
  return { from: new Date(now - preset[2] * 1000), to: new Date(now), key: preset[0] };
}
