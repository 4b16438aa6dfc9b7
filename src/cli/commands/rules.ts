// `rules`: notification rules (extensions §X5, docs/alerts.md): list, get, create (the common cases from options,
// rule-input.ts, or the whole body from a file), update (a PATCH of what was given, with update_mask), enable,
// disable, delete. Webhook secrets and header values are never printed (the API echoes them to developers), as a
// connector's.
import type { Command } from 'commander';
import type { EscalationLevel, Rule, RuleAction, RuleTrigger, Schedule } from '../../wire/rules.ts';
import { collect, durationText } from '../arguments.ts';
import { action, example, idOf, type Context } from '../context.ts';
import type { Column, Output } from '../output.ts';
import { REDACTED } from '../output.ts';
import { createBody, updateNeedsRule, updatePatch, type RuleOptions } from '../rule-input.ts';
import { contactGroupName } from './resources.ts';

/** The rule as printed: each set webhook secret and every header value replaced by `<redacted>`. */
export function redactRule(r: Rule): Rule {
  const redactAction = (a: RuleAction): RuleAction =>
    a.webhook
      ? {
          ...a,
          webhook: {
            ...a.webhook,
            signatureSecret: a.webhook.signatureSecret ? REDACTED : '',
            headers: Object.fromEntries(Object.keys(a.webhook.headers).map((k) => [k, REDACTED])),
          },
        }
      : a;
  return {
    ...r,
    escalationLevels: r.escalationLevels.map((l) => ({ ...l, actions: l.actions.map(redactAction) })),
    actions: r.actions.map(redactAction),
  };
}

const bound = (n: number | null) => (n === null ? '' : String(n));

/** The trigger as the options that make it read: `temperature outside 2..8`, `contact OPEN`, `… (3 in a row)`. */
export function triggerText(t: RuleTrigger): string {
  let text = t.field;
  const r = t.range;
  if (r) {
    if (r.type === 'OUTSIDE' && r.lower === null && r.upper !== null) text += ` above ${r.upper}`;
    else if (r.type === 'OUTSIDE' && r.upper === null && r.lower !== null) text += ` below ${r.lower}`;
    else text += ` ${r.type === 'OUTSIDE' ? 'outside' : 'within'} ${bound(r.lower)}..${bound(r.upper)}`;
  }
  const state = t.presence ?? t.motion ?? t.occupancy ?? t.contact ?? t.connection;
  if (state) text += ` ${state}`;
  if (t.triggerCount > 1) text += ` (${t.triggerCount} in a row)`;
  return text;
}

/** "<n>s" for people: `15m`; anything else as it is. */
export function durationCell(d: string | null, none = '-'): string {
  if (d === null) return none;
  const m = /^(\d+)s$/.exec(d);
  return m ? durationText(Number(m[1])) : d;
}

const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => (v === '' ? `${k} (any value)` : `${k}=${v}`))
    .join(', ');

/** Which devices a rule watches: `every device`, `2 devices`, label filters, or both. */
function scopeText(r: Rule): string {
  if (r.trigger.field === 'dataConnector') return 'data connectors';
  const parts = [
    ...(r.devices.length ? [`${r.devices.length} device${r.devices.length === 1 ? '' : 's'}`] : []),
    ...(Object.keys(r.deviceLabels).length
      ? [
          Object.entries(r.deviceLabels)
            .map(([k, v]) => (v === '' ? k : `${k}=${v}`))
            .join(','),
        ]
      : []),
  ];
  return parts.length ? parts.join(' + ') : 'every device';
}

/** An action in a line: `EMAIL a@x, group g (subject "…")`, `WEBHOOK https://… (signed; headers X-Api-Key)`. */
function actionText(a: RuleAction): string {
  if (a.type === 'EMAIL' && a.email) {
    const to = [...a.email.recipients, ...a.email.contactGroups.map((g) => `group ${idOf(g)}`)].join(', ');
    return `EMAIL ${to}${a.email.subject ? ` (subject "${a.email.subject}")` : ''}`;
  }
  if (a.type === 'WEBHOOK' && a.webhook) {
    const notes = [
      ...(a.webhook.signatureSecret ? ['signed'] : []),
      ...(Object.keys(a.webhook.headers).length ? [`headers ${Object.keys(a.webhook.headers).join(', ')}`] : []),
    ];
    return `WEBHOOK ${a.webhook.url}${notes.length ? ` (${notes.join('; ')})` : ''}`;
  }
  return a.type;
}

