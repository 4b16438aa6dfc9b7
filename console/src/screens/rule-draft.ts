// The rule form's draft (rule-form.tsx): the rule as the form holds it (text as typed, rows, levels of actions), read
// from a rule, and read back into the body to send or the first thing wrong with it, with the map from the API's field
// paths to the form's controls. No rendering here, and no import of api.ts (whose router needs a browser):
// test/console/rule-form-errors.test.ts runs the field map against the server's own refusals in Node.
import { type Rule, type RuleTrigger, shownValue } from '../alerts.ts';
import { looksLikeEmail, rowsToRecord, urlProblem, type FieldMap } from '../form-errors.ts';
import { apiValue, DURATION_UNITS, durationSeconds, RANGE_FIELDS, STATE_FIELDS } from '../rule-text.ts';

/** The last segment of a resource name (api.ts's idOf). */
const idOf = (name: string): string => name.slice(name.lastIndexOf('/') + 1);

export interface Duration {
  /** As typed; '' = none. */
  value: string;
  unit: string;
}

export interface ActionDraft {
  key: number;
  type: 'EMAIL' | 'WEBHOOK';
  recipients: string;
  groups: string[];
  subject: string;
  body: string;
  url: string;
  secret: string;
  headers: [string, string][];
}

export interface LevelDraft {
  key: number;
  displayName: string;
  actions: ActionDraft[];
  escalateAfter: Duration;
}

export interface SlotDraft {
  key: number;
  days: string[];
  /** "HH:MM" */
  start: string;
  end: string;
}

export interface Draft {
  displayName: string;
  enabled: boolean;
  field: string;
  rangeType: 'OUTSIDE' | 'WITHIN';
  lower: string;
  upper: string;
  state: string;
  triggerCount: string;
  scope: 'all' | 'devices' | 'labels';
  devices: string[];
  labels: [string, string][];
  triggerDelay: Duration;
  useSchedule: boolean;
  timezone: string;
  slots: SlotDraft[];
  inverse: boolean;
  levels: LevelDraft[];
  resolvedNotifications: boolean;
  reminderNotifications: boolean;
  unacknowledgesAfter: Duration;
  /** Not in the form: kept as read. */
  projectLabels: Record<string, string>;
}

export const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const WEEKDAYS = DAYS.slice(0, 5);

export const PLACEHOLDERS: [string, string][] = [
  ['$value', 'the last value'],
  ['$celsius', 'a temperature in °C'],
  ['$fahrenheit', 'in °F'],
  ['$name', "the device's name"],
  ['$deviceId', "the device's id"],
  ['$target', "the device's or connector's full name"],
  ['$rule', "the rule's name"],
  ['$project', "the project's name"],
  ['$state', 'TRIGGERED, ACKNOWLEDGED or RESOLVED'],
  ['$transition', 'TRIGGERED, ESCALATED, REMINDER, UNACKNOWLEDGED or RESOLVED'],
  ['$level', 'the escalation level, from 1'],
  ['$triggerTime', 'when the alert triggered'],
  ['$time', 'when the notification was made'],
];

const DEFAULT_SUBJECT = '$transition: $rule, $name at $value';
const DEFAULT_BODY =
  'Rule "$rule" in project $project: $name is at $value.\nThe alert triggered at $triggerTime (level $level).';

let nextKey = 0;
const key = () => ++nextKey;

export const newAction = (type: 'EMAIL' | 'WEBHOOK'): ActionDraft => ({
  key: key(),
  type,
  recipients: '',
  groups: [],
  subject: DEFAULT_SUBJECT,
  body: DEFAULT_BODY,
  url: 'https://',
  secret: '',
  headers: [],
});

export const newLevel = (actions: ActionDraft[]): LevelDraft => ({
  key: key(),
  displayName: '',
  actions,
  escalateAfter: { value: '', unit: 'min' },
});

const browserZone = (): string => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
};

export const newSlot = (): SlotDraft => ({ key: key(), days: [...WEEKDAYS], start: '08:00', end: '17:00' });

export const emptyDraft = (): Draft => ({
  displayName: '',
  enabled: true,
  field: 'temperature',
  rangeType: 'OUTSIDE',
  lower: '',
  upper: '',
  state: '',
  triggerCount: '',
  scope: 'all',
  devices: [],
  labels: [],
  triggerDelay: { value: '', unit: 'min' },
  useSchedule: false,
  timezone: browserZone(),
  slots: [newSlot()],
  inverse: false,
  levels: [newLevel([newAction('EMAIL')])],
  resolvedNotifications: true,
  reminderNotifications: false,
  unacknowledgesAfter: { value: '', unit: 'h' },
  projectLabels: {},
});

