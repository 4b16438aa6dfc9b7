// Device types and what each emits (contract §5.5).

export const SENSOR_COMMON_EVENTS = ['touch', 'networkStatus', 'batteryStatus'] as const;

export interface DeviceTypeInfo {
  /** Event types this device type can publish (labelsChanged is emitted by label changes, never published). */
  events: readonly string[];
  /** Keys of `reported`, in order (probeWireStatus appears only once seen). */
  reported: readonly string[];
  productNumber: string;
}

const sensor = (own: string[], productNumber: string): DeviceTypeInfo => ({
  events: [...own, ...SENSOR_COMMON_EVENTS],
  reported: [...own, ...SENSOR_COMMON_EVENTS],
  productNumber,
});

export const DEVICE_TYPES: Readonly<Record<string, DeviceTypeInfo>> = {
  temperature: {
    events: ['temperature', 'probeWireStatus', ...SENSOR_COMMON_EVENTS],
    reported: ['temperature', ...SENSOR_COMMON_EVENTS],
    productNumber: '102058',
  },
  proximity: sensor(['objectPresent'], '102064'),
  touch: sensor([], '100110'),
  humidity: sensor(['humidity'], '101895'),
  proximityCounter: sensor(['objectPresentCount'], '101730'),
  touchCounter: sensor(['touchCount'], '101675'),
  waterDetector: sensor(['waterPresent'], '101714'),
  co2: sensor(['co2', 'pressure', 'humidity'], ''),
  motion: sensor(['motion'], ''),
  deskOccupancy: sensor(['deskOccupancy'], '102553'),
  contact: sensor(['contact'], ''),
  ccon: {
    events: ['connectionStatus', 'ethernetStatus', 'cellularStatus', 'touch'],
    reported: ['connectionStatus', 'ethernetStatus', 'cellularStatus', 'touch'],
    productNumber: '100011',
  },
};

export const DEVICE_TYPE_NAMES = Object.keys(DEVICE_TYPES);

/** Every event type a data connector filter may name (ping excluded). */
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
] as const;

export const LABELS_CHANGED = 'labelsChanged';
/** The event stream's event of an alert's transition (extensions §X5): `{alertChanged: <the alert>}`, never stored. */
export const ALERT_CHANGED = 'alertChanged';

/** `reported` as served: one key per reported type in order, null until the first event. */
export function presentReported(type: string, reported: Record<string, unknown>): Record<string, unknown> {
  const info = DEVICE_TYPES[type];
  const out: Record<string, unknown> = {};
  for (const key of info?.reported ?? []) out[key] = reported[key] ?? null;
  if (type === 'temperature' && reported.probeWireStatus !== undefined) out.probeWireStatus = reported.probeWireStatus;
  return out;
}
