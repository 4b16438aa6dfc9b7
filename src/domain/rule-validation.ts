// The body of a notification rule (extensions §X5) checked and normalised into what is stored: {displayName, enabled,
// spec: RuleSpec}. Pure: every refusal is a 400 naming the field, thrown before anything is written. What needs the
// store or the delivery rules is the rules service's, from the answer's `webhooks` (URL, headers and secret to check
// and seal) and `contactGroups` (to find in the project's organization); devices are checked there too.
import { badRequest } from './errors.ts';
import { camelPath } from './update-mask.ts';
import { labelMapOf } from './labels.ts';
import { parseContactGroupName, parseDeviceName } from './names.ts';
import { CRITERIA, CRITERIA_OF, type Criterion } from './rule-spec.ts';
import type {
  ActionSpec,
  EmailActionSpec,
  EscalationLevelSpec,
  RangeSpec,
  RuleSpec,
  ScheduleSpec,
  TriggerSpec,
  WebhookActionSpec,
} from './rule-spec.ts';

// ---- limits (docs/alerts.md lists them) ----

export const MAX_RULES_PER_PROJECT = 100;
export const MAX_ESCALATION_LEVELS = 10;
export const MAX_ACTIONS_PER_LEVEL = 20;
export const MAX_RECIPIENTS = 100;
export const MAX_CONTACT_GROUPS_PER_ACTION = 20;
export const MAX_RULE_DEVICES = 1000;
export const MAX_RULE_LABELS = 100;
export const MAX_SCHEDULE_SLOTS = 20;
export const MAX_SLOT_TIMES = 10;
export const MAX_TRIGGER_COUNT = 100;
/** triggerDelay, escalateAfter and unacknowledgesAfter: at most 30 days. */
export const MAX_RULE_DURATION_SECONDS = 30 * 86_400;
/** A rule's or a level's displayName, an e-mail subject. */
export const MAX_RULE_TEXT_LENGTH = 256;
export const MAX_EMAIL_BODY_LENGTH = 10_000;
export const MAX_EMAIL_ADDRESS_LENGTH = 254;

/** Every trigger field: the event types a rule can watch, and our own dataConnector. */
export const TRIGGER_FIELDS: readonly string[] = Object.keys(CRITERIA_OF);

const STATES = {
  presence: ['PRESENT', 'ABSENT'],
  motion: ['MOTION_DETECTED', 'NO_MOTION_DETECTED'],
  occupancy: ['OCCUPIED', 'NOT_OCCUPIED'],
  contact: ['OPEN', 'CLOSED'],
  connection: ['SENSOR_OFFLINE', 'CLOUD_CONNECTOR_OFFLINE'],
} as const;

/** Action types of the API family this service does not execute: refused by name. */
export const UNSUPPORTED_ACTION_TYPES: readonly string[] = [
  'SMS',
  'PHONE_CALL',
  'CORRIGO',
  'SERVICE_CHANNEL',
  'SIGNAL_TOWER',
];
/** The config key of each action type; every other one must be absent (or null). */
const CONFIG_OF: Readonly<Record<string, string>> = {
  SMS: 'sms',
  EMAIL: 'email',
  CORRIGO: 'corrigo',
  SERVICE_CHANNEL: 'serviceChannel',
  WEBHOOK: 'webhook',
  PHONE_CALL: 'phoneCall',
  SIGNAL_TOWER: 'signalTower',
};

export const DAYS: readonly ScheduleSpec['slots'][number]['days'][number][] = [
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
  'Sunday',
];

/** The fields of a rule's body that are written (read-only ones, name, createTime and updateTime, are ignored). */
export const RULE_FIELDS = [
  'enabled',
  'displayName',
  'devices',
  'deviceLabels',
  'projectLabels',
  'trigger',
  'escalationLevels',
  'schedule',
  'triggerDelay',
  'reminderNotifications',
  'resolvedNotifications',
  'unacknowledgesAfter',
  'actions',
] as const;
export type RuleField = (typeof RULE_FIELDS)[number];
const READ_ONLY_FIELDS = new Set(['name', 'createTime', 'updateTime']);
/** update_mask paths below a field: a key of the trigger or of the schedule. */
const SUB_PATHS: Readonly<Record<string, readonly string[]>> = {
  trigger: ['field', 'range', 'presence', 'motion', 'occupancy', 'contact', 'connection', 'triggerCount'],
  schedule: ['timezone', 'slots', 'inverse'],
};

