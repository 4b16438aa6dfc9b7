// How values are shown: times in the viewer's locale, event data as a short reading.

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function relativeTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  if (s < 0) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** "21.5 °C", "PRESENT", "54 %" … for the inner data of one event type. */
export function readingText(type: string, data: any): string {
  if (data === null || data === undefined) return '—';
  switch (type) {
    case 'temperature':
      return `${data.value} °C`;
    case 'humidity':
      return `${data.relativeHumidity} % RH, ${data.temperature} °C`;
    case 'co2':
      return `${data.ppm} ppm`;
    case 'pressure':
      return `${data.pascal} Pa`;
    case 'objectPresentCount':
    case 'touchCount':
      return `${data.total}`;
    case 'batteryStatus':
      return `${data.percentage} %`;
    case 'networkStatus':
      return `signal ${data.signalStrength} %`;
    case 'cellularStatus':
      return `signal ${data.signalStrength} %`;
    case 'connectionStatus':
      return data.connection;
    case 'ethernetStatus':
      return data.ipAddress || data.macAddress;
    case 'touch':
      return 'touched';
    default:
      return data.state ?? JSON.stringify(data);
  }
}

/** A label as the device list's chips show it: `key` when its value is empty, else `key=value`. */
export const labelText = (key: string, value: string): string => (value === '' ? key : `${key}=${value}`);

/** labelsChanged data (`{added, modified, removed}`) in words: "added name=Room 4; changed floor=3; removed room". */
export function labelsChangedText(data: any): string {
  const parts: string[] = [];
  const pairs = (o: unknown) =>
    Object.entries((o ?? {}) as Record<string, string>)
      .map(([k, v]) => labelText(k, String(v)))
      .join(', ');
  if (Object.keys(data?.added ?? {}).length > 0) parts.push(`added ${pairs(data.added)}`);
  if (Object.keys(data?.modified ?? {}).length > 0) parts.push(`changed ${pairs(data.modified)}`);
  if (Array.isArray(data?.removed) && data.removed.length > 0) parts.push(`removed ${data.removed.join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : 'no change';
}

/** One event's data in words (the live list and the history table): a reading, or a label change. */
export function eventText(event: { eventType: string; data: any }): string {
  return event.eventType === 'labelsChanged'
    ? labelsChangedText(event.data)
    : readingText(event.eventType, event.data?.[event.eventType]);
}

/** The time of a reported value (every inner data has updateTime). */
export function latestUpdate(reported: Record<string, any>): string | null {
  let latest: string | null = null;
  for (const v of Object.values(reported ?? {})) {
    if (v && typeof v.updateTime === 'string' && (latest === null || v.updateTime > latest)) latest = v.updateTime;
  }
  return latest;
}

export const DEVICE_TYPE_LABELS: Record<string, string> = {
  temperature: 'Temperature',
  proximity: 'Proximity',
  touch: 'Touch',
  humidity: 'Humidity',
  proximityCounter: 'Proximity counter',
  touchCounter: 'Touch counter',
  waterDetector: 'Water detector',
  co2: 'CO2',
  motion: 'Motion',
  deskOccupancy: 'Desk occupancy',
  contact: 'Contact',
  ccon: 'Cloud connector',
};

export const DEVICE_TYPES = Object.keys(DEVICE_TYPE_LABELS);

/** Every event type (contract §5.2, ping excluded), for filters. */
export const EVENT_TYPES = [
  'touch',
  'temperature',
  'objectPresent',
  'humidity',
  'objectPresentCount',
  'touchCount',
  'waterPresent',
  'networkStatus',
  'batteryStatus',
  'labelsChanged',
  'connectionStatus',
  'ethernetStatus',
  'cellularStatus',
  'co2',
  'pressure',
  'motion',
  'deskOccupancy',
  'contact',
  'probeWireStatus',
];

/** A time for a table cell: the time of day when it is today, else the date without the year too. */
export function shortTime(iso: string | null | undefined, now = new Date()): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const today = d.toDateString() === now.toDateString();
  return today
    ? d.toLocaleTimeString(undefined, { timeStyle: 'medium' })
    : d.toLocaleString(undefined, {
        month: 'short',
        day: 'numeric',
        year: d.getFullYear() === now.getFullYear() ? undefined : 'numeric',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
      });
}

/** A length of time in words: "2 h 30 min", "45 min", "3 d 4 h". */
export function spanText(ms: number): string {
  const min = Math.round(ms / 60_000);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d} d` : `${d} d ${h % 24} h`;
}

/** How far ahead a time is: "in 8 s", "in 6 min", "in 2 h"; "due now" once it has passed. */
export function untilTime(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const s = Math.round((new Date(iso).getTime() - now) / 1000);
  if (Number.isNaN(s)) return iso ?? '—';
  if (s <= 0) return 'due now';
  if (s < 60) return `in ${s} s`;
  if (s < 3600) return `in ${Math.round(s / 60)} min`;
  return `in ${Math.round(s / 360) / 10} h`;
}