function levelText(l: EscalationLevel, last: boolean, reminders: boolean): string {
  const after = l.escalateAfter
    ? last
      ? reminders
        ? `; reminds every ${durationCell(l.escalateAfter)}`
        : ''
      : `; escalates after ${durationCell(l.escalateAfter)}`
    : '';
  return `${l.displayName ? `"${l.displayName}": ` : ''}${l.actions.map(actionText).join('; ')}${after}`;
}

const DAY = (d: string) => d.slice(0, 3);
const hhmm = (t: { hour: number; minute: number }) =>
  `${String(t.hour).padStart(2, '0')}:${String(t.minute).padStart(2, '0')}`;

/** `Mon,Tue 08:00-17:00; Sat 10:00-14:00 (Europe/Oslo)`; `not …` when inverse; `(always)` without one. */
export function scheduleText(s: Schedule | null): string {
  if (!s) return '(always)';
  const slots = s.slots
    .map(
      (slot) =>
        `${slot.days.length ? slot.days.map(DAY).join(',') : 'every day'} ${slot.times.map((t) => `${hhmm(t.start)}-${hhmm(t.end)}`).join(',')}`,
    )
    .join('; ');
  return `${s.inverse ? 'not ' : ''}${slots || '(no slots)'} (${s.timezone})`;
}

const yesNo = (b: boolean) => (b ? 'yes' : 'no');
const enabledPaint = (text: string, r: Rule, out: Output) => (r.enabled ? out.green(text) : out.yellow(text));

export function printRule(ctx: Context, raw: Rule): void {
  const r = redactRule(raw);
  const levels = r.escalationLevels;
  ctx.out.record(
    r,
    [
      ['name', r.name],
      ['displayName', r.displayName],
      ['enabled', r.enabled ? ctx.out.green('yes') : ctx.out.yellow('no')],
      ['trigger', triggerText(r.trigger)],
      ['devices', r.devices.length ? r.devices.map(idOf).join(', ') : '(every device)'],
      ['deviceLabels', labelsText(r.deviceLabels) || '(none)'],
      ['triggerDelay', r.triggerDelay === null ? '(none)' : `${durationCell(r.triggerDelay)} (${r.triggerDelay})`],
      ['schedule', scheduleText(r.schedule)],
      ...levels.map(
        (l, i) => [`level ${i}`, levelText(l, i === levels.length - 1, r.reminderNotifications)] as [string, string],
      ),
      ['resolvedNotifications', yesNo(r.resolvedNotifications)],
      ['reminderNotifications', yesNo(r.reminderNotifications)],
      [
        'unacknowledgesAfter',
        r.unacknowledgesAfter === null
          ? '4h (the default)'
          : `${durationCell(r.unacknowledgesAfter)} (${r.unacknowledgesAfter})`,
      ],
      ['createTime', r.createTime],
      ['updateTime', r.updateTime],
    ],
    r.name,
  );
  if (!ctx.out.json && !ctx.out.quiet && levels.length === 1 && levels[0]!.escalateAfter && !r.reminderNotifications)
    ctx.out.note(
      'note: the only level has an escalateAfter but no reminders: nothing happens then (--reminder-notifications repeats its actions)',
    );
}

const ruleColumns: Column<Rule>[] = [
  { header: 'ID', value: (r) => idOf(r.name) },
  { header: 'DISPLAY NAME', value: (r) => r.displayName },
  { header: 'ENABLED', value: (r) => yesNo(r.enabled), paint: enabledPaint },
  { header: 'TRIGGER', value: (r) => triggerText(r.trigger) },
  { header: 'SCOPE', value: scopeText },
  { header: 'DELAY', value: (r) => durationCell(r.triggerDelay) },
  {
    header: 'ACTIONS',
    value: (r) => {
      const first = [...new Set(r.escalationLevels[0]?.actions.map((a) => a.type) ?? [])].join(',');
      const more = r.escalationLevels.length - 1;
      return `${first}${more > 0 ? ` (+${more} level${more === 1 ? '' : 's'})` : ''}`;
    },
  },
];

