// The options of `rules create|update` as a notification rule's body (extensions §X5, docs/alerts.md): the trigger
// from --field and a range (--outside 2..8, --within, --above, --below) or a state (--state, --connection), the
// scope, durations ("15m" → "900s"), and one escalation level from --email, --contact-group and --webhook. For an
// update, the body and update_mask of only what was given: a trigger key alone when the field stays, the first level
// edited in place (the others kept as read). Only values that cannot be read stop here (usage errors, exit 2);
// whether a value is allowed is the service's to say (its 400 names the field).
import { readFileSync } from 'node:fs';
import { CRITERIA, CRITERIA_OF, type Criterion } from '../domain/rule-spec.ts';
import type { EscalationLevel, Rule, RuleAction, RuleInput, RuleTrigger } from '../wire/rules.ts';
import { parseDuration, parseHeaders, parseInteger, parseNumber } from './arguments.ts';
import { UsageError } from './errors.ts';
import { REDACTED } from './output.ts';

/** commander's values of the rule options (devices and contact groups already resolved to full names). */
export interface RuleOptions {
  name?: string;
  displayName?: string;
  field?: string;
  outside?: string;
  within?: string;
  above?: string;
  below?: string;
  state?: string;
  connection?: string;
  triggerCount?: string;
  device?: string[];
  allDevices?: boolean;
  label?: string[];
  clearLabels?: boolean;
  triggerDelay?: string;
  email?: string[];
  contactGroup?: string[];
  subject?: string;
  body?: string;
  removeEmail?: boolean;
  webhook?: string[];
  webhookSecret?: string;
  webhookHeader?: string[];
  removeWebhook?: boolean;
  escalateAfter?: string;
  resolvedNotifications?: boolean;
  reminderNotifications?: boolean;
  unacknowledgesAfter?: string;
  scheduleFile?: string;
  clearSchedule?: boolean;
  fromFile?: string;
  disabled?: boolean;
}

/** The trigger fields and the criterion each takes (docs/alerts.md, triggers); touch and dataConnector take none. */
export const CRITERION_OF: Readonly<Record<string, Criterion | null>> = CRITERIA_OF;

/** The field a state names when only one field takes it (PRESENT and ABSENT are objectPresent's and waterPresent's). */
const FIELD_OF_STATE: Readonly<Record<string, string>> = {
  OPEN: 'contact',
  CLOSED: 'contact',
  MOTION_DETECTED: 'motion',
  NO_MOTION_DETECTED: 'motion',
  OCCUPIED: 'deskOccupancy',
  NOT_OCCUPIED: 'deskOccupancy',
  SENSOR_OFFLINE: 'connectionStatus',
  CLOUD_CONNECTOR_OFFLINE: 'connectionStatus',
};

