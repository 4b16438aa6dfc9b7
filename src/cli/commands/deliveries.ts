// `connectors deliveries|delivery|resend|replay|test`: a data connector's delivery log and its recovery
// (extensions §X1-§X2): the deliveries newest first (`-` for every connector of the project), one delivery with its
// attempt timeline, a resend of one delivery, a replay of a window of the history, and a test push whose failure
// is exit code 4.
import type { Command } from 'commander';
import type {
  Delivery,
  DeliveryAnswer,
  DeliveryAttempt,
  DeliverySummary,
  ReplayAnswer,
  ReplayBody,
  TestPushBody,
} from '../../wire/deliveries.ts';
import { collectList, parseInteger, parseTime } from '../arguments.ts';
import { FETCH_HEADERS_TIMEOUT_MS } from '../client.ts';
import { ID, action, example, idOf, type Context } from '../context.ts';
import { ApiTimeoutError, CheckFailedError, UsageError } from '../errors.ts';
import type { Column, Output } from '../output.ts';
import { createWaiting } from '../progress.ts';

const DELIVERY_NAME = /^projects\/[A-Za-z0-9_.~-]+\/dataconnectors\/[A-Za-z0-9_.~-]+\/deliveries\/[A-Za-z0-9_.~-]+$/;

/** `-` (or `projects/<p>/dataconnectors/-`): every connector of the project, which only the log's list takes. */
const isEveryConnector = (connector: string) =>
  connector === '-' || /^projects\/[^/]+\/dataconnectors\/-$/.test(connector);

/** The connector's id in a delivery's name (`projects/p/dataconnectors/dc/deliveries/d` → `dc`). */
const connectorIdOf = (deliveryName: string) => deliveryName.split('/')[3] ?? '';

/** The replay is one call: wait for it as long as fetch can (a window of 100,000 events takes seconds). */
const REPLAY_TIMEOUT_MS = FETCH_HEADERS_TIMEOUT_MS;

/** Longest part of an answer's first line shown in a table; --json has all of it. */
const SNIPPET_CHARS = 100;

function paintState(text: string, state: string, out: Output): string {
  if (state === 'DELIVERED') return out.green(text);
  if (state === 'PENDING' || state === 'RETRYING') return out.yellow(text);
  return out.red(text);
}

/** The first line of an answer, cut for a table, with "(truncated)" when the service kept only its first KiB. */
export function answerLine(a: Pick<DeliveryAttempt, 'responseBody' | 'responseBodyTruncated'>): string {
  const lines = a.responseBody.split(/\r?\n/);
  const first = lines.find((l) => l.trim() !== '')?.trim() ?? '';
  const cut = first.length > SNIPPET_CHARS ? `${first.slice(0, SNIPPET_CHARS)}…` : first;
  const more = a.responseBodyTruncated ? ' (truncated)' : '';
  return cut === '' && more === '' ? '' : `${cut}${more}`.trim();
}

/** `HTTP_ERROR (HTTP 503)`, `SUCCESS (HTTP 200)`, `CONNECTION_REFUSED`. */
const outcomeText = (a: DeliveryAttempt) => (a.httpStatus ? `${a.outcome} (HTTP ${a.httpStatus})` : a.outcome);

/** nextAttemptTime for people: "" is "in flight" while the delivery is open, nothing once it is final. */
function nextAttemptText(d: DeliverySummary): string {
  if (d.nextAttemptTime) return d.nextAttemptTime;
  return d.state === 'PENDING' || d.state === 'RETRYING' ? '(in flight)' : '-';
}

function deliveryFields(d: DeliverySummary, out: Output): Array<[string, string]> {
  return [
    ['name', d.name],
    ['state', paintState(d.state, d.state, out)],
    ['trigger', d.trigger],
    ['eventId', d.eventId],
    ['eventType', d.eventType],
    ['device', d.targetName],
    ['attemptCount', String(d.attemptCount)],
    ['createTime', d.createTime],
    ['updateTime', d.updateTime],
    ['nextAttemptTime', nextAttemptText(d)],
  ];
}

