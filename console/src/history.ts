// Event history of a device for a time range: fetched page by page (bounded), turned into chart series and
// markers. Without a chosen range the page shows the device's recent events and fits the range to them.
import { api, query } from './api.ts';

/** At most this many events are read for one range (20 pages of 1000). */
export const MAX_HISTORY_EVENTS = 20_000;
/** "Fit to recent data": the newest page of events (at most this many) of the last RECENT_SECONDS. */
export const RECENT_EVENTS = 1000;
export const RECENT_SECONDS = 31 * 86400;

export interface HistoryResult {
  events: any[];
  truncated: boolean;
}

export async function fetchHistory(
  projectId: string,
  deviceId: string,
  from: Date,
  to: Date,
  maxEvents = MAX_HISTORY_EVENTS,
): Promise<HistoryResult> {
  const events: any[] = [];
  let pageToken = '';
  do {
    const page = await api<{ events: any[]; nextPageToken: string }>(
      'GET',
      `/projects/${projectId}/devices/${deviceId}/events${query({
        startTime: from.toISOString(),
        endTime: to.toISOString(),
        pageSize: Math.min(1000, maxEvents),
        pageToken,
      })}`,
    );
    events.push(...page.events);
    pageToken = page.nextPageToken;
  } while (pageToken !== '' && events.length < maxEvents);
  return { events, truncated: pageToken !== '' };
}

/**
 * The time range (unix seconds) that holds the given events (newest first), with a margin on both sides (5 % of
 * their span, at least 30 s) so the first and last points are not drawn on the chart's edges.
 */
export function fitRange(events: { timestamp: string }[]): { from: number; to: number } | null {
  if (events.length === 0) return null;
  const newest = Date.parse(events[0]!.timestamp) / 1000;
  const oldest = Date.parse(events[events.length - 1]!.timestamp) / 1000;
  const margin = Math.max(30, (newest - oldest) * 0.05);
  return { from: oldest - margin, to: newest + margin };
}

/** Numeric fields charted per event type: [label, unit, read]. */
export const NUMERIC: Record<string, [string, (d: any) => number][]> = {
  temperature: [['Temperature (°C)', (d) => d.value]],
  humidity: [
    ['Relative humidity (%)', (d) => d.relativeHumidity],
    ['Temperature (°C)', (d) => d.temperature],
  ],
  co2: [['CO2 (ppm)', (d) => d.ppm]],
  pressure: [['Pressure (hPa)', (d) => d.pascal / 100]],
  objectPresentCount: [['Object count', (d) => d.total]],
  touchCount: [['Touch count', (d) => d.total]],
};

/** Discrete event types drawn as markers. */
export const MARKER_TYPES = ['touch', 'motion', 'contact', 'objectPresent', 'deskOccupancy', 'waterPresent'];

export const RANGES: [string, string, number][] = [
  ['1h', 'Last hour', 3600],
  ['6h', 'Last 6 hours', 6 * 3600],
  ['24h', 'Last 24 hours', 86400],
  ['7d', 'Last 7 days', 7 * 86400],
  ['31d', 'Last 31 days', 31 * 86400],
];

/**
 * The range a URL names: a preset (`range=24h`), `from`/`to` (ISO), or, with no `range` (or `range=auto`), the
 * window searched for recent data (`auto`: the page then fits the range to the events found, fitRange).
 */
export function rangeFromParams(params: URLSearchParams, now = Date.now()): { from: Date; to: Date; key: string } {
  const key = params.get('range') ?? 'auto';
  if (key === 'custom') {
    const from = new Date(params.get('from') ?? '');
    const to = new Date(params.get('to') ?? '');
    if (!Number.isNaN(from.getTime()) && !Number.isNaN(to.getTime()) && from < to) return { from, to, key };
  }
  const preset = RANGES.find((r) => r[0] === key);
  if (!preset) return { from: new Date(now - RECENT_SECONDS * 1000), to: new Date(now), key: 'auto' };
  return { from: new Date(now - preset[2] * 1000), to: new Date(now), key: preset[0] };
}

/** A Date as a datetime-local input's value (the viewer's local time, to the minute). */
export function localInputValue(d: Date): string {
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}
