// `events`: history of a device (every page fetched for the user), tail (the live stream, like `tail -f`), export
// (CSV or NDJSON, page after page, with a progress bar on stderr) and publish (the emulator's).
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Command } from 'commander';
import { collect, collectList, oneOf, parseInteger, parseTime } from '../arguments.ts';
import { action, example, idOf, type Context } from '../context.ts';
import { UsageError } from '../errors.ts';
import { dataSummary, eventCsvRows, EVENTS_CSV_HEADER, type ApiEvent } from '../event-format.ts';
import { followEvents, interruptible } from '../event-stream.ts';
import { createProgress } from '../progress.ts';
import { publishCommand } from './emulator.ts';

const eventColumns = [
  { header: 'TIME', value: (e: ApiEvent) => e.timestamp },
  { header: 'DEVICE', value: (e: ApiEvent) => idOf(e.targetName) },
  { header: 'TYPE', value: (e: ApiEvent) => e.eventType },
  { header: 'DATA', value: (e: ApiEvent) => dataSummary(e) },
];

interface RangeOptions {
  type?: string[];
  since?: string;
  until?: string;
}

/** The history query: types, and the time range (the API's default is the last 24 hours). */
function historyQuery(o: RangeOptions, nowMs: number): { eventTypes?: string[]; startTime: string; endTime: string } {
  const endTime = o.until ? parseTime(o.until, '--until', nowMs) : new Date(nowMs).toISOString();
  const startTime = o.since ? parseTime(o.since, '--since', nowMs) : new Date(nowMs - 86_400_000).toISOString();
  if (Date.parse(startTime) > Date.parse(endTime)) throw new UsageError('--since is after --until');
  return { eventTypes: o.type, startTime, endTime };
}

const rangeOptions = (command: Command) =>
  command
    .option('--type <types>', 'only these event types (comma-separated or repeated)', collectList)
    .option('--since <time>', 'from this time: 30m, 24h, 7d or RFC 3339 (default 24h)')
    .option('--until <time>', 'up to this time (default now)');

interface ExportOptions extends RangeOptions {
  device: string[];
  format: string;
  output?: string;
}

async function exportEvents(ctx: Context, o: ExportOptions): Promise<void> {
  const format = oneOf(o.format, ['csv', 'ndjson'] as const, '--format');
  const nowMs = Date.now();
  const query = historyQuery(o, nowMs);
  const startMs = Date.parse(query.startTime);
  const endMs = Date.parse(query.endTime);
  const devices = await Promise.all(o.device.map((d) => ctx.name(d, 'devices')));
  // A file is opened only once the arguments were checked; stdout otherwise (waiting when the pipe is full).
  const file = o.output ? createWriteStream(o.output) : null;
  const write = async (text: string) => {
    if (!file) return ctx.out.write(text);
    if (!file.write(text)) await once(file, 'drain');
  };
  const progress = createProgress(ctx.out.stderr, !ctx.out.quiet && !ctx.out.json);
  let count = 0;
  try {
    if (format === 'csv') await write(`${EVENTS_CSV_HEADER}\n`);
    for (const [index, device] of devices.entries()) {
      for await (const event of ctx.client.pages<ApiEvent>(`${device}/events`, 'events', query)) {
        await write(format === 'csv' ? eventCsvRows(event) : `${JSON.stringify(event)}\n`);
        count++;
        // Newest first: how far back this event is tells how much of the range is done.
        const within = endMs > startMs ? (endMs - Date.parse(event.timestamp)) / (endMs - startMs) : 1;
        progress.update((index + within) / devices.length, `${count.toLocaleString('en')} events`);
      }
    }
  } finally {
    progress.done();
    if (file) {
      file.end();
      await once(file, 'close');
    }
  }
  ctx.out.note(
    `Exported ${count.toLocaleString('en')} event${count === 1 ? '' : 's'}${o.output ? ` to ${o.output}` : ''} (newest first).`,
  );
}

interface TailOptions {
  device?: string[];
  deviceType?: string[];
  type?: string[];
  label?: string[];
  productNumber?: string[];
  count?: string;
  pingInterval?: string;
}