const attemptColumns: Column<DeliveryAttempt>[] = [
  { header: 'TIME', value: (a) => a.attemptTime },
  { header: 'DURATION', value: (a) => a.duration },
  {
    header: 'OUTCOME',
    value: (a) => a.outcome,
    paint: (text, a, out) => (a.outcome === 'SUCCESS' ? out.green(text) : out.red(text)),
  },
  { header: 'HTTP', value: (a) => (a.httpStatus ? String(a.httpStatus) : '-') },
  { header: 'ERROR', value: (a) => a.error },
  { header: 'ANSWER', value: answerLine },
];

/** A delivery: its JSON, its name with --quiet, else its fields and (when read with them) its attempts, oldest first. */
function printDelivery(ctx: Context, d: Delivery): void {
  const out = ctx.out;
  out.record(d, deliveryFields(d, out), d.name);
  if (out.json || out.quiet || d.attempts === undefined) return;
  out.line();
  if (d.attempts.length === 0) return out.line(out.dim('no attempt yet'));
  out.line(out.bold(`Attempts (${d.attempts.length}, oldest first)`));
  out.table(d.attempts, attemptColumns);
}

/**
 * A delivery's full name: `<delivery>` is an id, in `<connector>` (an id or a name; `-` needs the delivery's full
 * name), or a full name (`projects/…/dataconnectors/…/deliveries/…`, as `deliveries --quiet` prints), taken as it is.
 */
async function deliveryName(ctx: Context, connector: string, delivery: string): Promise<string> {
  if (delivery.startsWith('projects/')) {
    if (!DELIVERY_NAME.test(delivery))
      throw new UsageError(
        `"${delivery}" is not a delivery id or name (projects/<project>/dataconnectors/<connector>/deliveries/<id>)`,
      );
    if (!isEveryConnector(connector) && idOf(await ctx.name(connector, 'dataconnectors')) !== connectorIdOf(delivery))
      throw new UsageError(
        `${delivery} is a delivery of connector ${connectorIdOf(delivery)}, not of ${idOf(connector)} (or give - as the connector)`,
      );
    return delivery;
  }
  if (!ID.test(delivery))
    throw new UsageError(
      `"${delivery}" is not a delivery id or name (projects/<project>/dataconnectors/<connector>/deliveries/<id>)`,
    );
  if (isEveryConnector(connector))
    throw new UsageError('with - as the connector, give the delivery by its full name (as `deliveries -` lists it)');
  return `${await ctx.name(connector, 'dataconnectors')}/deliveries/${delivery}`;
}

interface WindowOptions {
  since?: string;
  startTime?: string;
  until?: string;
  endTime?: string;
}

/** --since/--start-time and --until/--end-time (synonyms), as RFC 3339; a start after the end is a usage error. */
function windowOf(o: WindowOptions, nowMs: number): { startTime?: string; endTime?: string } {
  const pick = (a: string | undefined, b: string | undefined, names: string) => {
    if (a !== undefined && b !== undefined) throw new UsageError(`give ${names}, not both (they are the same)`);
    return a ?? b;
  };
  const start = pick(o.since, o.startTime, '--since or --start-time');
  const end = pick(o.until, o.endTime, '--until or --end-time');
  const startTime = start === undefined ? undefined : parseTime(start, o.since ? '--since' : '--start-time', nowMs);
  const endTime = end === undefined ? undefined : parseTime(end, o.until ? '--until' : '--end-time', nowMs);
  if (startTime && endTime && Date.parse(startTime) >= Date.parse(endTime))
    throw new UsageError(`the start (${startTime}) is not before the end (${endTime})`);
  return { startTime, endTime };
}

/** The window options; the replay's are required (checked in replay(), as either name of a pair will do). */
const windowOptions = (command: Command, what: 'created' | 'events') =>
  what === 'created'
    ? command
        .option('--since <time>', 'created from this time: 30m, 24h, 7d or RFC 3339 (2025-06-01T12:00:00Z)')
        .option('--start-time <time>', 'the same as --since')
        .option('--until <time>', 'created before this time (same forms, or "now")')
        .option('--end-time <time>', 'the same as --until')
    : command
        .option(
          '--start-time <time>',
          'required: events from this time: 30m, 24h, 7d or RFC 3339 (2025-06-01T12:00:00Z)',
        )
        .option('--end-time <time>', 'required: events before this time (same forms, or "now")')
        .option('--since <time>', 'the same as --start-time')
        .option('--until <time>', 'the same as --end-time');

const upper = (values: string[] | undefined) => values?.map((v) => v.toUpperCase());

