// How events are printed: one table line for people, CSV rows (RFC 4180) and NDJSON lines for `events export`.

export interface ApiEvent {
  eventId: string;
  targetName: string;
  eventType: string;
  data: unknown;
  timestamp: string;
}

/** The event's own data: `data[eventType]` (labelsChanged's data is not keyed by its type). */
export function innerData(event: ApiEvent): unknown {
  const data = event.data as Record<string, unknown> | null;
  if (data && typeof data === 'object' && event.eventType in data) return data[event.eventType];
  return data;
}

/** `value=21.5`, `state=PRESENT`, `added={…}`: the data fields without updateTime and sample lists. */
export function dataSummary(event: ApiEvent): string {
  const inner = innerData(event);
  if (inner === null || typeof inner !== 'object') return inner === null || inner === undefined ? '' : String(inner);
  return Object.entries(inner as Record<string, unknown>)
    .filter(([k, v]) => k !== 'updateTime' && k !== 'samples' && k !== 'cloudConnectors' && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' ');
}

export const CSV_HEADER = 'timestamp,eventId,device,eventType,data';

function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** One CSV row: the data column is the event's own data as compact JSON. */
export function csvRow(event: ApiEvent): string {
  const device = event.targetName.slice(event.targetName.lastIndexOf('/') + 1);
  return [event.timestamp, event.eventId, device, event.eventType, JSON.stringify(innerData(event))].map(csvField).join(',');
}
