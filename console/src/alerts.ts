// Notification rules and alerts (extensions §X5) as the console reads them: the wire shapes it uses, an alert's
// states, and its last value in words. Shared by the rules and alerts screens (loaded on first use) and by the
// navigation's badge and the device page (in the first load): keep it small; rule-text.ts has the rest.

export interface RuleRange {
  lower: number | null;
  upper: number | null;
  type: string;
  filter?: null;
}

export interface RuleTrigger {
  field: string;
  range: RuleRange | null;
  presence: string | null;
  motion: string | null;
  occupancy: string | null;
  contact: string | null;
  connection: string | null;
  triggerCount: number;
}

export interface RuleAction {
  type: string;
  email: { recipients: string[]; contactGroups: string[]; subject: string; body: string } | null;
  webhook: { url: string; signatureSecret: string; headers: Record<string, string> } | null;
  [other: string]: unknown;
}

export interface EscalationLevel {
  displayName: string;
  actions: RuleAction[];
  escalateAfter: string | null;
}

export interface Schedule {
  timezone: string;
  slots: {
    days: string[];
    times: { start: { hour: number; minute: number }; end: { hour: number; minute: number } }[];
  }[];
  inverse: boolean;
}

export interface Rule {
  name: string;
  enabled: boolean;
  displayName: string;
  devices: string[];
  deviceLabels: Record<string, string>;
  projectLabels: Record<string, string>;
  trigger: RuleTrigger;
  escalationLevels: EscalationLevel[];
  schedule: Schedule | null;
  triggerDelay: string | null;
  reminderNotifications: boolean;
  resolvedNotifications: boolean;
  unacknowledgesAfter: string | null;
  createTime: string;
  updateTime: string;
}

export interface AlertNotification {
  time: string;
  level: number;
  type: string;
  target: string;
  outcome: string;
  error: string;
}

export interface Alert {
  name: string;
  rule: string;
  targetName: string;
  state: string;
  escalationLevel: number;
  triggerTime: string;
  acknowledgeTime: string;
  acknowledgedBy: string;
  resolveTime: string;
  lastValue: unknown;
  /** Absent on the stream's alertChanged events and webhook bodies. */
  notifications?: AlertNotification[];
}

/** The states in the order the filter chips show them: [state, badge kind, label, meaning]. */
export const ALERT_STATES: [state: string, kind: string, label: string, meaning: string][] = [
  ['TRIGGERED', 'danger', 'Triggered', 'the condition holds and nobody has acknowledged it'],
  ['ACKNOWLEDGED', 'warn', 'Acknowledged', 'someone is on it: escalation stops until the acknowledgement runs out'],
  ['RESOLVED', 'ok', 'Resolved', 'the condition cleared, or someone resolved it'],
];
export const ALERT_STATE_NAMES = ALERT_STATES.map((s) => s[0]);
/** TRIGGERED and ACKNOWLEDGED: what the navigation's badge counts. */
export const OPEN_STATES = ['TRIGGERED', 'ACKNOWLEDGED'];

export const alertStateInfo = (state: string) => ALERT_STATES.find((s) => s[0] === state);

/** The unit of each range field's values as the console shows them (pressure in hPa; the API's is Pa). */
const UNIT_OF: Record<string, string> = { temperature: '°C', humidity: '%', co2: 'ppm', pressure: 'hPa' };
/** A value of a range field as the console shows it: pressure in hPa (the API's is in Pa). */
export const shownValue = (field: string, value: number): number =>
  field === 'pressure' ? Number((value / 100).toFixed(6)) : value;
/** A number as text, with a true minus sign: "−18.5". */
export const num = (field: string, v: number) =>
  shownValue(field, v).toLocaleString('en-US', { maximumFractionDigits: 3 }).replace(/^-/, '−');
/** The value and its unit, kept on one line (a no-break space). */
export const withUnit = (field: string, text: string) => {
  const unit = UNIT_OF[field] ?? '';
  return unit === '' ? text : `${text}\u00a0${unit}`;
};

const STATE_WORDS: Record<string, string> = {
  PRESENT: 'present',
  NOT_PRESENT: 'not present',
  OPEN: 'open',
  CLOSED: 'closed',
  MOTION_DETECTED: 'motion',
  NO_MOTION_DETECTED: 'no motion',
  OCCUPIED: 'occupied',
  NOT_OCCUPIED: 'not occupied',
  OFFLINE: 'offline',
  ONLINE: 'online',
  TOUCHED: 'touched',
};

/** An alert's last value in words, with the unit of its rule's field when known: "9.5 °C", "open". */
export function valueText(field: string | undefined, value: unknown): string {
  if (value === null || value === undefined || value === '') return '—';
  if (typeof value === 'number') return field ? withUnit(field, num(field, value)) : String(value);
  if (typeof value === 'string') return STATE_WORDS[value] ?? value;
  return JSON.stringify(value);
}

export const isDeviceTarget = (targetName: string) => targetName.includes('/devices/');