interface ListOptions extends WindowOptions {
  state?: string[];
  trigger?: string;
  eventId?: string;
  device?: string;
  limit: string;
  all?: boolean;
}

async function listDeliveries(ctx: Context, connector: string, o: ListOptions): Promise<void> {
  const limit = o.all ? Infinity : parseInteger(o.limit, '--limit', 1);
  const window = windowOf(o, Date.now());
  const every = isEveryConnector(connector);
  const name = await ctx.name(connector, 'dataconnectors');
  const items = await ctx.client.list<DeliverySummary>(
    `${name}/deliveries`,
    'deliveries',
    {
      state: upper(o.state),
      trigger: o.trigger?.toUpperCase(),
      eventId: o.eventId,
      device: o.device,
      ...window,
    },
    limit,
  );
  const columns: Column<DeliverySummary>[] = [
    { header: 'ID', value: (d) => idOf(d.name) },
    ...(every ? [{ header: 'CONNECTOR', value: (d: DeliverySummary) => connectorIdOf(d.name) }] : []),
    { header: 'STATE', value: (d) => d.state, paint: (text, d, out) => paintState(text, d.state, out) },
    { header: 'TRIGGER', value: (d) => d.trigger },
    { header: 'EVENT ID', value: (d) => d.eventId },
    { header: 'EVENT TYPE', value: (d) => d.eventType },
    { header: 'DEVICE', value: (d) => idOf(d.targetName) },
    { header: 'ATTEMPTS', value: (d) => String(d.attemptCount) },
    { header: 'CREATED', value: (d) => d.createTime },
    { header: 'NEXT ATTEMPT', value: nextAttemptText },
  ];
  ctx.out.list(items, columns, (d) => d.name, 'deliveries');
  if (!o.all && items.length === limit) ctx.out.note(`(the newest ${limit}; --limit or --all for more)`);
}

interface ReplayOptions extends WindowOptions {
  onlyUndelivered?: boolean;
  eventType?: string[];
}

async function replay(ctx: Context, connector: string, o: ReplayOptions): Promise<void> {
  const { startTime, endTime } = windowOf(o, Date.now());
  if (startTime === undefined) throw new UsageError('give the window: --start-time (or --since) is missing');
  if (endTime === undefined) throw new UsageError('give the window: --end-time (or --until) is missing');
  const name = await ctx.name(connector, 'dataconnectors');
  const body: ReplayBody = { startTime, endTime, onlyUndelivered: o.onlyUndelivered === true, eventTypes: o.eventType };
  const waiting = createWaiting(ctx.out.stderr, !ctx.out.quiet && !ctx.out.json, `Replaying to ${idOf(name)}`);
  let res: ReplayAnswer;
  try {
    res = await ctx.client.call<ReplayAnswer>('POST', `${name}:replay`, {
      body,
      timeoutMs: REPLAY_TIMEOUT_MS,
    });
  } catch (err) {
    if (err instanceof ApiTimeoutError)
      throw new ApiTimeoutError(
        `${err.message}: the replay may still have been carried out; see \`sensorcloud connectors deliveries ${idOf(name)} --trigger REPLAY\` before replaying again`,
      );
    throw err;
  } finally {
    waiting.done();
  }
  const n = res.replayedCount;
  if (ctx.out.json) return ctx.out.printJson(res);
  if (ctx.out.quiet) return ctx.out.line(String(n));
  ctx.out.line(
    `Replayed ${n.toLocaleString('en')} event${n === 1 ? '' : 's'} to ${name} (${startTime} to ${endTime}${o.onlyUndelivered ? ', only the undelivered' : ''}).`,
  );
  if (n > 0)
    ctx.out.note(
      `They are queued: follow them with \`sensorcloud connectors deliveries ${idOf(name)} --trigger REPLAY\`.`,
    );
}