/** "<n>s" as the largest unit that divides it: 900s → 15 min. */
function durationDraft(d: string | null, unit = 'min'): Duration {
  const s = durationSeconds(d);
  if (s === null) return { value: '', unit };
  if (s > 0 && s % 3600 === 0) return { value: String(s / 3600), unit: 'h' };
  if (s > 0 && s % 60 === 0) return { value: String(s / 60), unit: 'min' };
  return { value: String(s), unit: 's' };
}

export const hhmm = (t: { hour: number; minute: number }) =>
  `${String(t.hour).padStart(2, '0')}:${String(t.minute).padStart(2, '0')}`;

export function draftOf(rule: Rule): Draft {
  const t = rule.trigger;
  const stateField = STATE_FIELDS.find((s) => s[0] === t.field);
  const labels = Object.entries(rule.deviceLabels);
  return {
    displayName: rule.displayName,
    enabled: rule.enabled,
    field: t.field,
    rangeType: t.range?.type === 'OUTSIDE' ? 'OUTSIDE' : 'WITHIN',
    lower: t.range?.lower != null ? String(shownValue(t.field, t.range.lower)) : '',
    upper: t.range?.upper != null ? String(shownValue(t.field, t.range.upper)) : '',
    state: stateField ? ((t[stateField[2]] as string | null) ?? '') : '',
    triggerCount: t.triggerCount > 0 ? String(t.triggerCount) : '',
    scope: rule.devices.length > 0 ? 'devices' : labels.length > 0 ? 'labels' : 'all',
    devices: rule.devices.map(idOf),
    labels,
    triggerDelay: durationDraft(rule.triggerDelay),
    useSchedule: rule.schedule !== null,
    timezone: rule.schedule?.timezone ?? browserZone(),
    slots: rule.schedule
      ? rule.schedule.slots.flatMap((slot) =>
          slot.times.map((time) => ({ key: key(), days: slot.days, start: hhmm(time.start), end: hhmm(time.end) })),
        )
      : [newSlot()],
    inverse: rule.schedule?.inverse ?? false,
    levels: rule.escalationLevels.map((l) => ({
      key: key(),
      displayName: l.displayName,
      escalateAfter: durationDraft(l.escalateAfter),
      actions: l.actions.map((a) => ({
        ...newAction(a.type === 'WEBHOOK' ? 'WEBHOOK' : 'EMAIL'),
        recipients: a.email?.recipients.join(', ') ?? '',
        groups: a.email?.contactGroups ?? [],
        subject: a.email?.subject ?? DEFAULT_SUBJECT,
        body: a.email?.body ?? DEFAULT_BODY,
        url: a.webhook?.url ?? 'https://',
        secret: a.webhook?.signatureSecret ?? '',
        headers: Object.entries(a.webhook?.headers ?? {}),
      })),
    })),
    resolvedNotifications: rule.resolvedNotifications,
    reminderNotifications: rule.reminderNotifications,
    unacknowledgesAfter: durationDraft(rule.unacknowledgesAfter, 'h'),
    projectLabels: rule.projectLabels,
  };
}

// ---- reading the draft: what to send, or what is wrong before sending ----

export type Problem = { field: string; text: string };

export const isRange = (field: string) => RANGE_FIELDS.some((r) => r[0] === field);
export const stateFieldOf = (field: string) => STATE_FIELDS.find((s) => s[0] === field);

function readDuration(d: Duration, field: string, form: HTMLFormElement | null): string | null | Problem {
  const input = form?.querySelector<HTMLInputElement>(`input[name="${field}"]`);
  const text = d.value.trim();
  if (input?.validity.badInput) return { field, text: 'Enter a number.' };
  if (text === '') return null;
  const unit = DURATION_UNITS.find((u) => u[0] === d.unit)?.[2] ?? 1;
  const seconds = Number(text) * unit;
  if (!Number.isFinite(seconds) || seconds < 0) return { field, text: 'Enter a number from 0.' };
  // 1.5 minutes is 90 s; 1.5 seconds is not a whole number of seconds, which the API counts in.
  if (Math.abs(seconds - Math.round(seconds)) > 1e-6) return { field, text: 'Enter a whole number of seconds.' };
  return `${Math.round(seconds)}s`;
}

const isProblem = (v: unknown): v is Problem => typeof v === 'object' && v !== null && 'field' in v;