export interface RuleCheckContext {
  /** The rule's project: device names must name it. */
  projectId: string;
  /** Whether an SMTP server is configured (SENSORCLOUD_SMTP_URL): without one, EMAIL actions are refused. */
  emailEnabled: boolean;
}

/** A webhook action as given: its URL, headers and secret are checked (and the secret sealed) by the service. */
export interface CheckedWebhook {
  /** Where it is, for messages: `escalationLevels[0].actions[1].webhook`. */
  field: string;
  /** The action's spec, in `spec`: the service fills url, headers and signatureSecretSealed. */
  spec: WebhookActionSpec;
  url: unknown;
  headers: unknown;
  signatureSecret: unknown;
}

/** A contact group an e-mail action names, to find in the project's organization. */
export interface ContactGroupReference {
  field: string;
  name: string;
  organizationId: string;
  groupId: string;
}

export interface CheckedRule {
  displayName: string;
  enabled: boolean;
  spec: RuleSpec;
  webhooks: CheckedWebhook[];
  contactGroups: ContactGroupReference[];
}

// ---- small checks, each naming its field ----

/** null means absent (contract §1.2); bodies arrive without nulls, a rule merged for PATCH may hold some. */
const given = (v: unknown): boolean => v !== undefined && v !== null;

function objectOf(v: unknown, field: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest(`${field} must be an object`);
  return v as Record<string, unknown>;
}

function arrayOf(v: unknown, field: string, max: number, what: string): unknown[] {
  if (!Array.isArray(v)) throw badRequest(`${field} must be an array of ${what}`);
  if (v.length > max) throw badRequest(`${field}: at most ${max} ${what}`);
  return v;
}

function booleanOf(v: unknown, field: string): boolean {
  if (typeof v !== 'boolean') throw badRequest(`${field} must be true or false`);
  return v;
}

function textOf(v: unknown, field: string, max: number): string {
  if (typeof v !== 'string') throw badRequest(`${field} must be a string`);
  if ([...v].length > max) throw badRequest(`${field} must be at most ${max} characters`);
  return v;
}

/** A whole number of seconds written "<n>s" (no leading zeros, no fraction), from `min` to 30 days; kept as written. */
function durationOf(v: unknown, field: string, min: number): string {
  const m = typeof v === 'string' ? /^(0|[1-9]\d{0,9})s$/.exec(v) : null;
  if (!m) {
    throw badRequest(
      `${field} must be a whole number of seconds written as a string with an "s", such as "3600s"; got ${JSON.stringify(v)}`,
    );
  }
  const seconds = Number(m[1]);
  if (seconds < min || seconds > MAX_RULE_DURATION_SECONDS)
    throw badRequest(`${field} must be from "${min}s" to "${MAX_RULE_DURATION_SECONDS}s" (30 days); got "${v}"`);
  return v as string;
}

const labelsOf = (v: unknown, field: string): Record<string, string> =>
  labelMapOf(Object.entries(objectOf(v, field)), field, MAX_RULE_LABELS);

/**
 * An e-mail address as a notification is sent to it: one mailbox, no display name, nothing that could break out of
 * a header (spaces, commas, angle brackets, quotes, control characters). Lower case, as the API keeps e-mails.
 */
export function emailAddressProblem(v: unknown): string | null {
  if (typeof v !== 'string') return 'must be a string';
  if (v.length > MAX_EMAIL_ADDRESS_LENGTH) return `must be at most ${MAX_EMAIL_ADDRESS_LENGTH} characters`;
  if (
    !/^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/.test(
      v,
    )
  )
    return `is not an e-mail address: ${JSON.stringify(v.slice(0, 64))}`;
  return null;
}

// ---- the parts of a rule ----

