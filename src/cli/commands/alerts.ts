// `alerts`: what notification rules raised (extensions §X5): list (newest first, by state, rule and device), get (with
// the notifications it sent), ack and resolve, and watch (the alertChanged events of the project's stream).
import type { Command } from 'commander';
import type { Alert, AlertNotification, AlertSummary } from '../../wire/alerts.ts';
import type { Rule } from '../../wire/rules.ts';
import { collectList, parseInteger } from '../arguments.ts';
import { action, example, idOf, type Context } from '../context.ts';
import { followEvents, interruptible } from '../event-stream.ts';
import type { Column, Output } from '../output.ts';
import { ALERT_CHANGED } from '../../domain/device-types.ts';

export function paintAlertState(text: string, state: string, out: Output): string {
  if (state === 'TRIGGERED') return out.red(text);
  if (state === 'ACKNOWLEDGED') return out.yellow(text);
  return out.green(text);
}

/** A device's id, or `connector <id>` for a dataConnector rule's alert. */
export const targetText = (targetName: string): string =>
  targetName.includes('/dataconnectors/') ? `connector ${idOf(targetName)}` : idOf(targetName);

/** The last value that met the condition: a number, a state, or `-`. */
export const valueText = (v: unknown): string =>
  v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v);

const outcomePaint = (text: string, n: AlertNotification, out: Output) =>
  n.outcome === 'SENT' ? out.green(text) : n.outcome === 'FAILED' ? out.red(text) : out.yellow(text);

const notificationColumns: Column<AlertNotification>[] = [
  { header: 'TIME', value: (n) => n.time },
  { header: 'LEVEL', value: (n) => String(n.level) },
  { header: 'TYPE', value: (n) => n.type },
  { header: 'TARGET', value: (n) => n.target },
  { header: 'OUTCOME', value: (n) => n.outcome, paint: outcomePaint },
  { header: 'ERROR', value: (n) => n.error },
];

function alertFields(a: AlertSummary, out: Output): Array<[string, string]> {
  return [
    ['name', a.name],
    ['state', paintAlertState(a.state, a.state, out)],
    ['rule', a.rule],
    ['target', a.targetName],
    ['escalationLevel', String(a.escalationLevel)],
    ['lastValue', valueText(a.lastValue)],
    ['triggerTime', a.triggerTime],
    ['acknowledgeTime', a.acknowledgeTime || '-'],
    ['acknowledgedBy', a.acknowledgedBy || '-'],
    ['resolveTime', a.resolveTime || '-'],
  ];
}

/** An alert: its JSON, its name with --quiet, else its fields and its notifications, as the API lists them. */
export function printAlert(ctx: Context, a: Alert): void {
  const out = ctx.out;
  out.record(a, alertFields(a, out), a.name);
  if (out.json || out.quiet) return;
  out.line();
  if (a.notifications.length === 0) return out.line(out.dim('no notification'));
  out.line(out.bold(`Notifications (${a.notifications.length})`));
  out.table(a.notifications, notificationColumns);
}

interface ListOptions {
  state?: string[];
  rule?: string;
  device?: string;
  limit: string;
  all?: boolean;
}

async function listAlerts(ctx: Context, o: ListOptions): Promise<void> {
  const limit = o.all ? Infinity : parseInteger(o.limit, '--limit', 1);
  const project = await ctx.project();
  const query = {
    state: o.state?.map((s) => s.toUpperCase()),
    rule: o.rule && (await ctx.name(o.rule, 'rules')),
    device: o.device && (await ctx.name(o.device, 'devices')),
  };
  const items = await ctx.client.list<Alert>(`projects/${project}/alerts`, 'alerts', query, limit);
  // For people, the rules by their display names (one page: a project has at most 100 rules).
  const ruleNames = new Map<string, string>();
  if (!ctx.out.json && !ctx.out.quiet && items.length > 0)
    for (const r of await ctx.client.list<Rule>(`projects/${project}/rules`, 'rules'))
      if (r.displayName) ruleNames.set(r.name, r.displayName);
  const columns: Column<Alert>[] = [
    { header: 'ID', value: (a) => idOf(a.name) },
    { header: 'STATE', value: (a) => a.state, paint: (text, a, out) => paintAlertState(text, a.state, out) },
    { header: 'RULE', value: (a) => ruleNames.get(a.rule) ?? idOf(a.rule) },
    { header: 'TARGET', value: (a) => targetText(a.targetName) },
    { header: 'LEVEL', value: (a) => String(a.escalationLevel) },
    { header: 'LAST VALUE', value: (a) => valueText(a.lastValue) },
    { header: 'TRIGGERED', value: (a) => a.triggerTime },
    { header: 'ACKNOWLEDGED BY', value: (a) => a.acknowledgedBy || '-' },
  ];
  ctx.out.list(items, columns, (a) => a.name, 'alerts');
  if (!o.all && items.length === limit) ctx.out.note(`(the newest ${limit}; --limit or --all for more)`);
}

