// Notification rules in words (extensions §X5): the fields a trigger watches with their states, what a trigger and a
// scope are in a sentence, and durations ("<n>s" on the wire). Used by the rules and alerts screens, which load on
// first use (alerts.ts holds what the first load needs).
import { num, type Rule, type RuleTrigger, withUnit } from './alerts.ts';
import { labelText } from './format.ts';

/** The trigger fields that read a numeric range: [field, label, unit]. Pressure is shown in hPa (the API's is Pa). */
export const RANGE_FIELDS: [field: string, label: string, unit: string][] = [
  ['temperature', 'Temperature', '°C'],
  ['humidity', 'Humidity', '%'],
  ['co2', 'CO₂', 'ppm'],
  ['pressure', 'Pressure', 'hPa'],
];

/**
 * The fields with a state: [field, label, criterion key, the states as [value, words], the event type read]. The
 * first state is the one a new rule starts with (the alarming one).
 */
export const STATE_FIELDS: [field: string, label: string, key: keyof RuleTrigger, states: [string, string][]][] = [
  [
    'waterPresent',
    'Water',
    'presence',
    [
      ['PRESENT', 'water present'],
      ['ABSENT', 'no water'],
    ],
  ],
  [
    'contact',
    'Door or window (contact)',
    'contact',
    [
      ['OPEN', 'door open'],
      ['CLOSED', 'door closed'],
    ],
  ],
  [
    'objectPresent',
    'Object (proximity)',
    'presence',
    [
      ['ABSENT', 'object absent'],
      ['PRESENT', 'object present'],
    ],
  ],
  [
    'motion',
    'Motion',
    'motion',
    [
      ['MOTION_DETECTED', 'motion'],
      ['NO_MOTION_DETECTED', 'no motion'],
    ],
  ],
  [
    'deskOccupancy',
    'Desk occupancy',
    'occupancy',
    [
      ['OCCUPIED', 'desk occupied'],
      ['NOT_OCCUPIED', 'desk not occupied'],
    ],
  ],
  [
    'connectionStatus',
    'Connectivity',
    'connection',
    [
      ['SENSOR_OFFLINE', 'sensor offline'],
      ['CLOUD_CONNECTOR_OFFLINE', 'Cloud Connector offline'],
    ],
  ],
];

const LABEL_OF: Record<string, string> = {
  ...Object.fromEntries(RANGE_FIELDS.map(([f, l]) => [f, l.toLowerCase().replace('co₂', 'CO₂')])),
  touch: 'touch',
};

/** Back to the API's unit. */
export const apiValue = (field: string, value: number): number =>
  field === 'pressure' ? Number((value * 100).toFixed(6)) : value;

/** "temperature outside 2–8 °C", "humidity above 70 %", "door open", "sensor offline", "a data connector failing". */
export function triggerText(t: RuleTrigger): string {
  if (t.field === 'dataConnector') return 'a data connector failing';
  if (t.field === 'touch') return 'a touch';
  const state = STATE_FIELDS.find((s) => s[0] === t.field);
  if (state) {
    const value = t[state[2]] as string | null;
    return state[3].find((s) => s[0] === value)?.[1] ?? `${t.field} ${value ?? ''}`.trim();
  }
  const r = t.range;
  const label = LABEL_OF[t.field] ?? t.field;
  if (!r) return label;
  const outside = r.type === 'OUTSIDE';
  if (r.lower !== null && r.upper !== null) {
    // "2–8 °C", but "−25 to −15 °C": a dash between negative numbers reads as a minus.
    const joint = r.lower < 0 || r.upper < 0 ? ' to ' : '–';
    return `${label} ${outside ? 'outside' : 'within'} ${withUnit(t.field, `${num(t.field, r.lower)}${joint}${num(t.field, r.upper)}`)}`;
  }
  if (r.lower !== null)
    return `${label} ${outside ? 'below' : 'at or above'} ${withUnit(t.field, num(t.field, r.lower))}`;
  if (r.upper !== null)
    return `${label} ${outside ? 'above' : 'at or below'} ${withUnit(t.field, num(t.field, r.upper))}`;
  return label;
}

/** "every device", "2 devices", "devices labelled fridge, site=oslo", "every data connector". */
export function scopeText(rule: Pick<Rule, 'devices' | 'deviceLabels' | 'trigger'>): string {
  if (rule.trigger.field === 'dataConnector') return 'every data connector';
  const labels = Object.entries(rule.deviceLabels);
  const parts: string[] = [];
  if (rule.devices.length > 0) parts.push(rule.devices.length === 1 ? '1 device' : `${rule.devices.length} devices`);
  if (labels.length > 0)
    parts.push(
      `${parts.length > 0 ? 'labelled' : 'devices labelled'} ${labels.map(([k, v]) => labelText(k, v)).join(', ')}`,
    );
  return parts.length === 0 ? 'every device' : parts.join(' ');
}

// ---- durations: "<n>s" on the wire ----

export const DURATION_UNITS: [unit: string, label: string, seconds: number][] = [
  ['s', 'seconds', 1],
  ['min', 'minutes', 60],
  ['h', 'hours', 3600],
];

/** Seconds of a "<n>s" duration, or null when it is null or not one. */
export function durationSeconds(d: string | null | undefined): number | null {
  const m = d ? /^(\d+)s$/.exec(d) : null;
  return m ? Number(m[1]) : null;
}

/** "15 min", "1 h 30 min", "45 s", "2 d". */
export function durationText(d: string | null | undefined): string {
  const s = durationSeconds(d);
  if (s === null) return '—';
  if (s === 0) return 'none';
  const parts: string[] = [];
  const days = Math.floor(s / 86400);
  const hours = Math.floor((s % 86400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const seconds = s % 60;
  if (days) parts.push(`${days} d`);
  if (hours) parts.push(`${hours} h`);
  if (minutes) parts.push(`${minutes} min`);
  if (seconds) parts.push(`${seconds} s`);
  return parts.join(' ');
}