function checkTrigger(v: unknown): TriggerSpec {
  if (!given(v)) throw badRequest('trigger is required: {field, and the criteria the field takes}');
  const t = objectOf(v, 'trigger');
  if (!given(t.field)) throw badRequest(`trigger.field is required: one of ${TRIGGER_FIELDS.join(', ')}`);
  if (typeof t.field !== 'string') throw badRequest('trigger.field must be a string');
  const field = t.field;
  if (!Object.hasOwn(CRITERIA_OF, field)) {
    throw badRequest(
      `trigger.field: unknown field ${JSON.stringify(field.slice(0, 64))} (one of ${TRIGGER_FIELDS.join(', ')})`,
    );
  }
  const wants: Criterion | null = CRITERIA_OF[field as keyof typeof CRITERIA_OF];
  for (const c of CRITERIA) {
    if (c === wants || !given(t[c])) continue;
    throw badRequest(
      `trigger.${c} does not apply to field ${field}` +
        (wants === null ? ` (${field} takes no criteria)` : ` (it takes trigger.${wants})`),
    );
  }
  const out: TriggerSpec = { field };
  if (wants === 'range') out.range = checkRange(t.range, field);
  else if (wants !== null) {
    const allowed: readonly string[] = STATES[wants];
    if (!given(t[wants])) throw badRequest(`trigger.${wants} is required for field ${field}: ${allowed.join(' or ')}`);
    if (typeof t[wants] !== 'string' || !allowed.includes(t[wants] as string))
      throw badRequest(`trigger.${wants} must be ${allowed.join(' or ')}; got ${JSON.stringify(t[wants])}`);
    (out as unknown as Record<string, unknown>)[wants] = t[wants];
  }
  if (given(t.triggerCount)) {
    const n = t.triggerCount;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_TRIGGER_COUNT)
      throw badRequest(
        `trigger.triggerCount must be a whole number from 0 to ${MAX_TRIGGER_COUNT} (0 and 1: the first event)`,
      );
    // 0 and absent read back as 0; 1 and more as written.
    if (n > 0) out.triggerCount = n;
  }
  return out;
}

function checkRange(v: unknown, field: string): RangeSpec {
  if (!given(v)) throw badRequest(`trigger.range is required for field ${field}: {lower, upper, type}`);
  const r = objectOf(v, 'trigger.range');
  const bound = (key: 'lower' | 'upper'): number | undefined => {
    const b = r[key];
    if (!given(b)) return undefined;
    if (typeof b !== 'number' || !Number.isFinite(b)) throw badRequest(`trigger.range.${key} must be a number`);
    return b;
  };
  const lower = bound('lower');
  const upper = bound('upper');
  if (lower === undefined && upper === undefined)
    throw badRequest('trigger.range needs a lower bound, an upper bound or both');
  if (lower !== undefined && upper !== undefined && lower > upper)
    throw badRequest(`trigger.range.lower (${lower}) must not be above trigger.range.upper (${upper})`);
  let type: RangeSpec['type'] = 'WITHIN';
  if (given(r.type) && r.type !== '') {
    if (r.type !== 'WITHIN' && r.type !== 'OUTSIDE')
      throw badRequest(`trigger.range.type must be WITHIN or OUTSIDE; got ${JSON.stringify(r.type)}`);
    type = r.type;
  }
  if (given(r.filter)) throw badRequest('trigger.range.filter is not supported: leave it out (or null)');
  const out: RangeSpec = { type };
  if (lower !== undefined) out.lower = lower;
  if (upper !== undefined) out.upper = upper;
  return out;
}

function checkDevices(v: unknown, projectId: string): string[] {
  const list = arrayOf(v, 'devices', MAX_RULE_DEVICES, 'devices');
  const out: string[] = [];
  list.forEach((d, i) => {
    const parsed = typeof d === 'string' ? parseDeviceName(d, projectId) : null;
    if (parsed === null || parsed.device.includes(':'))
      throw badRequest(`devices[${i}] must be a device name projects/{p}/devices/{d} or a device id`);
    if (parsed.project !== projectId) throw badRequest(`devices[${i}]: ${d} is not a device of projects/${projectId}`);
    if (!out.includes(parsed.device)) out.push(parsed.device);
  });
  return out;
}

