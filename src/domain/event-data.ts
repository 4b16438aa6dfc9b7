// Event data shapes (contract §5.2-5.4): validates a `:publish` body and normalises it into the exact `data`
// object that is stored, streamed and pushed — keys in contract order, defaults filled, client quirks tolerated.
// Pure: "now" is passed in. Unlike the contract's "ranges are not checked", obviously impossible values
// (a signal strength of 150 %, a negative count) are refused here; docs/events.md lists the ranges.
import { DEVICE_TYPES, EVENT_TYPES, LABELS_CHANGED } from './device-types.ts';
import { badRequest } from './errors.ts';
import { formatTimestamp, tryParseTimestamp, type Micros } from './time.ts';

/** Every type a client may publish: all of §5.2 except labelsChanged and ping. */
export const PUBLISHABLE_EVENT_TYPES: readonly string[] = EVENT_TYPES.filter((t) => t !== LABELS_CHANGED);

export const STATE_ENUMS: Readonly<Record<string, readonly string[]>> = {
  objectPresent: ['PRESENT', 'NOT_PRESENT'],
  waterPresent: ['PRESENT', 'NOT_PRESENT'],
  motion: ['MOTION_DETECTED', 'NO_MOTION_DETECTED'],
  deskOccupancy: ['OCCUPIED', 'NOT_OCCUPIED'],
  contact: ['OPEN', 'CLOSED'],
  probeWireStatus: [
    'INVALID_WIRE_CONFIGURATION',
    'INVALID_COEFFICIENT_CONFIGURATION',
    'TWO_WIRE',
    'THREE_WIRE',
    'FOUR_WIRE',
  ],
};
export const TRANSMISSION_MODES = ['LOW_POWER_STANDARD_MODE', 'HIGH_POWER_BOOST_MODE'] as const;
export const CONNECTIONS = ['SDS', 'ETHERNET', 'CELLULAR', 'OFFLINE'] as const;

/** Defaults the emulator fills in (§5.3). */
export const DEFAULT_SIGNAL_STRENGTH = 99;
export const DEFAULT_RSSI = 0;
export const DEFAULT_CLOUD_CONNECTOR_ID = 'emulated-ccon';
/** Lowest physically possible temperature, °C. */
const ABSOLUTE_ZERO = -273.15;

/**
 * Size limits of a published event that no real sensor reaches (a sensor reports a handful of samples per
 * heartbeat), so one publish cannot grow a device's `reported` state, its history or every device page that
 * lists it without bound. Beyond them the publish is refused with 400. docs/events.md lists them.
 */
export const EVENT_LIMITS = {
  /** `samples` of temperature and humidity. */
  samples: 100,
  /** `cloudConnectors` of networkStatus. */
  cloudConnectors: 16,
  /** `available` of connectionStatus: one per connection kind. */
  available: CONNECTIONS.length,
  /** `remarks` of deskOccupancy, and the characters of each. */
  remarks: 16,
  remarkLength: 256,
  /** `errors` of ethernetStatus and cellularStatus (passed through as given), and the JSON bytes of each. */
  errors: 16,
  errorBytes: 1024,
  /** Identifier-like strings: macAddress, ipAddress, a cloud connector's id. */
  shortString: 64,
} as const;

export interface NormalizedEvent {
  eventType: string;
  /** `{"<eventType>": {…}}`, ready to emit. */
  data: Record<string, unknown>;
  /** The event time: data's updateTime after defaulting (micros). */
  timestamp: Micros;
}

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads the fields of one JSON object, naming each field by its full path in error messages. */
class Fields {
  constructor(
    readonly obj: Obj,
    readonly path: string,
  ) {}

  name(key: string): string {
    return `${this.path}.${key}`;
  }

  has(key: string): boolean {
    return this.obj[key] !== undefined;
  }

  number(
    key: string,
    opts: { required?: boolean; int?: boolean; min?: number; max?: number; fallback?: number } = {},
  ): number {
    const v = this.obj[key];
    const field = this.name(key);
    if (v === undefined) {
      if (opts.fallback !== undefined) return opts.fallback;
      throw badRequest(`${field} is required`);
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) throw badRequest(`${field} must be a number`);
    if (opts.int && !Number.isInteger(v)) throw badRequest(`${field} must be an integer`);
    if ((opts.min !== undefined && v < opts.min) || (opts.max !== undefined && v > opts.max)) {
      const range = opts.max === undefined ? `at least ${opts.min}` : `between ${opts.min} and ${opts.max}`;
      throw badRequest(`${field} must be ${range}, got ${v}`);
    }
    return v;
  }

  string(key: string, fallback?: string): string {
    const v = this.obj[key];
    if (v === undefined) {
      if (fallback !== undefined) return fallback;
      throw badRequest(`${this.name(key)} is required`);
    }
    if (typeof v !== 'string') throw badRequest(`${this.name(key)} must be a string`);
    return v;
  }

  enumValue(key: string, allowed: readonly string[], fallback?: string): string {
    const v = this.string(key, fallback);
    if (!allowed.includes(v)) throw badRequest(`${this.name(key)} must be one of ${allowed.join(', ')}, got "${v}"`);
    return v;
  }