export function registerEventCommands(program: Command): void {
  const events = program.command('events').description('event history, the live stream, export and publishing');

  example(
    rangeOptions(events.command('history <device>'))
      .description('events of a device, newest first; pages are fetched for you')
      .option('--limit <n>', 'at most this many events', '100')
      .option('--all', 'every event in the range (no limit)')
      .action(
        action(async (ctx: Context, device: string, o: RangeOptions & { limit: string; all?: boolean }) => {
          const name = await ctx.name(device, 'devices');
          const limit = o.all ? Infinity : parseInteger(o.limit, '--limit', 1);
          const items = await ctx.client.list<ApiEvent>(`${name}/events`, 'events', historyQuery(o, Date.now()), limit);
          ctx.out.list(items, eventColumns, (e) => e.eventId, 'events in this range');
          if (!o.all && items.length === limit) ctx.out.note(`(the newest ${limit}; --limit or --all for more)`);
        }),
      ),
    'sensorcloud events history emucvq2b1b0l4l9s3f2a9h0 --type temperature --since 7d --all',
  );

  example(
    events
      .command('tail')
      .description('print new events of the project as they happen, like `tail -f` (Ctrl-C stops)')
      .option('--device <device>', 'only this device id (repeatable)', collect)
      .option('--device-type <type>', 'only devices of this type (repeatable)', collect)
      .option('--type <types>', 'only these event types (comma-separated or repeated)', collectList)
      .option('--label <key[=value]>', 'only devices with this label (repeatable)', collect)
      .option('--product-number <number>', 'only devices with this product number (repeatable)', collect)
      .option('--count <n>', 'stop after this many events')
      .option('--ping-interval <seconds>', 'keep-alive ping interval asked of the server (1-60)')
      .action(
        action(async (ctx: Context, o: TailOptions) => {
          const project = await ctx.project();
          const count = o.count === undefined ? undefined : parseInteger(o.count, '--count', 1);
          const controller = interruptible();
          const deviceIds = o.device?.map(idOf);
          let header = false;
          await followEvents(ctx, project, {
            query: {
              deviceIds,
              deviceTypes: o.deviceType,
              eventTypes: o.type,
              labelFilters: o.label,
              productNumbers: o.productNumber,
              pingInterval: o.pingInterval,
            },
            count,
            signal: controller.signal,
            onOpen: () => ctx.out.note(`following events of projects/${project} (Ctrl-C to stop)`),
            async onEvent(event) {
              if (ctx.out.json) return ctx.out.write(`${JSON.stringify(event)}\n`);
              if (ctx.out.quiet) return ctx.out.write(`${event.eventId}\n`);
              // Lines are printed as events come, so columns are padded to typical widths rather than measured.
              if (!header) {
                header = true;
                ctx.out.line(ctx.out.bold(`${'TIME'.padEnd(27)}  ${'DEVICE'.padEnd(23)}  ${'TYPE'.padEnd(18)}  DATA`));
              }
              await ctx.out.write(
                `${event.timestamp.padEnd(27)}  ${idOf(event.targetName).padEnd(23)}  ${ctx.out.green(event.eventType.padEnd(18))}  ${dataSummary(event)}\n`,
              );
            },
          });
        }),
      ),
    'sensorcloud events tail --type touch',
    'sensorcloud events tail --device emucvq2b1b0l4l9s3f2a9h0 --json --count 10',
  );

  example(
    rangeOptions(events.command('export'))
      .description('write the history of devices as CSV or NDJSON (newest first), with a progress bar on stderr')
      .requiredOption('--device <device>', 'a device (repeatable: exported one after the other)', collect)
      .option('--format <format>', 'csv or ndjson', 'csv')
      .option('--output <file>', 'write to this file instead of stdout')
      .action(action(exportEvents)),
    'sensorcloud events export --device emucvq2b1b0l4l9s3f2a9h0 --since 7d --format csv > history.csv',
  );

  publishCommand(events, 'publish');
}
