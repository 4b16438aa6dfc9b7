// A notification rule's settings as stored (extensions §X5; RuleRecord.spec is this as JSON text): everything of the
// wire Rule but its name, enabled and displayName, checked and normalised by the rules service, and read back by the
// API exactly as written (durations keep their "<n>s" text: the infrastructure client compares them). The alerts
// engine reads it through ruleTimes() for the durations in micros.

/** A range's criteria (bounds inclusive; a missing bound is unbounded on that side, at least one is given). */
export interface RangeSpec {
  lower?: number;
  upper?: number;
  /** WITHIN (default): the condition holds while the value is within; OUTSIDE: while it is not. */
  type: 'WITHIN' | 'OUTSIDE';
}

export interface TriggerSpec {
  /** An event type (temperature, humidity, co2, pressure, objectPresent, waterPresent, motion, deskOccupancy,
   * contact, touch, connectionStatus), `relativeHumidity` (the infrastructure client's name for humidity, kept as
   * written), or our own `dataConnector`. */
  field: string;
  range?: RangeSpec;
  presence?: 'PRESENT' | 'ABSENT';
  motion?: 'MOTION_DETECTED' | 'NO_MOTION_DETECTED';
  occupancy?: 'OCCUPIED' | 'NOT_OCCUPIED';
  contact?: 'OPEN' | 'CLOSED';
  connection?: 'SENSOR_OFFLINE' | 'CLOUD_CONNECTOR_OFFLINE';
  /** Events that must meet the condition in a row before it triggers (1 when absent or 0). */
  triggerCount?: number;
}

export interface EmailActionSpec {
  recipients: string[];
  /** Contact group resource names (organizations/{o}/contactGroups/{g}): expanded to their contacts' addresses. */
  contactGroups: string[];
  subject: string;
  body: string;
}

export interface WebhookActionSpec {
  url: string;
  headers: Record<string, string>;
  /** Sealed with the secret box, as a connector's; '' = unsigned. The API shows it as the connector's secret is. */
  signatureSecretSealed: string;
}

export interface ActionSpec {
  type: 'EMAIL' | 'WEBHOOK';
  email?: EmailActionSpec;
  webhook?: WebhookActionSpec;
}

export interface EscalationLevelSpec {
  displayName: string;
  actions: ActionSpec[];
  /** "<n>s" as written, or absent: the alert stays at this level. */
  escalateAfter?: string;
}

export interface ScheduleSpec {
  /** IANA time zone. */
  timezone: string;
  slots: Array<{
    /** Empty: every day. */
    days: Array<'Monday' | 'Tuesday' | 'Wednesday' | 'Thursday' | 'Friday' | 'Saturday' | 'Sunday'>;
    times: Array<{ start: { hour: number; minute: number }; end: { hour: number; minute: number } }>;
  }>;
  /** Evaluate outside the slots instead of inside them. */
  inverse: boolean;
}

export interface RuleSpec {
  /** Device ids; empty = every device of the project. */
  devices: string[];
  /** All must match; a value '' matches the key alone. */
  deviceLabels: Record<string, string>;
  /** Accepted and stored, not used. */
  projectLabels: Record<string, string>;
  trigger: TriggerSpec;
  escalationLevels: EscalationLevelSpec[];
  schedule?: ScheduleSpec;
  /** "<n>s" as written, or absent (a device rule then triggers at once; a dataConnector rule after 15 minutes). */
  triggerDelay?: string;
  reminderNotifications: boolean;
  resolvedNotifications: boolean;
  /** "<n>s" as written, or absent: DEFAULT_UNACKNOWLEDGES_AFTER (read back absent, as the infrastructure client sent it). */
  unacknowledgesAfter?: string;
}

/** The criteria a trigger may carry. */
export type Criterion = 'range' | 'presence' | 'motion' | 'occupancy' | 'contact' | 'connection';
export const CRITERIA: readonly Criterion[] = ['range', 'presence', 'motion', 'occupancy', 'contact', 'connection'];

/**
 * What each trigger field takes as its criteria: a range, one state, or nothing (touch, dataConnector); read by the
 * rules' validation and by the CLI's flags alike.
 */
export const CRITERIA_OF = {
  temperature: 'range',
  humidity: 'range',
  // The infrastructure client's name for humidity: kept as written, read from humidity events (rule-evaluation.ts).
  relativeHumidity: 'range',
  co2: 'range',
  pressure: 'range',
  objectPresent: 'presence',
  waterPresent: 'presence',
  motion: 'motion',
  deskOccupancy: 'occupancy',
  contact: 'contact',
  connectionStatus: 'connection',
  touch: null,
  dataConnector: null,
} as const satisfies Record<string, Criterion | null>;

export const DEFAULT_UNACKNOWLEDGES_AFTER = '14400s';
/** A dataConnector rule's trigger delay when it has none (extensions §X5). */
export const DEFAULT_CONNECTOR_TRIGGER_DELAY = '900s';

/** "<n>s" (whole seconds) in micros; null for anything else. */
export function durationMicros(text: string | undefined): number | null {
  if (text === undefined) return null;
  const m = /^(\d{1,10})s$/.exec(text);
  return m ? Number(m[1]) * 1_000_000 : null;
}