  boolean(key: string, fallback: boolean): boolean {
    const v = this.obj[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean') throw badRequest(`${this.name(key)} must be true or false`);
    return v;
  }

  /** An RFC 3339 timestamp, returned as micros. */
  time(key: string, fallback: Micros): Micros {
    const v = this.obj[key];
    if (v === undefined) return fallback;
    const t = tryParseTimestamp(v);
    if (t === null)
      throw badRequest(`${this.name(key)} must be an RFC 3339 timestamp, e.g. 2025-06-01T12:00:00.250000Z`);
    return t;
  }

  /** A string of at most `max` characters (code points). */
  shortString(key: string, max: number, fallback?: string): string {
    const v = this.string(key, fallback);
    if (v.length > max && [...v].length > max) throw badRequest(`${this.name(key)} must be at most ${max} characters`);
    return v;
  }

  /** An array of at most `max` items (absent: undefined); `item` maps each element, given its index path. */
  array<T>(
    key: string,
    max: number,
    item: (value: unknown, path: string) => T,
    aliases: string[] = [],
  ): T[] | undefined {
    let k = key;
    if (this.obj[k] === undefined) k = aliases.find((a) => this.obj[a] !== undefined) ?? key;
    const v = this.obj[k];
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) throw badRequest(`${this.name(k)} must be an array`);
    if (v.length > max) throw badRequest(`${this.name(k)} must hold at most ${max} items, got ${v.length}`);
    return v.map((x, i) => item(x, `${this.name(k)}[${i}]`));
  }
}

const fieldsOf = (value: unknown, path: string): Fields => {
  if (!isObject(value)) throw badRequest(`${path} must be an object`);
  return new Fields(value, path);
};

const remarkItem = (value: unknown, path: string): string => {
  if (typeof value !== 'string') throw badRequest(`${path} must be a string`);
  if (value.length > EVENT_LIMITS.remarkLength && [...value].length > EVENT_LIMITS.remarkLength) {
    throw badRequest(`${path} must be at most ${EVENT_LIMITS.remarkLength} characters`);
  }
  return value;
};

const enumItem =
  (allowed: readonly string[]) =>
  (value: unknown, path: string): string => {
    if (typeof value !== 'string' || !allowed.includes(value))
      throw badRequest(`${path} must be one of ${allowed.join(', ')}`);
    return value;
  };

/** The `errors` lists of ccon status events are passed through as given (§5.2), each item bounded in size. */
const errorItem = (value: unknown, path: string): unknown => {
  if (Buffer.byteLength(JSON.stringify(value)) > EVENT_LIMITS.errorBytes)
    throw badRequest(`${path} must be at most ${EVENT_LIMITS.errorBytes} bytes of JSON`);
  return value;
};

const PERCENT = { int: true, min: 0, max: 100 } as const;
const COUNT = { int: true, min: 0 } as const;
const CELSIUS = { min: ABSOLUTE_ZERO } as const;
const RELATIVE_HUMIDITY = { min: 0, max: 100 } as const;

/** Normalises one event type's inner data; returns it with keys in §5.2 order. */
type Normaliser = (f: Fields, updateTime: Micros) => Obj;

const stateOnly =
  (eventType: string): Normaliser =>
  (f, updateTime) => ({
    state: f.enumValue('state', STATE_ENUMS[eventType]!),
    updateTime: formatTimestamp(updateTime),
  });

