// The emulator's publish forms: for each of the 18 publishable event types (contract §5.2-5.3,
// src/domain/event-data.ts) its fields, ranges and sensible defaults, and which device types emit it (§5.5).

export type FieldSpec =
  | {
      key: string;
      label: string;
      kind: 'number';
      min?: number;
      max?: number;
      step?: number;
      int?: boolean;
      default: number;
      unit?: string;
    }
  | { key: string; label: string; kind: 'enum'; options: readonly string[]; default: string }
  | { key: string; label: string; kind: 'multi'; options: readonly string[]; default: readonly string[] }
  | { key: string; label: string; kind: 'text'; default: string; placeholder?: string; required?: boolean }
  | { key: string; label: string; kind: 'list'; default: string; hint: string };

const PERCENT = { min: 0, max: 100, step: 1, int: true } as const;
const CONNECTIONS = ['SDS', 'ETHERNET', 'CELLULAR', 'OFFLINE'] as const;

export const EVENT_FORMS: Record<string, FieldSpec[]> = {
  touch: [],
  temperature: [
    { key: 'value', label: 'Temperature', kind: 'number', min: -273.15, step: 0.1, default: 21.5, unit: '°C' },
  ],
  probeWireStatus: [
    {
      key: 'state',
      label: 'Probe wiring',
      kind: 'enum',
      options: [
        'INVALID_WIRE_CONFIGURATION',
        'INVALID_COEFFICIENT_CONFIGURATION',
        'TWO_WIRE',
        'THREE_WIRE',
        'FOUR_WIRE',
      ],
      default: 'TWO_WIRE',
    },
  ],
  objectPresent: [
    { key: 'state', label: 'Object', kind: 'enum', options: ['PRESENT', 'NOT_PRESENT'], default: 'PRESENT' },
  ],
  humidity: [
    {
      key: 'relativeHumidity',
      label: 'Relative humidity',
      kind: 'number',
      min: 0,
      max: 100,
      step: 0.1,
      default: 45,
      unit: '%',
    },
    { key: 'temperature', label: 'Temperature', kind: 'number', min: -273.15, step: 0.1, default: 22, unit: '°C' },
  ],
  objectPresentCount: [{ key: 'total', label: 'Total count', kind: 'number', min: 0, step: 1, int: true, default: 1 }],
  touchCount: [{ key: 'total', label: 'Total count', kind: 'number', min: 0, step: 1, int: true, default: 1 }],
  waterPresent: [
    { key: 'state', label: 'Water', kind: 'enum', options: ['PRESENT', 'NOT_PRESENT'], default: 'NOT_PRESENT' },
  ],
  networkStatus: [
    { key: 'signalStrength', label: 'Signal strength', kind: 'number', ...PERCENT, default: 99, unit: '%' },
    { key: 'rssi', label: 'RSSI', kind: 'number', step: 1, int: true, default: -60, unit: 'dBm' },
    {
      key: 'transmissionMode',
      label: 'Transmission mode',
      kind: 'enum',
      options: ['LOW_POWER_STANDARD_MODE', 'HIGH_POWER_BOOST_MODE'],
      default: 'LOW_POWER_STANDARD_MODE',
    },
  ],
  batteryStatus: [{ key: 'percentage', label: 'Battery', kind: 'number', ...PERCENT, default: 100, unit: '%' }],
  connectionStatus: [
    { key: 'connection', label: 'Connection', kind: 'enum', options: CONNECTIONS, default: 'ETHERNET' },
    {
      key: 'available',
      label: 'Available connections',
      kind: 'multi',
      options: CONNECTIONS,
      default: ['ETHERNET', 'CELLULAR'],
    },
  ],
  ethernetStatus: [
    { key: 'macAddress', label: 'MAC address', kind: 'text', default: '00:00:5e:00:53:01', required: true },
    { key: 'ipAddress', label: 'IP address', kind: 'text', default: '192.0.2.10', required: true },
  ],
  cellularStatus: [
    { key: 'signalStrength', label: 'Signal strength', kind: 'number', ...PERCENT, default: 80, unit: '%' },
  ],
  co2: [{ key: 'ppm', label: 'CO2', kind: 'number', min: 0, step: 1, int: true, default: 450, unit: 'ppm' }],
  pressure: [{ key: 'pascal', label: 'Pressure', kind: 'number', min: 0, step: 1, default: 101325, unit: 'Pa' }],
  motion: [
    {
      key: 'state',
      label: 'Motion',
      kind: 'enum',
      options: ['MOTION_DETECTED', 'NO_MOTION_DETECTED'],
      default: 'MOTION_DETECTED',
    },
  ],
  deskOccupancy: [
    { key: 'state', label: 'Desk', kind: 'enum', options: ['OCCUPIED', 'NOT_OCCUPIED'], default: 'OCCUPIED' },
    { key: 'remarks', label: 'Remarks', kind: 'list', default: '', hint: 'comma-separated, optional' },
  ],
  contact: [{ key: 'state', label: 'Contact', kind: 'enum', options: ['OPEN', 'CLOSED'], default: 'CLOSED' }],
};

