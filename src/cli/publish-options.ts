// The typed options of `emulator publish <device> <event-type>` (alias `events publish`): which options each of the
// 18 publishable event types takes (contract §5.2-§5.3), checked before anything is sent, and the `:publish` body
// they make. The enums come from the service's own domain module, so the CLI and the server cannot disagree.
import type { Command } from 'commander';
import { CONNECTIONS, PUBLISHABLE_EVENT_TYPES, STATE_ENUMS, TRANSMISSION_MODES } from '../domain/event-data.ts';
import { collect, parseInteger, parseNumber, parseTime } from './arguments.ts';
import { UsageError } from './errors.ts';

type Kind = 'number' | 'integer' | 'enum' | 'string' | 'strings' | 'flag';

interface Field {
  /** commander's camelCase name of the option. */
  option: string;
  /** The key in the event data. */
  key: string;
  kind: Kind;
  required?: boolean;
  /** For enums: the allowed values (from the service's domain). */
  values?: readonly string[];
}

const state = (eventType: string): Field => ({
  option: 'state',
  key: 'state',
  kind: 'enum',
  required: true,
  values: STATE_ENUMS[eventType]!,
});

/** What each event type takes; every type also takes --update-time and --data. */
export const EVENT_FIELDS: Readonly<Record<string, readonly Field[]>> = {
  touch: [],
  temperature: [
    { option: 'value', key: 'value', kind: 'number', required: true },
    { option: 'backfilled', key: 'isBackfilled', kind: 'flag' },
  ],
  objectPresent: [state('objectPresent')],
  humidity: [
    { option: 'temperature', key: 'temperature', kind: 'number', required: true },
    { option: 'relativeHumidity', key: 'relativeHumidity', kind: 'number', required: true },
    { option: 'backfilled', key: 'isBackfilled', kind: 'flag' },
  ],
  objectPresentCount: [{ option: 'total', key: 'total', kind: 'integer', required: true }],
  touchCount: [{ option: 'total', key: 'total', kind: 'integer', required: true }],
  waterPresent: [state('waterPresent')],
  networkStatus: [
    { option: 'signalStrength', key: 'signalStrength', kind: 'integer' },
    { option: 'rssi', key: 'rssi', kind: 'integer' },
    { option: 'transmissionMode', key: 'transmissionMode', kind: 'enum', values: TRANSMISSION_MODES },
  ],
  batteryStatus: [{ option: 'percentage', key: 'percentage', kind: 'integer', required: true }],
  connectionStatus: [
    { option: 'connection', key: 'connection', kind: 'enum', required: true, values: CONNECTIONS },
    { option: 'available', key: 'available', kind: 'strings', values: CONNECTIONS },
  ],
  ethernetStatus: [
    { option: 'macAddress', key: 'macAddress', kind: 'string', required: true },
    { option: 'ipAddress', key: 'ipAddress', kind: 'string', required: true },
    { option: 'error', key: 'errors', kind: 'strings' },
  ],
  cellularStatus: [
    { option: 'signalStrength', key: 'signalStrength', kind: 'integer', required: true },
    { option: 'error', key: 'errors', kind: 'strings' },
  ],
  co2: [{ option: 'ppm', key: 'ppm', kind: 'integer', required: true }],
  pressure: [{ option: 'pascal', key: 'pascal', kind: 'number', required: true }],
  motion: [state('motion')],
  deskOccupancy: [state('deskOccupancy'), { option: 'remark', key: 'remarks', kind: 'strings' }],
  contact: [state('contact')],
  probeWireStatus: [state('probeWireStatus')],
};