function checkEmail(v: unknown, field: string, groups: ContactGroupReference[]): EmailActionSpec {
  if (!given(v))
    throw badRequest(`${field} is required for an EMAIL action: {recipients, contactGroups, subject, body}`);
  const e = objectOf(v, field);
  const recipients = (
    given(e.recipients) ? arrayOf(e.recipients, `${field}.recipients`, MAX_RECIPIENTS, 'e-mail addresses') : []
  ).map((r, i) => {
    const problem = emailAddressProblem(r);
    if (problem) throw badRequest(`${field}.recipients[${i}] ${problem}`);
    return (r as string).toLowerCase();
  });
  const contactGroups = (
    given(e.contactGroups)
      ? arrayOf(e.contactGroups, `${field}.contactGroups`, MAX_CONTACT_GROUPS_PER_ACTION, 'contact group names')
      : []
  ).map((g, i) => {
    const at = `${field}.contactGroups[${i}]`;
    const parsed = parseContactGroupName(g);
    if (!parsed) throw badRequest(`${at} must be a contact group name organizations/{o}/contactGroups/{g}`);
    groups.push({ field: at, name: g as string, organizationId: parsed.organization, groupId: parsed.group });
    return g as string;
  });
  if (recipients.length === 0 && contactGroups.length === 0)
    throw badRequest(`${field} needs at least one address in recipients or one group in contactGroups`);
  const subject = given(e.subject) ? textOf(e.subject, `${field}.subject`, MAX_RULE_TEXT_LENGTH) : '';
  // The subject becomes a header line of the message.
  if (/[\u0000-\u001f\u007f]/.test(subject))
    throw badRequest(`${field}.subject must not contain line breaks or other control characters`);
  const body = given(e.body) ? textOf(e.body, `${field}.body`, MAX_EMAIL_BODY_LENGTH) : '';
  return { recipients, contactGroups, subject, body };
}

function checkAction(
  v: unknown,
  field: string,
  ctx: RuleCheckContext,
  webhooks: CheckedWebhook[],
  groups: ContactGroupReference[],
): ActionSpec {
  const a = objectOf(v, field);
  if (!given(a.type) || a.type === '') throw badRequest(`${field}.type is required: EMAIL or WEBHOOK`);
  const type = a.type;
  if (typeof type === 'string' && UNSUPPORTED_ACTION_TYPES.includes(type))
    throw badRequest(`${field}.type: ${type} actions are not supported by this service; use EMAIL or WEBHOOK`);
  if (type !== 'EMAIL' && type !== 'WEBHOOK')
    throw badRequest(`${field}.type must be EMAIL or WEBHOOK; got ${JSON.stringify(type)}`);
  for (const [t, key] of Object.entries(CONFIG_OF)) {
    if (t !== type && given(a[key])) throw badRequest(`${field}.${key} must be null for a ${type} action`);
  }
  if (type === 'EMAIL') {
    if (!ctx.emailEnabled)
      throw badRequest(
        `${field}: EMAIL actions need an SMTP server, and none is configured: set SENSORCLOUD_SMTP_URL (and SENSORCLOUD_SMTP_FROM) for the service`,
      );
    return { type, email: checkEmail(a.email, `${field}.email`, groups) };
  }
  if (!given(a.webhook))
    throw badRequest(`${field}.webhook is required for a WEBHOOK action: {url, headers, signatureSecret}`);
  const w = objectOf(a.webhook, `${field}.webhook`);
  const spec: WebhookActionSpec = { url: '', headers: {}, signatureSecretSealed: '' };
  webhooks.push({
    field: `${field}.webhook`,
    spec,
    url: w.url,
    headers: given(w.headers) ? w.headers : {},
    signatureSecret: given(w.signatureSecret) ? w.signatureSecret : '',
  });
  return { type, webhook: spec };
}

function checkLevel(
  v: unknown,
  field: string,
  ctx: RuleCheckContext,
  webhooks: CheckedWebhook[],
  groups: ContactGroupReference[],
): EscalationLevelSpec {
  const l = objectOf(v, field);
  const displayName = given(l.displayName) ? textOf(l.displayName, `${field}.displayName`, MAX_RULE_TEXT_LENGTH) : '';
  const actions = given(l.actions) ? arrayOf(l.actions, `${field}.actions`, MAX_ACTIONS_PER_LEVEL, 'actions') : [];
  if (actions.length === 0) throw badRequest(`${field}.actions: at least one action is required`);
  const out: EscalationLevelSpec = {
    displayName,
    actions: actions.map((a, i) => checkAction(a, `${field}.actions[${i}]`, ctx, webhooks, groups)),
  };
  if (given(l.escalateAfter)) out.escalateAfter = durationOf(l.escalateAfter, `${field}.escalateAfter`, 1);
  return out;
}

function checkTimeOfDay(v: unknown, field: string): { hour: number; minute: number } {
  const t = objectOf(v, field);
  const part = (key: 'hour' | 'minute', max: number): number => {
    const n = given(t[key]) ? t[key] : 0;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max)
      throw badRequest(`${field}.${key} must be a whole number from 0 to ${max}`);
    return n;
  };
  return { hour: part('hour', 23), minute: part('minute', 59) };
}