const NORMALISERS: Readonly<Record<string, Normaliser>> = {
  touch: (_f, t) => ({ updateTime: formatTimestamp(t) }),

  temperature: (f, t) => {
    const value = f.number('value', { required: true, ...CELSIUS });
    const samples = f.array('samples', EVENT_LIMITS.samples, (raw, path) => {
      const s = fieldsOf(raw, path);
      return {
        value: s.number('value', { ...CELSIUS, fallback: value }),
        sampleTime: formatTimestamp(s.time('sampleTime', t)),
      };
    }) ?? [{ value, sampleTime: formatTimestamp(t) }];
    return { value, updateTime: formatTimestamp(t), samples, isBackfilled: f.boolean('isBackfilled', false) };
  },

  objectPresent: stateOnly('objectPresent'),

  humidity: (f, t) => {
    const temperature = f.number('temperature', { required: true, ...CELSIUS });
    const relativeHumidity = f.number('relativeHumidity', { required: true, ...RELATIVE_HUMIDITY });
    const samples = f.array('samples', EVENT_LIMITS.samples, (raw, path) => {
      const s = fieldsOf(raw, path);
      // The reference SDK names a sample's temperature `celsius` (§5.3 quirks).
      const key = s.has('temperature') || !s.has('celsius') ? 'temperature' : 'celsius';
      return {
        temperature: s.number(key, { ...CELSIUS, fallback: temperature }),
        relativeHumidity: s.number('relativeHumidity', { ...RELATIVE_HUMIDITY, fallback: relativeHumidity }),
        sampleTime: formatTimestamp(s.time('sampleTime', t)),
      };
    }) ?? [{ temperature, relativeHumidity, sampleTime: formatTimestamp(t) }];
    return {
      temperature,
      relativeHumidity,
      samples,
      isBackfilled: f.boolean('isBackfilled', false),
      updateTime: formatTimestamp(t),
    };
  },

  objectPresentCount: (f, t) => ({
    total: f.number('total', { required: true, ...COUNT }),
    updateTime: formatTimestamp(t),
  }),
  touchCount: (f, t) => ({ total: f.number('total', { required: true, ...COUNT }), updateTime: formatTimestamp(t) }),
  waterPresent: stateOnly('waterPresent'),

  networkStatus: (f, t) => {
    const signalStrength = f.number('signalStrength', { ...PERCENT, fallback: DEFAULT_SIGNAL_STRENGTH });
    const rssi = f.number('rssi', { int: true, fallback: DEFAULT_RSSI });
    // The reference SDK sends `cloud_connectors` with entries lacking `rssi` (§5.3 quirks).
    const cloudConnectors = f.array(
      'cloudConnectors',
      EVENT_LIMITS.cloudConnectors,
      (raw, path) => {
        const c = fieldsOf(raw, path);
        return {
          id: c.shortString('id', EVENT_LIMITS.shortString, DEFAULT_CLOUD_CONNECTOR_ID),
          signalStrength: c.number('signalStrength', { ...PERCENT, fallback: signalStrength }),
          rssi: c.number('rssi', { int: true, fallback: rssi }),
        };
      },
      ['cloud_connectors'],
    ) ?? [{ id: DEFAULT_CLOUD_CONNECTOR_ID, signalStrength, rssi }];
    return {
      signalStrength,
      rssi,
      updateTime: formatTimestamp(t),
      cloudConnectors,
      transmissionMode: f.enumValue('transmissionMode', TRANSMISSION_MODES, 'LOW_POWER_STANDARD_MODE'),
    };
  },

  batteryStatus: (f, t) => ({
    percentage: f.number('percentage', { required: true, ...PERCENT }),
    updateTime: formatTimestamp(t),
  }),

  connectionStatus: (f, t) => ({
    connection: f.enumValue('connection', CONNECTIONS),
    available: f.array('available', EVENT_LIMITS.available, enumItem(CONNECTIONS)) ?? [],
    updateTime: formatTimestamp(t),
  }),

  ethernetStatus: (f, t) => ({
    macAddress: f.shortString('macAddress', EVENT_LIMITS.shortString),
    ipAddress: f.shortString('ipAddress', EVENT_LIMITS.shortString),
    errors: f.array('errors', EVENT_LIMITS.errors, errorItem) ?? [],
    updateTime: formatTimestamp(t),
  }),

  cellularStatus: (f, t) => ({
    signalStrength: f.number('signalStrength', { required: true, ...PERCENT }),
    errors: f.array('errors', EVENT_LIMITS.errors, errorItem) ?? [],
    updateTime: formatTimestamp(t),
  }),

  co2: (f, t) => ({ ppm: f.number('ppm', { required: true, ...COUNT }), updateTime: formatTimestamp(t) }),
  pressure: (f, t) => ({ pascal: f.number('pascal', { required: true, min: 0 }), updateTime: formatTimestamp(t) }),
  motion: stateOnly('motion'),

  deskOccupancy: (f, t) => ({
    state: f.enumValue('state', STATE_ENUMS.deskOccupancy!),
    remarks: f.array('remarks', EVENT_LIMITS.remarks, remarkItem) ?? [],
    updateTime: formatTimestamp(t),
  }),

  contact: stateOnly('contact'),
  probeWireStatus: stateOnly('probeWireStatus'),
};

/**
 * Validates a publish body `{"<eventType>": {…}}` for a device of `deviceType` and returns the normalised
 * event. Throws 400 naming the offending field. `now` (micros) is the default updateTime.
 */
export function normalizePublishBody(deviceType: string, body: unknown, now: Micros): NormalizedEvent {
  if (!isObject(body)) throw badRequest('request body must be a JSON object {"<eventType>": {…}}');
  const keys = Object.keys(body);
  if (keys.length !== 1) {
    throw badRequest(
      `request body must have exactly one top-level key, the event type; got ${keys.length === 0 ? 'none' : keys.join(', ')}`,
    );
  }
  const eventType = keys[0]!;
  if (!PUBLISHABLE_EVENT_TYPES.includes(eventType)) {
    throw badRequest(
      eventType === LABELS_CHANGED
        ? 'labelsChanged events cannot be published; change the labels instead'
        : `unknown event type "${eventType}"`,
    );
  }
  if (!DEVICE_TYPES[deviceType]?.events.includes(eventType)) {
    throw badRequest(`a device of type ${deviceType} does not emit ${eventType} events`);
  }
  const fields = fieldsOf(body[eventType], eventType);
  const updateTime = fields.time('updateTime', now);
  const inner = NORMALISERS[eventType]!(fields, updateTime);
  return { eventType, data: { [eventType]: inner }, timestamp: updateTime };
}