/** --device and --contact-group as full names (ids in the current project and its organization). */
async function resolveReferences(ctx: Context, o: RuleOptions): Promise<RuleOptions> {
  return {
    ...o,
    device: o.device && (await Promise.all(o.device.map((d) => ctx.name(d, 'devices')))),
    contactGroup: o.contactGroup && (await Promise.all(o.contactGroup.map((g) => contactGroupName(ctx, g)))),
  };
}

/** The options of create and update. */
const ruleOptions = (command: Command, update: boolean) =>
  command
    .option('--name <text>', 'display name (the same as --display-name)')
    .option('--display-name <text>', 'display name')
    .option(
      '--field <field>',
      'what the rule watches: temperature, humidity, co2, pressure, objectPresent, waterPresent, motion, deskOccupancy, contact, touch, connectionStatus or dataConnector',
    )
    .option(
      '--outside <lower..upper>',
      'range: the condition holds below lower or above upper (2..8; ..8 or 2.. for one bound)',
    )
    .option('--within <lower..upper>', 'range: the condition holds from lower to upper, both included (18..24)')
    .option('--above <n>', 'range: the condition holds above n (n itself not)')
    .option('--below <n>', 'range: the condition holds below n (n itself not)')
    .option(
      '--state <state>',
      "the field's state that meets the condition: PRESENT, ABSENT, MOTION_DETECTED, NO_MOTION_DETECTED, OCCUPIED, NOT_OCCUPIED, OPEN, CLOSED",
    )
    .option('--connection <state>', 'a connectionStatus rule: SENSOR_OFFLINE or CLOUD_CONNECTOR_OFFLINE')
    .option('--trigger-count <n>', 'events in a row that must meet the condition (0 or 1: the first)')
    .option('--trigger-delay <duration>', 'how long the condition must hold before an alert triggers: 0, 90s, 15m, 1h')
    .option(
      '--device <device>',
      update
        ? 'only this device, id or name (repeatable; replaces the devices)'
        : 'only this device, id or name (repeatable; default: every device)',
      collect,
    )
    .option(
      '--label <key=value|key>',
      `only devices with this label; \`key\` alone: any value (repeatable: every one must match${update ? '; replaces the labels' : ''})`,
      collect,
    )
    .option(
      '--email <address>',
      update
        ? "the first level's e-mail recipients (repeatable; replaces them)"
        : 'e-mail this address when the rule triggers (repeatable; needs SMTP on the server)',
      collect,
    )
    .option(
      '--contact-group <group>',
      `e-mail this contact group's contacts in the project (repeatable${update ? '; replaces the groups' : ''})`,
      collect,
    )
    .option('--subject <text>', 'e-mail subject; placeholders such as $name, $celsius, $value, $rule')
    .option('--body <text>', 'e-mail body; the same placeholders')
    .option(
      '--webhook <url>',
      update
        ? "the first level's webhooks (repeatable; they keep the secret and headers of the one they replace)"
        : 'POST the alert to this https:// URL (repeatable)',
      collect,
    )
    .option('--webhook-secret <secret>', 'sign the webhook requests with this secret (X-Service-Signature)')
    .option('--webhook-header <name: value>', 'custom header on the webhook requests (repeatable)', collect)
    .option(
      '--escalate-after <duration>',
      update
        ? "the first level's escalateAfter: 30m, 1h; 0 = never"
        : 'escalateAfter of the level: with one level, how often --reminder-notifications repeat it (more levels: --from-file)',
    )
    .option('--resolved-notifications', 'notify again when the alert resolves')
    .option('--no-resolved-notifications', 'no notification when the alert resolves')
    .option('--reminder-notifications', "repeat the last level's actions every escalateAfter")
    .option('--no-reminder-notifications', 'no reminders')
    .option('--unacknowledges-after <duration>', 'an acknowledged alert becomes unacknowledged after this (default 4h)')
    .option('--schedule-file <file>', 'evaluate only in this schedule: a JSON file {timezone, slots, inverse}')
    .option(
      '--from-file <file>',
      update
        ? 'a JSON file of rule fields to replace (- for standard input); the options apply on top'
        : 'the whole rule body from a JSON file (- for standard input); the options replace its fields',
    );