/** Whether the IANA zone is known to this Node (its ICU data). */
function knownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat(undefined, { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function checkSchedule(v: unknown): ScheduleSpec {
  const s = objectOf(v, 'schedule');
  if (!given(s.timezone) || s.timezone === '')
    throw badRequest('schedule.timezone is required: an IANA time zone such as Europe/Oslo or UTC');
  if (typeof s.timezone !== 'string' || !knownTimeZone(s.timezone))
    throw badRequest(
      `schedule.timezone: unknown time zone ${JSON.stringify(s.timezone)} (an IANA name such as Europe/Oslo or UTC)`,
    );
  const slots = given(s.slots) ? arrayOf(s.slots, 'schedule.slots', MAX_SCHEDULE_SLOTS, 'slots') : [];
  return {
    timezone: s.timezone,
    slots: slots.map((raw, i) => {
      const field = `schedule.slots[${i}]`;
      const slot = objectOf(raw, field);
      const days = given(slot.days) ? arrayOf(slot.days, `${field}.days`, 7 * 4, 'days') : [];
      // None named: every day (as the infrastructure client documents it).
      days.forEach((d, j) => {
        if (typeof d !== 'string' || !(DAYS as readonly string[]).includes(d))
          throw badRequest(`${field}.days[${j}] must be one of ${DAYS.join(', ')}; got ${JSON.stringify(d)}`);
      });
      const times = given(slot.times) ? arrayOf(slot.times, `${field}.times`, MAX_SLOT_TIMES, 'times') : [];
      if (times.length === 0)
        throw badRequest(
          `${field}.times: give at least one {start, end} (start 00:00 and end 00:00 is the whole day; an end at or before the start runs past midnight)`,
        );
      return {
        days: days as ScheduleSpec['slots'][number]['days'],
        times: times.map((rawTime, j) => {
          const at = `${field}.times[${j}]`;
          const t = objectOf(rawTime, at);
          if (!given(t.start) || !given(t.end)) throw badRequest(`${at} needs start and end: {hour, minute} each`);
          return { start: checkTimeOfDay(t.start, `${at}.start`), end: checkTimeOfDay(t.end, `${at}.end`) };
        }),
      };
    }),
    inverse: given(s.inverse) ? booleanOf(s.inverse, 'schedule.inverse') : false,
  };
}

const nonEmptyArray = (v: unknown): boolean => Array.isArray(v) && v.length > 0;

// ---- the rule ----

/**
 * Checks a whole rule body (create, PUT, or a PATCH merged with the stored rule) and normalises it. Absent or null
 * fields take their defaults: enabled true, no devices or labels, no schedule, no trigger delay, no reminders or
 * resolved notifications, unacknowledgesAfter 14400s. The deprecated `actions` become the single escalation level
 * when `escalationLevels` is empty.
 */
export function checkRuleBody(body: unknown, ctx: RuleCheckContext): CheckedRule {
  const b = objectOf(body ?? {}, 'the request body');
  const webhooks: CheckedWebhook[] = [];
  const contactGroups: ContactGroupReference[] = [];
  const displayName = given(b.displayName) ? textOf(b.displayName, 'displayName', MAX_RULE_TEXT_LENGTH) : '';
  const enabled = given(b.enabled) ? booleanOf(b.enabled, 'enabled') : true;
  const trigger = checkTrigger(b.trigger);
  const devices = given(b.devices) ? checkDevices(b.devices, ctx.projectId) : [];
  const deviceLabels = given(b.deviceLabels) ? labelsOf(b.deviceLabels, 'deviceLabels') : {};
  const projectLabels = given(b.projectLabels) ? labelsOf(b.projectLabels, 'projectLabels') : {};
  if (trigger.field === 'dataConnector' && (devices.length > 0 || Object.keys(deviceLabels).length > 0))
    throw badRequest(
      'devices and deviceLabels do not apply to a dataConnector rule (it watches every connector of the project)',
    );

  let escalationLevels: EscalationLevelSpec[];
  if (given(b.escalationLevels) && nonEmptyArray(b.escalationLevels)) {
    if (nonEmptyArray(b.actions))
      throw badRequest('give escalationLevels or the deprecated actions, not both (actions become the single level)');
    escalationLevels = arrayOf(b.escalationLevels, 'escalationLevels', MAX_ESCALATION_LEVELS, 'escalation levels').map(
      (l, i) => checkLevel(l, `escalationLevels[${i}]`, ctx, webhooks, contactGroups),
    );
  } else if (given(b.actions) && nonEmptyArray(b.actions)) {
    // The deprecated form: one level of these actions, named as given in messages.
    const actions = arrayOf(b.actions, 'actions', MAX_ACTIONS_PER_LEVEL, 'actions');
    escalationLevels = [
      {
        displayName: '',
        actions: actions.map((a, i) => checkAction(a, `actions[${i}]`, ctx, webhooks, contactGroups)),
      },
    ];
  } else {
    if (given(b.escalationLevels))
      arrayOf(b.escalationLevels, 'escalationLevels', MAX_ESCALATION_LEVELS, 'escalation levels');
    throw badRequest('escalationLevels: at least one escalation level with at least one action is required');
  }

  const spec: RuleSpec = {
    devices,
    deviceLabels,
    projectLabels,
    trigger,
    escalationLevels,
    reminderNotifications: given(b.reminderNotifications)
      ? booleanOf(b.reminderNotifications, 'reminderNotifications')
      : false,
    resolvedNotifications: given(b.resolvedNotifications)
      ? booleanOf(b.resolvedNotifications, 'resolvedNotifications')
      : false,
  };
  if (given(b.unacknowledgesAfter))
    spec.unacknowledgesAfter = durationOf(b.unacknowledgesAfter, 'unacknowledgesAfter', 0);
  if (given(b.schedule)) spec.schedule = checkSchedule(b.schedule);
  if (given(b.triggerDelay)) spec.triggerDelay = durationOf(b.triggerDelay, 'triggerDelay', 0);
  return { displayName, enabled, spec, webhooks, contactGroups };
}

// ---- PATCH ----

/**
 * A PATCH body applied to the stored rule (as read, secrets included): with `mask` (update_mask) the listed fields
 * take the body's value, or their default when the body has none; without it every field present replaces the
 * stored one whole (trigger and schedule included). A mask path may also name one key of the trigger or schedule
 * (`trigger.range`, `schedule.timezone`). Returns the merged body, to check as a whole, and the fields it changes.
 */
export function mergeRulePatch(
  current: Record<string, unknown>,
  body: Record<string, unknown>,
  rawMask: ReadonlySet<string> | null,
): { merged: Record<string, unknown>; touched: Set<RuleField> } {
  const merged: Record<string, unknown> = { ...current };
  const touched = new Set<RuleField>();
  const isField = (k: string): k is RuleField => (RULE_FIELDS as readonly string[]).includes(k);
  if (rawMask === null) {
    for (const key of Object.keys(body)) {
      if (!isField(key) || !given(body[key])) continue;
      merged[key] = body[key];
      touched.add(key);
    }
  } else {
    for (const raw of rawMask) {
      const path = camelPath(raw);
      const [top, sub, ...rest] = path.split('.');
      if (rest.length === 0 && top !== undefined && isField(top) && sub === undefined) {
        merged[top] = body[top];
        touched.add(top);
      } else if (rest.length === 0 && top !== undefined && sub !== undefined && SUB_PATHS[top]?.includes(sub)) {
        const parent = given(body[top]) && typeof body[top] === 'object' ? (body[top] as Record<string, unknown>) : {};
        const base =
          given(merged[top]) && typeof merged[top] === 'object' ? (merged[top] as Record<string, unknown>) : {};
        merged[top] = { ...base, [sub]: parent[sub] };
        touched.add(top as RuleField);
      } else if (!READ_ONLY_FIELDS.has(path)) {
        const allowed = [
          ...RULE_FIELDS,
          ...Object.entries(SUB_PATHS).flatMap(([t, subs]) => subs.map((s) => `${t}.${s}`)),
        ];
        throw badRequest(`update_mask: unknown field "${raw}" (allowed: ${allowed.join(', ')})`);
      }
    }
  }
  // The deprecated actions replace the levels they were read as.
  if (touched.has('actions') && nonEmptyArray(merged.actions) && !touched.has('escalationLevels')) {
    merged.escalationLevels = [];
    touched.add('escalationLevels');
  }
  if (touched.has('escalationLevels') && !touched.has('actions')) merged.actions = [];
  return { merged, touched };
}