/** `relativeHumidity` → `--relative-humidity`. */
const flagOf = (option: string) => `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

const ALL_OPTIONS = [
  ...new Set(
    Object.values(EVENT_FIELDS)
      .flat()
      .map((f) => f.option),
  ),
];

/** Adds every typed option (the union over the event types) and the per-type table to the help. */
export function addPublishOptions(command: Command): Command {
  const described: Record<string, string> = {
    value: 'temperature °C',
    backfilled: 'isBackfilled: true (temperature, humidity)',
    temperature: 'humidity: temperature °C',
    relativeHumidity: 'humidity: relative humidity %',
    total: 'objectPresentCount, touchCount: the count',
    state: 'the state (objectPresent, waterPresent, motion, deskOccupancy, contact, probeWireStatus)',
    signalStrength: 'networkStatus, cellularStatus: signal strength %',
    rssi: 'networkStatus: RSSI',
    transmissionMode: `networkStatus: ${TRANSMISSION_MODES.join(' | ')}`,
    percentage: 'batteryStatus: battery %',
    connection: `connectionStatus: ${CONNECTIONS.join(' | ')}`,
    available: 'connectionStatus: an available connection (repeatable)',
    macAddress: 'ethernetStatus: MAC address',
    ipAddress: 'ethernetStatus: IP address',
    error: 'ethernetStatus, cellularStatus: an error (repeatable)',
    ppm: 'co2: CO2 ppm',
    pascal: 'pressure: pascal',
    remark: 'deskOccupancy: a remark such as INCOMPLETE_DATA (repeatable)',
  };
  for (const option of ALL_OPTIONS) {
    const field = Object.values(EVENT_FIELDS)
      .flat()
      .find((f) => f.option === option)!;
    const flag = flagOf(option);
    if (field.kind === 'flag') command.option(flag, described[option]);
    else if (field.kind === 'strings') command.option(`${flag} <value>`, described[option], collect);
    else command.option(`${flag} <value>`, described[option]);
  }
  command
    .option('--update-time <time>', 'event time: RFC 3339 or a duration before now such as 5m (default: now)')
    .option(
      '--data <json>',
      'further data fields as a JSON object (e.g. samples, cloudConnectors), merged under the options',
    );
  const table = PUBLISHABLE_EVENT_TYPES.map((type) => {
    const fields = EVENT_FIELDS[type]!.map(
      (f) => `${flagOf(f.option)}${f.kind === 'flag' ? '' : ' <…>'}${f.required ? '' : '?'}`,
    );
    return `  ${type.padEnd(20)}${fields.join(' ') || '(no options)'}`;
  });
  return command.addHelpText('after', `\nOptions per event type (? = optional):\n${table.join('\n')}\n`);
}

/** The `:publish` body `{"<eventType>": {…}}` from the options, or a usage error naming what is wrong. */
export function publishBody(eventType: string, options: Record<string, unknown>): Record<string, unknown> {
  const fields = EVENT_FIELDS[eventType];
  if (!fields) throw new UsageError(`unknown event type "${eventType}"; one of: ${PUBLISHABLE_EVENT_TYPES.join(', ')}`);
  const accepted = new Set(fields.map((f) => f.option));
  const stray = ALL_OPTIONS.filter((o) => options[o] !== undefined && !accepted.has(o));
  if (stray.length > 0) {
    const takes = fields.map((f) => flagOf(f.option)).join(', ') || 'no typed options';
    throw new UsageError(
      `${stray.map(flagOf).join(', ')} ${stray.length === 1 ? 'does' : 'do'} not apply to ${eventType} events (they take ${takes})`,
    );
  }
  let data: Record<string, unknown> = {};
  if (options.data !== undefined) {
    try {
      data = JSON.parse(String(options.data));
    } catch {
      throw new UsageError('--data must be a JSON object');
    }
    if (!data || typeof data !== 'object' || Array.isArray(data)) throw new UsageError('--data must be a JSON object');
  }
  for (const f of fields) {
    const raw = options[f.option];
    const flag = flagOf(f.option);
    if (raw === undefined) {
      if (f.required && data[f.key] === undefined) throw new UsageError(`${eventType} events need ${flag}`);
      continue;
    }
    switch (f.kind) {
      case 'number':
        data[f.key] = parseNumber(String(raw), flag);
        break;
      case 'integer':
        data[f.key] = parseInteger(String(raw), flag);
        break;
      case 'flag':
        data[f.key] = true;
        break;
      case 'string':
        data[f.key] = String(raw);
        break;
      case 'enum':
        if (!f.values!.includes(String(raw)))
          throw new UsageError(`${flag} must be one of ${f.values!.join(', ')}, got "${raw}"`);
        data[f.key] = String(raw);
        break;
      case 'strings': {
        const list = raw as string[];
        const bad = f.values ? list.find((v) => !f.values!.includes(v)) : undefined;
        if (bad !== undefined) throw new UsageError(`${flag} must be one of ${f.values!.join(', ')}, got "${bad}"`);
        data[f.key] = list;
        break;
      }
    }
  }
  if (options.updateTime !== undefined) data.updateTime = parseTime(String(options.updateTime), '--update-time');
  return { [eventType]: data };
}