const RANGE_OPTIONS = ['outside', 'within', 'above', 'below'] as const;
const flag = (option: string) => `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

export interface RangeInput {
  lower?: number;
  upper?: number;
  type: 'WITHIN' | 'OUTSIDE';
}

/** A bound of a range: a plain decimal number (`-5.5`, `1e3`), not `.5` (which `2...5` would make one). */
const BOUND = /^[-+]?\d+(\.\d+)?(e[-+]?\d+)?$/i;

/** `2..8`, `..8`, `2..` (a missing bound is unbounded); negative and decimal numbers too: `-5.5..0`. */
export function parseRange(value: string, option: string, type: 'WITHIN' | 'OUTSIDE'): RangeInput {
  const parts = value.split('..').map((p) => p.trim());
  const [lower, upper] = parts;
  if (
    parts.length !== 2 ||
    (lower === '' && upper === '') ||
    (lower !== '' && !BOUND.test(lower!)) ||
    (upper !== '' && !BOUND.test(upper!))
  )
    throw new UsageError(`${option} must be a range lower..upper (2..8, ..8 or 2..), got "${value}"`);
  const range: RangeInput = { type };
  if (lower !== '') range.lower = parseNumber(lower!, option);
  if (upper !== '') range.upper = parseNumber(upper!, option);
  return range;
}

/**
 * The range of --outside, --within, --above or --below (one of them). `--above 8` is the condition "above 8" (8
 * itself not): outside the range up to 8; `--below 2` outside the range from 2.
 */
export function rangeOf(o: RuleOptions): RangeInput | undefined {
  const given = RANGE_OPTIONS.filter((k) => o[k] !== undefined);
  if (given.length > 1) throw new UsageError(`give one of ${given.map(flag).join(', ')}, not several`);
  if (o.outside !== undefined) return parseRange(o.outside, '--outside', 'OUTSIDE');
  if (o.within !== undefined) return parseRange(o.within, '--within', 'WITHIN');
  if (o.above !== undefined) return { upper: parseNumber(o.above, '--above'), type: 'OUTSIDE' };
  if (o.below !== undefined) return { lower: parseNumber(o.below, '--below'), type: 'OUTSIDE' };
  return undefined;
}

/** A duration option as the API writes it: `15m` → `"900s"`. */
export const ruleDuration = (value: string, option: string): string => `${parseDuration(value, option)}s`;

const hasTriggerOptions = (o: RuleOptions) =>
  o.field !== undefined ||
  o.state !== undefined ||
  o.connection !== undefined ||
  o.triggerCount !== undefined ||
  RANGE_OPTIONS.some((k) => o[k] !== undefined);

/** The field the options name: --field, connectionStatus for --connection, or the one field a --state belongs to. */
function fieldOf(o: RuleOptions): string | undefined {
  if (o.connection !== undefined) {
    if (o.state !== undefined) throw new UsageError('give --state or --connection, not both');
    if (o.field !== undefined && o.field !== 'connectionStatus')
      throw new UsageError(`--connection goes with --field connectionStatus, not ${o.field}`);
    return 'connectionStatus';
  }
  return o.field;
}

/** The criterion the options give for `field` (key and value), or null when they give none. */
function criterionOf(field: string, o: RuleOptions): [Criterion, unknown] | null {
  const range = rangeOf(o);
  const state = (o.connection ?? o.state)?.toUpperCase();
  const known = Object.hasOwn(CRITERION_OF, field);
  const criterion = known ? CRITERION_OF[field]! : undefined;
  if (range && state !== undefined) throw new UsageError('give a range or --state, not both');
  if (range) {
    // An unknown field is sent as it is, for the service to say what is wrong with it.
    if (known && criterion !== 'range')
      throw new UsageError(
        `${RANGE_OPTIONS.filter((k) => o[k] !== undefined).map(flag)[0]} does not apply to ${field}: ${criterionHelp(field)}`,
      );
    return ['range', range];
  }
  if (state !== undefined) {
    if (!known) throw new UsageError(`--state: no state criterion is known for --field ${field}`);
    if (criterion === undefined || criterion === 'range' || criterion === null)
      throw new UsageError(`--state does not apply to ${field}: ${criterionHelp(field)}`);
    return [criterion, state];
  }
  return null;
}

function criterionHelp(field: string): string {
  const c = CRITERION_OF[field];
  if (c === 'range') return 'it takes --outside, --within, --above or --below';
  if (c === null) return 'it takes no criteria';
  return `it takes --state (${field === 'connectionStatus' ? 'or --connection' : 'its states'})`;
}

/**
 * The trigger of `create`: from the options, else `base` (the --from-file body's). The trigger options replace
 * `base` whole, but --trigger-count alone changes only its count, and the field may come from it.
 */
export function createTrigger(
  o: RuleOptions,
  base: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!hasTriggerOptions(o)) return base;
  const count = o.triggerCount === undefined ? undefined : parseInteger(o.triggerCount, '--trigger-count');
  let field = fieldOf(o);
  const state = o.state?.toUpperCase();
  if (field === undefined && state !== undefined) {
    field = FIELD_OF_STATE[state];
    if (field === undefined && typeof base?.field !== 'string')
      throw new UsageError(
        state === 'PRESENT' || state === 'ABSENT'
          ? `give --field objectPresent or --field waterPresent with --state ${state}`
          : `give --field with --state ${o.state}`,
      );
  }
  field ??= typeof base?.field === 'string' ? base.field : undefined;
  if (field === undefined)
    throw new UsageError('give --field: what the rule watches (temperature, contact, connectionStatus, …)');
  const criterion = criterionOf(field, o);
  if (criterion === null && o.field === undefined && base !== undefined && count !== undefined)
    return { ...base, triggerCount: count };
  return {
    field,
    ...(criterion ? { [criterion[0]]: criterion[1] } : {}),
    ...(count !== undefined ? { triggerCount: count } : {}),
  };
}

/**
 * An update's trigger: the keys the options change and their update_mask paths. While the field stays, only the
 * criterion given (`trigger.range`) and the count; a new field (--field, or --connection on another field) replaces
 * every criterion, so none of the old field's is left behind.
 */
export function updateTrigger(
  o: RuleOptions,
  current: RuleTrigger,
): { trigger: Record<string, unknown>; mask: string[] } {
  if (!hasTriggerOptions(o)) return { trigger: {}, mask: [] };
  const trigger: Record<string, unknown> = {};
  const mask: string[] = [];
  const field = fieldOf(o) ?? current.field;
  const criterion = criterionOf(field, o);
  if (o.field !== undefined || field !== current.field) {
    trigger.field = field;
    mask.push('trigger.field', ...CRITERIA.map((c) => `trigger.${c}`));
  } else if (criterion) mask.push(`trigger.${criterion[0]}`);
  if (criterion) trigger[criterion[0]] = criterion[1];
  if (o.triggerCount !== undefined) {
    trigger.triggerCount = parseInteger(o.triggerCount, '--trigger-count');
    mask.push('trigger.triggerCount');
  }
  return { trigger, mask };
}

/** `key=value` → that value; `key` or `key=` → "" (any value). Built with fromEntries so any key reaches the service. */
export function parseLabels(values: readonly string[] | undefined): Record<string, string> {
  return Object.fromEntries(
    (values ?? []).map((v) => {
      const eq = v.indexOf('=');
      const key = eq < 0 ? v : v.slice(0, eq);
      if (key.trim() === '') throw new UsageError(`--label must be key=value or key, got "${v}"`);
      return [key, eq < 0 ? '' : v.slice(eq + 1)];
    }),
  );
}

/** A JSON file (`-`: standard input) holding an object. */
export function readJsonObject(path: string, option: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (err) {
    throw new UsageError(
      `${option}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${option}: ${path} is not JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`${option}: ${path} must hold a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * A rule body read from a file must not carry a secret or header value as `rules get` prints them: sent back, the
 * text `<redacted>` would become the secret.
 */
export function refuseRedacted(body: Record<string, unknown>, option: string): void {
  const check = (actions: unknown, where: string) => {
    if (!Array.isArray(actions)) return;
    actions.forEach((a, i) => {
      const w = (a as { webhook?: { signatureSecret?: unknown; headers?: Record<string, unknown> } } | null)?.webhook;
      if (!w || typeof w !== 'object') return;
      const path = `${where}[${i}].webhook`;
      if (w.signatureSecret === REDACTED)
        throw new UsageError(
          `${option}: ${path}.signatureSecret is ${REDACTED} (as the CLI prints it): write the secret, or "" for unsigned`,
        );
      for (const [k, v] of Object.entries(w.headers ?? {}))
        if (v === REDACTED)
          throw new UsageError(
            `${option}: ${path}.headers.${k} is ${REDACTED} (as the CLI prints it): write its value`,
          );
    });
  };
  check(body.actions, 'actions');
  if (Array.isArray(body.escalationLevels))
    body.escalationLevels.forEach((l, i) =>
      check((l as { actions?: unknown } | null)?.actions, `escalationLevels[${i}].actions`),
    );
}

const emailTouched = (o: RuleOptions) =>
  o.email !== undefined || o.contactGroup !== undefined || o.subject !== undefined || o.body !== undefined;
const webhookTouched = (o: RuleOptions) =>
  o.webhook !== undefined || o.webhookSecret !== undefined || o.webhookHeader !== undefined;
const levelTouched = (o: RuleOptions) =>
  emailTouched(o) ||
  webhookTouched(o) ||
  o.removeEmail === true ||
  o.removeWebhook === true ||
  o.escalateAfter !== undefined;

/** --escalate-after: `0` is none (the alert stays at its level). */
const escalateAfterOf = (o: RuleOptions): string | null =>
  o.escalateAfter === undefined || parseDuration(o.escalateAfter, '--escalate-after') === 0
    ? null
    : ruleDuration(o.escalateAfter, '--escalate-after');

const emailAction = (email: NonNullable<RuleAction['email']>): Partial<RuleAction> => ({ type: 'EMAIL', email });
const webhookAction = (webhook: NonNullable<RuleAction['webhook']>): Partial<RuleAction> => ({
  type: 'WEBHOOK',
  webhook,
});

/** The single escalation level of `create`, or undefined when no action option was given. */
export function createLevel(o: RuleOptions): Record<string, unknown> | undefined {
  if (o.removeEmail || o.removeWebhook) throw new UsageError('--remove-email and --remove-webhook are for update');
  if (!levelTouched(o)) return undefined;
  const actions: Array<Partial<RuleAction>> = [];
  if (emailTouched(o)) {
    if (o.email === undefined && o.contactGroup === undefined)
      throw new UsageError('--subject and --body go with --email or --contact-group');
    actions.push(
      emailAction({
        recipients: o.email ?? [],
        contactGroups: o.contactGroup ?? [],
        subject: o.subject ?? '',
        body: o.body ?? '',
      }),
    );
  }
  if (webhookTouched(o)) {
    if (o.webhook === undefined) throw new UsageError('--webhook-secret and --webhook-header go with --webhook');
    const headers = parseHeaders(o.webhookHeader);
    for (const url of o.webhook) actions.push(webhookAction({ url, headers, signatureSecret: o.webhookSecret ?? '' }));
  }
  if (actions.length === 0) throw new UsageError('--escalate-after goes with --email, --contact-group or --webhook');
  const escalateAfter = escalateAfterOf(o);
  return { displayName: '', actions, ...(escalateAfter ? { escalateAfter } : {}) };
}

/**
 * An update's escalation levels: the first one edited in place, the others as they are. --email and --contact-group
 * replace the level's e-mail actions by one (its subject and body kept unless given); --subject or --body alone
 * change every e-mail action's; --webhook replaces the webhooks by one per URL (the secret and headers of the first
 * kept unless given); --webhook-secret or --webhook-header alone change every webhook's. Undefined when no option
 * touches the levels.
 */
export function updateLevels(o: RuleOptions, levels: readonly EscalationLevel[]): EscalationLevel[] | undefined {
  if (!levelTouched(o)) return undefined;
  if (o.removeEmail && emailTouched(o)) throw new UsageError('give --remove-email or the e-mail options, not both');
  if (o.removeWebhook && webhookTouched(o))
    throw new UsageError('give --remove-webhook or the webhook options, not both');
  const first: EscalationLevel = levels[0] ?? { displayName: '', actions: [], escalateAfter: null };
  let actions = [...first.actions];
  const emails = actions.filter((a) => a.type === 'EMAIL' && a.email);
  const webhooks = actions.filter((a) => a.type === 'WEBHOOK' && a.webhook);

  /** `actions` with those of `type` replaced by `replacement`, where the first of them was (else at the end). */
  const replace = (type: string, replacement: RuleAction[]) => {
    const at = actions.findIndex((a) => a.type === type);
    const rest = actions.filter((a) => a.type !== type);
    const index = at < 0 ? rest.length : actions.slice(0, at).filter((a) => a.type !== type).length;
    return [...rest.slice(0, index), ...replacement, ...rest.slice(index)];
  };
  const nulls = { sms: null, corrigo: null, serviceChannel: null, phoneCall: null, signalTower: null };

  if (o.removeEmail) actions = replace('EMAIL', []);
  else if (o.email !== undefined || o.contactGroup !== undefined) {
    const was = emails[0]?.email;
    const email = {
      recipients: o.email ?? was?.recipients ?? [],
      contactGroups: o.contactGroup ?? was?.contactGroups ?? [],
      subject: o.subject ?? was?.subject ?? '',
      body: o.body ?? was?.body ?? '',
    };
    actions = replace('EMAIL', [{ type: 'EMAIL', ...nulls, email, webhook: null }]);
  } else if (emailTouched(o)) {
    if (emails.length === 0)
      throw new UsageError("the rule's first level has no e-mail action: give --email or --contact-group");
    actions = actions.map((a) =>
      a.type === 'EMAIL' && a.email
        ? { ...a, email: { ...a.email, subject: o.subject ?? a.email.subject, body: o.body ?? a.email.body } }
        : a,
    );
  }

  const headers = o.webhookHeader === undefined ? undefined : parseHeaders(o.webhookHeader);
  if (o.removeWebhook) actions = replace('WEBHOOK', []);
  else if (o.webhook !== undefined) {
    const was = webhooks[0]?.webhook;
    actions = replace(
      'WEBHOOK',
      o.webhook.map((url) => ({
        type: 'WEBHOOK',
        ...nulls,
        email: null,
        webhook: {
          url,
          headers: headers ?? was?.headers ?? {},
          signatureSecret: o.webhookSecret ?? was?.signatureSecret ?? '',
        },
      })),
    );
  } else if (webhookTouched(o)) {
    if (webhooks.length === 0) throw new UsageError("the rule's first level has no webhook: give --webhook");
    actions = actions.map((a) =>
      a.type === 'WEBHOOK' && a.webhook
        ? {
            ...a,
            webhook: {
              ...a.webhook,
              headers: headers ?? a.webhook.headers,
              signatureSecret: o.webhookSecret ?? a.webhook.signatureSecret,
            },
          }
        : a,
    );
  }
  const escalateAfter = o.escalateAfter === undefined ? first.escalateAfter : escalateAfterOf(o);
  return [{ ...first, actions, escalateAfter }, ...levels.slice(1)];
}

/** The fields both create and update take from plain options (not the trigger, the levels or the files). */
function plainFields(o: RuleOptions): Record<string, unknown> {
  if (o.name !== undefined && o.displayName !== undefined)
    throw new UsageError('give --name or --display-name, not both (they are the same)');
  if (o.device !== undefined && o.allDevices) throw new UsageError('give --device or --all-devices, not both');
  if (o.label !== undefined && o.clearLabels) throw new UsageError('give --label or --clear-labels, not both');
  if (o.scheduleFile !== undefined && o.clearSchedule)
    throw new UsageError('give --schedule-file or --clear-schedule, not both');
  const body: Record<string, unknown> = {};
  const displayName = o.name ?? o.displayName;
  if (displayName !== undefined) body.displayName = displayName;
  if (o.device !== undefined || o.allDevices) body.devices = o.device ?? [];
  if (o.label !== undefined || o.clearLabels) body.deviceLabels = parseLabels(o.label);
  if (o.triggerDelay !== undefined) body.triggerDelay = ruleDuration(o.triggerDelay, '--trigger-delay');
  if (o.unacknowledgesAfter !== undefined)
    body.unacknowledgesAfter = ruleDuration(o.unacknowledgesAfter, '--unacknowledges-after');
  if (o.resolvedNotifications !== undefined) body.resolvedNotifications = o.resolvedNotifications;
  if (o.reminderNotifications !== undefined) body.reminderNotifications = o.reminderNotifications;
  if (o.scheduleFile !== undefined) body.schedule = readJsonObject(o.scheduleFile, '--schedule-file');
  if (o.clearSchedule) body.schedule = null;
  return body;
}

/** The body of `create`: --from-file's, with every field the options give replacing the file's. */
export function createBody(o: RuleOptions): RuleInput {
  const file = o.fromFile === undefined ? {} : readJsonObject(o.fromFile, '--from-file');
  refuseRedacted(file, '--from-file');
  const body: Record<string, unknown> = { ...file, ...plainFields(o) };
  if (o.disabled) body.enabled = false;
  const fileTrigger =
    file.trigger && typeof file.trigger === 'object' ? (file.trigger as Record<string, unknown>) : undefined;
  const trigger = createTrigger(o, fileTrigger);
  if (trigger === undefined)
    throw new UsageError('give --field and its criteria (--outside 2..8, --state OPEN, …), or --from-file');
  body.trigger = trigger;
  const level = createLevel(o);
  if (level) {
    body.escalationLevels = [level];
    delete body.actions;
  } else if (!nonEmpty(body.escalationLevels) && !nonEmpty(body.actions))
    throw new UsageError('give what the rule does: --email, --contact-group or --webhook, or --from-file');
  return body as RuleInput;
}

const nonEmpty = (v: unknown) => Array.isArray(v) && v.length > 0;

/**
 * The PATCH of `update`: the body and update_mask of what the options (and --from-file's fields) change, over
 * `current` (the rule as read: its trigger's field and its levels).
 */
export function updatePatch(o: RuleOptions, current: Rule): { body: Record<string, unknown>; mask: string[] } {
  const file = o.fromFile === undefined ? {} : readJsonObject(o.fromFile, '--from-file');
  refuseRedacted(file, '--from-file');
  const plain = plainFields(o);
  const body: Record<string, unknown> = { ...file, ...plain };
  const mask = new Set(Object.keys(body));
  if (o.disabled) throw new UsageError('--disabled is for create: use `rules disable`');
  if (hasTriggerOptions(o)) {
    if (mask.has('trigger')) {
      // The file's trigger, with the options applied to it as create does.
      body.trigger = createTrigger(o, body.trigger as Record<string, unknown>);
    } else {
      const t = updateTrigger(o, current.trigger);
      body.trigger = t.trigger;
      for (const path of t.mask) mask.add(path);
    }
  }
  const fileLevels = Array.isArray(file.escalationLevels) ? (file.escalationLevels as EscalationLevel[]) : undefined;
  const levels = updateLevels(o, fileLevels ?? current.escalationLevels);
  if (levels) {
    body.escalationLevels = levels;
    mask.add('escalationLevels');
    if (mask.has('actions')) body.actions = [];
  }
  if (mask.size === 0) throw new UsageError('nothing to change: see `sensorcloud rules update --help`');
  return { body, mask: [...mask] };
}

/** Whether an update needs the rule as it is (its trigger's field, its levels). */
export const updateNeedsRule = (o: RuleOptions): boolean => hasTriggerOptions(o) || levelTouched(o);