const COMMON = ['touch', 'networkStatus', 'batteryStatus'];

/** Event types each device type may publish (contract §5.5). */
export const EVENTS_BY_DEVICE_TYPE: Record<string, string[]> = {
  temperature: ['temperature', 'probeWireStatus', ...COMMON],
  proximity: ['objectPresent', ...COMMON],
  touch: [...COMMON],
  humidity: ['humidity', ...COMMON],
  proximityCounter: ['objectPresentCount', ...COMMON],
  touchCounter: ['touchCount', ...COMMON],
  waterDetector: ['waterPresent', ...COMMON],
  co2: ['co2', 'pressure', 'humidity', ...COMMON],
  motion: ['motion', ...COMMON],
  deskOccupancy: ['deskOccupancy', ...COMMON],
  contact: ['contact', ...COMMON],
  ccon: ['connectionStatus', 'ethernetStatus', 'cellularStatus', 'touch'],
};

export type FormValues = Record<string, string | string[]>;

export function defaultValues(eventType: string): FormValues {
  const values: FormValues = { updateTime: '' };
  for (const f of EVENT_FORMS[eventType] ?? [])
    values[f.key] = f.kind === 'number' ? String(f.default) : f.kind === 'multi' ? [...f.default] : f.default;
  return values;
}

/** The `:publish` body for the form's values, or the first problem in words (checked before sending). */
export function publishBody(
  eventType: string,
  values: FormValues,
): { body: Record<string, unknown> } | { problem: string } {
  const inner: Record<string, unknown> = {};
  for (const f of EVENT_FORMS[eventType] ?? []) {
    const raw = values[f.key];
    if (f.kind === 'number') {
      const n = Number(raw);
      if (raw === '' || !Number.isFinite(n)) return { problem: `${f.label} must be a number.` };
      if (f.int && !Number.isInteger(n)) return { problem: `${f.label} must be a whole number.` };
      if (f.min !== undefined && n < f.min) return { problem: `${f.label} must be at least ${f.min}.` };
      if (f.max !== undefined && n > f.max) return { problem: `${f.label} must be at most ${f.max}.` };
      inner[f.key] = n;
    } else if (f.kind === 'multi') inner[f.key] = raw as string[];
    else if (f.kind === 'list')
      inner[f.key] = String(raw)
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    else if (f.kind === 'text') {
      if (f.required && String(raw).trim() === '') return { problem: `${f.label} is required.` };
      inner[f.key] = String(raw).trim();
    } else inner[f.key] = raw;
  }
  const time = String(values.updateTime ?? '');
  if (time !== '') {
    const d = new Date(time);
    if (Number.isNaN(d.getTime())) return { problem: 'The event time is not a valid date.' };
    inner.updateTime = d.toISOString();
  }
  return { body: { [eventType]: inner } };
}