/** The rule body to send (every field of the form, as it shows), or the first thing wrong with the draft. */
export function readDraft(d: Draft, form: HTMLFormElement | null): { body: Record<string, unknown> } | Problem {
  const badInput = (name: string) =>
    form?.querySelector<HTMLInputElement>(`input[name="${name}"]`)?.validity.badInput ?? false;
  const trigger: Partial<RuleTrigger> = { field: d.field };
  if (isRange(d.field)) {
    const bound = (text: string, name: 'lower' | 'upper'): number | null | Problem => {
      if (badInput(name)) return { field: name, text: 'Enter a number.' };
      const t = text.trim();
      if (t === '') return null;
      const n = Number(t);
      return Number.isFinite(n) ? apiValue(d.field, n) : { field: name, text: 'Enter a number.' };
    };
    const lower = bound(d.lower, 'lower');
    if (isProblem(lower)) return lower;
    const upper = bound(d.upper, 'upper');
    if (isProblem(upper)) return upper;
    if (lower === null && upper === null)
      return { field: 'lower', text: 'Enter a lower limit, an upper limit or both.' };
    if (lower !== null && upper !== null && lower > upper)
      return { field: 'lower', text: 'The lower limit must not be above the upper limit.' };
    trigger.range = { lower, upper, type: d.rangeType };
  } else {
    const s = stateFieldOf(d.field);
    if (s) (trigger as Record<string, unknown>)[s[2]] = d.state || s[3][0]![0];
  }
  if (d.field !== 'dataConnector' && d.triggerCount.trim() !== '') {
    if (badInput('triggerCount')) return { field: 'triggerCount', text: 'Enter a whole number.' };
    trigger.triggerCount = Number(d.triggerCount);
  }
  const deviceRule = d.field !== 'dataConnector';
  let labels: Record<string, string> = {};
  if (deviceRule && (d.scope === 'labels' || (d.scope === 'devices' && d.labels.length > 0))) {
    const read = rowsToRecord(d.labels, 'labels', 'Label');
    if (!('record' in read)) return read;
    labels = read.record;
    if (d.scope === 'labels' && Object.keys(labels).length === 0)
      return { field: 'labels', text: 'Add a label, or choose "All devices".' };
  }
  if (deviceRule && d.scope === 'devices' && d.devices.length === 0)
    return { field: 'devices', text: 'Choose at least one device, or "All devices".' };
  const triggerDelay = readDuration(d.triggerDelay, 'triggerDelay', form);
  if (isProblem(triggerDelay)) return triggerDelay;
  const unacknowledgesAfter = readDuration(d.unacknowledgesAfter, 'unacknowledgesAfter', form);
  if (isProblem(unacknowledgesAfter)) return unacknowledgesAfter;

  const escalationLevels: Record<string, unknown>[] = [];
  for (const [i, l] of d.levels.entries()) {
    if (l.actions.length === 0)
      return { field: `l${i}-add`, text: `Add an e-mail or a webhook to level ${i + 1}, or remove the level.` };
    const escalateAfter = readDuration(l.escalateAfter, `l${i}-after`, form);
    if (isProblem(escalateAfter)) return escalateAfter;
    if (escalateAfter === '0s') return { field: `l${i}-after`, text: 'Enter at least 1 second, or leave it empty.' };
    const actions: Record<string, unknown>[] = [];
    for (const [j, a] of l.actions.entries()) {
      const at = `l${i}a${j}`;
      if (a.type === 'EMAIL') {
        const recipients = a.recipients
          .split(/[\s,;]+/)
          .map((r) => r.trim())
          .filter(Boolean);
        const bad = recipients.find((r) => !looksLikeEmail(r));
        if (bad) return { field: `${at}-recipients`, text: `“${bad}” is not an e-mail address.` };
        if (recipients.length === 0 && a.groups.length === 0)
          return { field: `${at}-recipients`, text: 'Enter at least one e-mail address or choose a contact group.' };
        actions.push({
          type: 'EMAIL',
          email: { recipients, contactGroups: a.groups, subject: a.subject, body: a.body },
        });
      } else {
        const url = a.url.trim();
        const problem = urlProblem(url);
        if (problem) return { field: `${at}-url`, text: problem };
        const headers: Record<string, string> = {};
        for (const [hk, hv] of a.headers) if (hk.trim() !== '') headers[hk.trim()] = hv;
        actions.push({ type: 'WEBHOOK', webhook: { url, headers, signatureSecret: a.secret } });
      }
    }
    escalationLevels.push({ displayName: l.displayName, actions, escalateAfter });
  }

  let schedule: Record<string, unknown> | null = null;
  if (d.useSchedule) {
    const slots = d.slots.map((s) => {
      const [sh, sm] = s.start.split(':').map(Number);
      const [eh, em] = s.end.split(':').map(Number);
      return {
        days: DAYS.filter((day) => s.days.includes(day)),
        times: [{ start: { hour: sh ?? 0, minute: sm ?? 0 }, end: { hour: eh ?? 0, minute: em ?? 0 } }],
      };
    });
    if (slots.length === 0) return { field: 'schedule-add', text: 'Add a time, or turn the schedule off.' };
    const empty = slots.findIndex((s) => s.days.length === 0);
    if (empty >= 0) return { field: `slot${empty}-days`, text: 'Choose at least one day.' };
    schedule = { timezone: d.timezone, slots, inverse: d.inverse };
  }

  return {
    body: {
      displayName: d.displayName.trim(),
      enabled: d.enabled,
      devices: deviceRule && d.scope === 'devices' ? d.devices : [],
      deviceLabels: labels,
      projectLabels: d.projectLabels,
      trigger,
      escalationLevels,
      schedule,
      triggerDelay,
      reminderNotifications: d.reminderNotifications,
      resolvedNotifications: d.resolvedNotifications,
      unacknowledgesAfter,
    },
  };
}