export function registerRuleCommands(program: Command): void {
  const rules = program
    .command('rules')
    .description('notification rules: when device events (or data connectors) raise alerts, and whom they notify');

  example(
    rules
      .command('list')
      .description('notification rules of the project')
      .action(
        action(async (ctx: Context) => {
          const items = (await ctx.client.list<Rule>(`projects/${await ctx.project()}/rules`, 'rules')).map(redactRule);
          ctx.out.list(items, ruleColumns, (r) => r.name, 'rules');
        }),
      ),
    'sensorcloud rules list',
  );

  example(
    rules
      .command('get <rule>')
      .description('one rule (its webhook secrets are never shown)')
      .action(
        action(async (ctx: Context, rule: string) => {
          printRule(ctx, await ctx.client.call<Rule>('GET', await ctx.name(rule, 'rules')));
        }),
      ),
    'sensorcloud rules get cvq2b1r0l4l9s3f2a9r0',
  );

  example(
    ruleOptions(rules.command('create'), false)
      .description('create a rule: the trigger, the devices, and what it does (enabled unless --disabled)')
      .option('--disabled', 'create it disabled')
      .action(
        action(async (ctx: Context, o: RuleOptions) => {
          const body = createBody(await resolveReferences(ctx, o));
          printRule(ctx, await ctx.client.call<Rule>('POST', `projects/${await ctx.project()}/rules`, { body }));
        }),
      ),
    'sensorcloud rules create --name "Fridge 4" --field temperature --outside 2..8 --label fridge --trigger-delay 15m --email kitchen@example.org',
    'sensorcloud rules create --field contact --state OPEN --device emucvq2b1b0l4l9s3f2a9h0 --webhook https://example.org/alerts --webhook-secret s3cret',
    'sensorcloud rules create --from-file rule.json',
  );

  example(
    ruleOptions(rules.command('update <rule>'), true)
      .description('change a rule; only the options given change (the first escalation level is edited in place)')
      .option('--all-devices', 'watch every device (clears --device)')
      .option('--clear-labels', 'no label filter (clears --label)')
      .option('--remove-email', "remove the first level's e-mail actions")
      .option('--remove-webhook', "remove the first level's webhooks")
      .option('--clear-schedule', 'evaluate at all times')
      .action(
        action(async (ctx: Context, rule: string, raw: RuleOptions) => {
          const name = await ctx.name(rule, 'rules');
          const o = await resolveReferences(ctx, raw);
          // The trigger's field and the levels as they are: the edits apply to them.
          const current = updateNeedsRule(o)
            ? await ctx.client.call<Rule>('GET', name)
            : ({ trigger: { field: '' }, escalationLevels: [] } as unknown as Rule);
          const { body, mask } = updatePatch(o, current);
          printRule(ctx, await ctx.client.call<Rule>('PATCH', name, { query: { updateMask: mask.join(',') }, body }));
        }),
      ),
    'sensorcloud rules update cvq2b1r0l4l9s3f2a9r0 --outside 1..6 --trigger-delay 30m',
    'sensorcloud rules update cvq2b1r0l4l9s3f2a9r0 --email ops@example.org --subject "Fridge $name at $celsius °C"',
  );

  const setEnabled = (enabled: boolean) =>
    action(async (ctx: Context, rule: string) => {
      const r = await ctx.client.call<Rule>('PATCH', await ctx.name(rule, 'rules'), {
        query: { updateMask: 'enabled' },
        body: { enabled },
      });
      if (ctx.out.json || ctx.out.quiet) return printRule(ctx, r);
      ctx.out.line(`${r.name} is ${r.enabled ? 'enabled' : 'disabled'}.`);
    });
  example(
    rules.command('enable <rule>').description('evaluate the rule again').action(setEnabled(true)),
    'sensorcloud rules enable cvq2b1r0l4l9s3f2a9r0',
  );
  example(
    rules
      .command('disable <rule>')
      .description('stop evaluating the rule: it raises no new alert (its open ones stay open until resolved)')
      .action(setEnabled(false)),
    'sensorcloud rules disable cvq2b1r0l4l9s3f2a9r0',
  );

  example(
    rules
      .command('delete <rule>')
      .description('delete a rule with its alerts')
      .action(
        action(async (ctx: Context, rule: string) => {
          const name = await ctx.name(rule, 'rules');
          ctx.out.done(await ctx.client.call('DELETE', name), `Deleted ${name}.`);
        }),
      ),
    'sensorcloud rules delete cvq2b1r0l4l9s3f2a9r0',
  );
}