/** :acknowledge or :resolve, and what the alert is after it. */
const transition = (verb: 'acknowledge' | 'resolve') =>
  action(async (ctx: Context, alert: string) => {
    const a = await ctx.client.call<Alert>('POST', `${await ctx.name(alert, 'alerts')}:${verb}`, { body: {} });
    if (ctx.out.json || ctx.out.quiet) return printAlert(ctx, a);
    const by = a.state === 'ACKNOWLEDGED' && a.acknowledgedBy ? ` by ${a.acknowledgedBy}` : '';
    ctx.out.line(`${a.name} is ${paintAlertState(a.state, a.state, ctx.out)}${by}.`);
  });

interface WatchOptions {
  rule?: string;
  device?: string;
  count?: string;
}

async function watchAlerts(ctx: Context, o: WatchOptions): Promise<void> {
  const project = await ctx.project();
  const count = o.count === undefined ? undefined : parseInteger(o.count, '--count', 1);
  const rule = o.rule && (await ctx.name(o.rule, 'rules'));
  const device = o.device && (await ctx.name(o.device, 'devices'));
  const controller = interruptible();
  const alertOf = (data: unknown) => (data as { alertChanged?: AlertSummary } | null)?.alertChanged;
  let header = false;
  await followEvents(ctx, project, {
    // Filtered here (a connector's alert has no device for the stream's filters to match).
    query: { eventTypes: [ALERT_CHANGED] },
    count,
    signal: controller.signal,
    accept: (event) => {
      const a = alertOf(event.data);
      return a !== undefined && (!rule || a.rule === rule) && (!device || a.targetName === device);
    },
    onOpen: () => ctx.out.note(`following the alerts of projects/${project} (Ctrl-C to stop)`),
    async onEvent(event) {
      const a = alertOf(event.data)!;
      if (ctx.out.json) return ctx.out.write(`${JSON.stringify(a)}\n`);
      if (ctx.out.quiet) return ctx.out.write(`${a.name}\n`);
      // Lines are printed as alerts change, so columns are padded to typical widths rather than measured.
      if (!header) {
        header = true;
        ctx.out.line(
          ctx.out.bold(
            `${'TIME'.padEnd(27)}  ${'ALERT'.padEnd(20)}  ${'STATE'.padEnd(12)}  ${'RULE'.padEnd(20)}  ${'TARGET'.padEnd(23)}  LEVEL  LAST VALUE`,
          ),
        );
      }
      await ctx.out.write(
        `${event.timestamp.padEnd(27)}  ${idOf(a.name).padEnd(20)}  ${paintAlertState(a.state.padEnd(12), a.state, ctx.out)}  ${idOf(a.rule).padEnd(20)}  ${targetText(a.targetName).padEnd(23)}  ${String(a.escalationLevel).padEnd(5)}  ${valueText(a.lastValue)}\n`,
      );
    },
  });
}

export function registerAlertCommands(program: Command): void {
  const alerts = program
    .command('alerts')
    .description('alerts raised by notification rules: list, acknowledge, resolve');

  example(
    alerts
      .command('list')
      .description('alerts of the project, newest first')
      .option(
        '--state <states>',
        'only these states: TRIGGERED, ACKNOWLEDGED, RESOLVED (comma-separated or repeated)',
        collectList,
      )
      .option('--rule <rule>', 'only alerts of this rule (id or name)')
      .option('--device <device>', 'only alerts of this device (id or name)')
      .option('--limit <n>', 'at most this many alerts', '100')
      .option('--all', 'every alert that matches (no limit)')
      .action(action(listAlerts)),
    'sensorcloud alerts list --state TRIGGERED,ACKNOWLEDGED',
    'sensorcloud alerts list --rule cvq2b1r0l4l9s3f2a9r0 --device emucvq2b1b0l4l9s3f2a9h0 --all',
  );

  example(
    alerts
      .command('get <alert>')
      .description('one alert with its notifications (time, level, type, target, outcome, error)')
      .action(
        action(async (ctx: Context, alert: string) => {
          printAlert(ctx, await ctx.client.call<Alert>('GET', await ctx.name(alert, 'alerts')));
        }),
      ),
    'sensorcloud alerts get cvq2b1r0l4l9s3f2a9s0',
  );

  example(
    alerts
      .command('ack <alert>')
      .alias('acknowledge')
      .description(
        'acknowledge an alert (also `alerts acknowledge`): it escalates no further, until unacknowledgesAfter',
      )
      .action(transition('acknowledge')),
    'sensorcloud alerts ack cvq2b1r0l4l9s3f2a9s0',
  );

  example(
    alerts
      .command('resolve <alert>')
      .description('resolve an alert now (a resolved notification when the rule asks for one)')
      .action(transition('resolve')),
    'sensorcloud alerts resolve cvq2b1r0l4l9s3f2a9s0',
  );

  example(
    alerts
      .command('watch')
      .description('print alerts as they trigger, escalate, are acknowledged and resolve (Ctrl-C stops)')
      .option('--rule <rule>', 'only alerts of this rule (id or name)')
      .option('--device <device>', 'only alerts of this device (id or name)')
      .option('--count <n>', 'stop after this many changes')
      .action(action(watchAlerts)),
    'sensorcloud alerts watch',
    'sensorcloud alerts watch --rule cvq2b1r0l4l9s3f2a9r0 --json --count 1',
  );
}