/** Every field the form edits (readDraft's body). */
const RULE_FIELDS = [
  'displayName',
  'enabled',
  'devices',
  'deviceLabels',
  'trigger',
  'escalationLevels',
  'schedule',
  'triggerDelay',
  'reminderNotifications',
  'resolvedNotifications',
  'unacknowledgesAfter',
];

/**
 * The fields of the form's body that differ from `before`, the form's reading of the rule as it was loaded (null when
 * that reading failed: then every field). A save sends only these, so a change made meanwhile elsewhere (another
 * person, the rules page's switch) to a field the form did not change stays.
 */
export function changedFields(before: Record<string, unknown> | null, body: Record<string, unknown>): string[] {
  if (before === null) return RULE_FIELDS;
  // Both bodies come from readDraft, so their keys are in the same order and JSON compares them.
  return RULE_FIELDS.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(body[k]));
}

/** The API's field paths → the form's fields (the `name` of their controls), for the draft's levels and actions. */
export function fieldsOf(d: Draft): FieldMap {
  const map: FieldMap = {
    displayName: 'name',
    trigger: 'field',
    'trigger.field': 'field',
    'trigger.range': 'lower',
    'trigger.range.lower': 'lower',
    'trigger.range.upper': 'upper',
    'trigger.range.type': 'rangeType',
    'trigger.presence': 'state',
    'trigger.motion': 'state',
    'trigger.occupancy': 'state',
    'trigger.contact': 'state',
    'trigger.connection': 'state',
    'trigger.triggerCount': 'triggerCount',
    devices: 'devices',
    deviceLabels: 'labels',
    triggerDelay: 'triggerDelay',
    schedule: 'timezone',
    'schedule.timezone': 'timezone',
    'schedule.slots': 'schedule-add',
    unacknowledgesAfter: 'unacknowledgesAfter',
    escalationLevels: 'l0-add',
  };
  d.slots.forEach((_, i) => {
    map[`schedule.slots[${i}]`] = `slot${i}-start`;
    map[`schedule.slots[${i}].days`] = `slot${i}-days`;
  });
  d.levels.forEach((l, i) => {
    const lp = `escalationLevels[${i}]`;
    map[lp] = `l${i}-add`;
    map[`${lp}.displayName`] = `l${i}-name`;
    map[`${lp}.escalateAfter`] = `l${i}-after`;
    map[`${lp}.actions`] = `l${i}-add`;
    l.actions.forEach((a, j) => {
      const ap = `${lp}.actions[${j}]`;
      const f = `l${i}a${j}`;
      if (a.type === 'EMAIL') {
        map[ap] = `${f}-recipients`;
        map[`${ap}.email`] = `${f}-recipients`;
        map[`${ap}.email.contactGroups`] = `${f}-groups`;
        map[`${ap}.email.subject`] = `${f}-subject`;
        map[`${ap}.email.body`] = `${f}-body`;
      } else {
        map[ap] = `${f}-url`;
        map[`${ap}.webhook`] = `${f}-url`;
        map[`${ap}.webhook.headers`] = `${f}-headers`;
        map[`${ap}.webhook.signatureSecret`] = `${f}-secret`;
      }
    });
  });
  return map;
}