async function testPush(ctx: Context, connector: string, o: { eventType: string }): Promise<void> {
  const name = await ctx.name(connector, 'dataconnectors');
  const { delivery: d } = await ctx.client.call<DeliveryAnswer>('POST', `${name}:test`, {
    body: { eventType: o.eventType } satisfies TestPushBody,
  });
  const attempt = d.attempts?.[d.attempts.length - 1];
  const out = ctx.out;
  if (out.json) out.printJson(d);
  else if (out.quiet) out.line(d.name);
  else {
    const fields: Array<[string, string]> = [['result', paintState(d.state, d.state, out)]];
    if (attempt) {
      fields.push(['outcome', outcomeText(attempt)], ['duration', attempt.duration]);
      if (attempt.error) fields.push(['error', attempt.error]);
      const answer = answerLine(attempt);
      if (answer) fields.push(['answer', answer]);
    }
    fields.push(['delivery', d.name]);
    out.record(d, fields, d.name);
  }
  if (d.state !== 'DELIVERED')
    throw new CheckFailedError(
      `the test push was not delivered${attempt ? `: ${outcomeText(attempt)}${attempt.error ? `, ${attempt.error}` : ''}` : ` (${d.state})`}`,
    );
}

export function registerDeliveryCommands(connectors: Command): void {
  example(
    windowOptions(
      connectors
        .command('deliveries <connector>')
        .description('the delivery log of a connector, newest first (- for every connector of the project)'),
      'created',
    )
      .option(
        '--state <states>',
        'only these states: PENDING, RETRYING, DELIVERED, EXPIRED, DISCARDED, FAILED (comma-separated or repeated)',
        collectList,
      )
      .option('--trigger <trigger>', 'only this trigger: EVENT, SYNC, RESEND, REPLAY or TEST')
      .option('--event-id <id>', 'only deliveries of this event ("where is event X?" with - as the connector)')
      .option('--device <device>', 'only events of this device (id or name)')
      .option('--limit <n>', 'at most this many deliveries', '100')
      .option('--all', 'every delivery that matches (no limit)')
      .action(action(listDeliveries)),
    'sensorcloud connectors deliveries cvq2b1r0l4l9s3f2a9m0 --state RETRYING,EXPIRED --since 24h',
    'sensorcloud connectors deliveries - --event-id cvq2b2r0l4l9s3f2a9n0',
  );

  example(
    connectors
      .command('delivery <connector> <delivery>')
      .description(
        'one delivery with its attempts (time, duration, outcome, HTTP status, error, first line of the answer); <delivery> is its id, or its full name with - as the connector',
      )
      .action(
        action(async (ctx: Context, connector: string, delivery: string) => {
          printDelivery(ctx, await ctx.client.call<Delivery>('GET', await deliveryName(ctx, connector, delivery)));
        }),
      ),
    'sensorcloud connectors delivery cvq2b1r0l4l9s3f2a9m0 1842',
  );

  example(
    connectors
      .command('resend <connector> <delivery>')
      .description("push a delivery's event again now, as a new delivery (trigger RESEND, the normal retries)")
      .action(
        action(async (ctx: Context, connector: string, delivery: string) => {
          const name = await deliveryName(ctx, connector, delivery);
          const { delivery: d } = await ctx.client.call<DeliveryAnswer>('POST', `${name}:resend`, { body: {} });
          printDelivery(ctx, d);
          ctx.out.note(`Follow it with \`sensorcloud connectors delivery ${connectorIdOf(d.name)} ${idOf(d.name)}\`.`);
        }),
      ),
    'sensorcloud connectors resend cvq2b1r0l4l9s3f2a9m0 1842',
  );

  example(
    windowOptions(
      connectors
        .command('replay <connector>')
        .description(
          "push every event of a window of the history again (those the connector's filters accept, oldest first)",
        ),
      'events',
    )
      .option(
        '--only-undelivered',
        "only events never delivered to this connector (the window within the log's retention, 72 h by default)",
      )
      .option('--event-type <types>', 'only these event types (comma-separated or repeated)', collectList)
      .action(action(replay)),
    'sensorcloud connectors replay cvq2b1r0l4l9s3f2a9m0 --start-time 2025-06-01T08:00:00Z --end-time 2025-06-01T11:30:00Z',
    'sensorcloud connectors replay cvq2b1r0l4l9s3f2a9m0 --since 6h --until now --only-undelivered',
  );

  example(
    connectors
      .command('test <connector>')
      .description('push one example event now and show the result (exit code 4 when it was not delivered)')
      .option(
        '--event-type <type>',
        'the type of the example event: any, even one the connector does not forward',
        'touch',
      )
      .action(action(testPush)),
    'sensorcloud connectors test cvq2b1r0l4l9s3f2a9m0',
    'sensorcloud connectors test cvq2b1r0l4l9s3f2a9m0 --event-type temperature --json',
  );
}
