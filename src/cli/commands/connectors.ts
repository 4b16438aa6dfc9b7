// `connectors`: HTTP_PUSH data connectors: list, get, create, update (with the delivery controls of extensions §X4,
// delivery-controls.ts), rotate-secret, enable, disable, pause, resume, sync, metrics, the delivery log and its
// recovery (deliveries.ts), delete.
// The signature secret and custom header values are never printed (the API echoes them to developers); only a
// secret made for the command (by the CLI, or by the service for rotate-secret) is shown, once, by that command.
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import type {
  DataConnector,
  DataConnectorInput,
  DataConnectorMetrics,
  RotateSecretAnswer,
  RotateSecretBody,
} from '../../wire/data-connectors.ts';
import { collect, collectList, durationText, parseDuration, parseHeaders } from '../arguments.ts';
import { action, example, idOf, type Context } from '../context.ts';
import {
  controlsOf,
  deliveryInput,
  deliveryOptions,
  hasLabelFilters,
  hasLimits,
  isPaused,
  labelFiltersText,
  limitsText,
  rateText,
  type DeliveryOptions,
} from '../delivery-controls.ts';
import { UsageError } from '../errors.ts';
import { REDACTED } from '../output.ts';
import { registerDeliveryCommands } from './deliveries.ts';

/** The longest overlap of a rotation (extensions §X3): 7 days, in seconds. */
export const MAX_OVERLAP_SECONDS = 604_800;

/**
 * The end of a rotation's overlap (extensions §X3): until then pushes carry X-Service-Signature-Previous too.
 * "" when none runs (and from a service older than the rotation, which leaves the key out).
 */
export const previousSecretUntil = (c: DataConnector): string => c.httpConfig.previousSignatureSecretExpireTime ?? '';

/** The connector as printed: a set secret and every header value replaced by `<redacted>`, "" kept (unsigned). */
export function redactConnector(c: DataConnector): DataConnector {
  const headers = Object.fromEntries(Object.keys(c.httpConfig.headers ?? {}).map((k) => [k, REDACTED]));
  return {
    ...c,
    httpConfig: { ...c.httpConfig, signatureSecret: c.httpConfig.signatureSecret ? REDACTED : '', headers },
  };
}

/** `generatedSecret`: a secret this command made, shown this once (in the JSON document with --json). */
function printConnector(ctx: Context, raw: DataConnector, generatedSecret?: string): void {
  const c = redactConnector(raw);
  const controls = controlsOf(c);
  if (generatedSecret !== undefined) {
    ctx.out.warn('the generated signature secret is shown only this once: give it to the receiver now');
    if (ctx.out.json) return ctx.out.printJson({ ...c, generatedSecret });
    if (ctx.out.quiet) return ctx.out.line(`${c.name}\t${generatedSecret}`);
  }
  ctx.out.record(
    c,
    [
      ['name', c.name],
      ['displayName', c.displayName],
      ['status', statusText(c, ctx.out)],
      ['url', c.httpConfig.url],
      ['events', c.events.length ? c.events.join(', ') : '(every type)'],
      ['labelKeys', c.labels.join(', ')],
      ...(controls
        ? ([
            ['labelFilters', labelFiltersText(controls.labelFilters)],
            ['maxConcurrency', String(controls.maxConcurrency)],
            ['maxRate', rateText(controls.maxRate)],
          ] as const)
        : []),
      ['signed', c.httpConfig.signatureSecret ? 'yes' : 'no'],
      ...(previousSecretUntil(c) ? [['previousSecretUntil', previousSecretUntil(c)] as const] : []),
      ['headers', Object.keys(c.httpConfig.headers).join(', ')],
      ['createTime', c.createTime],
      ['updateTime', c.updateTime],
    ],
    c.name,
  );
  if (generatedSecret !== undefined) ctx.out.line(`${ctx.out.bold('signature secret')}  ${generatedSecret}`);
}

/**
 * What rotate-secret prints. A secret the service made is shown once (on stdout, after a warning on stderr); one the
 * user gave is redacted like every echo of a secret.
 */
function printRotation(ctx: Context, res: RotateSecretAnswer, generated: boolean, overlap: number): void {
  const c = redactConnector(res.dataConnector);
  const secret = generated ? res.signatureSecret : REDACTED;
  const until = previousSecretUntil(c);
  if (generated) ctx.out.warn('the new signature secret is shown only this once: give it to the receiver now');
  const printed: RotateSecretAnswer = { dataConnector: c, signatureSecret: secret };
  if (ctx.out.json) return ctx.out.printJson(printed);
  if (ctx.out.quiet) return ctx.out.line(generated ? `${c.name}\t${secret}` : c.name);
  ctx.out.record(
    printed,
    [
      ['name', c.name],
      ['signatureSecret', generated ? ctx.out.bold(secret) : '(the one given with --secret)'],
      [
        'previousSecret',
        until
          ? `also signs every push (X-Service-Signature-Previous) until ${until}, ${durationText(overlap)} from now`
          : 'none: every push from now on is signed with the new secret only',
      ],
    ],
    c.name,
  );
}

const statusPaint = (text: string, c: DataConnector, out: Context['out']) =>
  c.status === 'SYSTEM_DISABLED'
    ? out.red(text)
    : c.status === 'ACTIVE' && !isPaused(c)
      ? out.green(text)
      : out.yellow(text);

/** The status with a pause (extensions §X4) beside it: paused is not a status, and an ACTIVE connector can be paused. */
const statusCell = (c: DataConnector) => (isPaused(c) ? `${c.status}, PAUSED` : c.status);

/** `get`'s status line: a pause said in full, in colour. */
const statusText = (c: DataConnector, out: Context['out']) =>
  isPaused(c)
    ? `${c.status}, ${out.yellow(out.bold('PAUSED'))}: events queue (for up to 12 hours) and none is pushed until \`connectors resume\``
    : c.status;

/** A new signature secret: 32 random bytes, hex. */
export const generateSecret = () => randomBytes(32).toString('hex');

interface WriteOptions extends DeliveryOptions {
  url?: string;
  displayName?: string;
  secret?: string;
  generateSecret?: boolean;
  removeSecret?: boolean;
  events?: string[];
  allEvents?: boolean;
  labelKeys?: string[];
  header?: string[];
  clearHeaders?: boolean;
  disabled?: boolean;
  paused?: boolean;
}

/** The secret to send, generating one when asked; `generated` tells the caller to print it once. */
function secretOf(o: WriteOptions): { secret: string | undefined; generated: boolean } {
  if (o.secret !== undefined && o.generateSecret) throw new UsageError('give --secret or --generate-secret, not both');
  if (o.generateSecret) return { secret: generateSecret(), generated: true };
  return { secret: o.secret, generated: false };
}

const writeOptions = (command: Command) =>
  deliveryOptions(
    command
      .option('--display-name <name>', 'display name')
      .option('--secret <secret>', 'sign every push with this secret (X-Service-Signature)')
      .option('--generate-secret', 'sign with a new random secret, printed once')
      .option('--events <types>', 'forward only these event types (comma-separated or repeated)', collectList)
      .option(
        '--label-keys <keys>',
        'device label keys copied into each push (comma-separated or repeated)',
        collectList,
      )
      .option('--header <name: value>', 'custom header on every push (repeatable)', collect),
  );

export function registerConnectorCommands(program: Command): void {
  const connectors = program
    .command('connectors')
    .description("data connectors: HTTPS pushes of the project's device events");

  example(
    connectors
      .command('list')
      .description('data connectors of the project')
      .action(
        action(async (ctx: Context) => {
          const items = (
            await ctx.client.list<DataConnector>(`projects/${await ctx.project()}/dataconnectors`, 'dataConnectors')
          ).map(redactConnector);
          ctx.out.list(
            items,
            [
              { header: 'ID', value: (c) => idOf(c.name) },
              { header: 'DISPLAY NAME', value: (c) => c.displayName },
              { header: 'STATUS', value: statusCell, paint: statusPaint },
              { header: 'EVENTS', value: (c) => (c.events.length ? c.events.join(',') : '*') },
              // Only when one of them has a limit or filters of its own (extensions §X4).
              ...(items.some(hasLimits)
                ? [{ header: 'LIMITS', value: (c: DataConnector) => limitsText(controlsOf(c)) }]
                : []),
              ...(items.some(hasLabelFilters)
                ? [
                    {
                      header: 'LABEL FILTERS',
                      value: (c: DataConnector) =>
                        hasLabelFilters(c) ? labelFiltersText(controlsOf(c)!.labelFilters) : '-',
                    },
                  ]
                : []),
              // Only while a rotation's overlap runs on one of them.
              ...(items.some((c) => previousSecretUntil(c))
                ? [{ header: 'PREVIOUS SECRET UNTIL', value: (c: DataConnector) => previousSecretUntil(c) || '-' }]
                : []),
              { header: 'URL', value: (c) => c.httpConfig.url },
            ],
            (c) => c.name,
            'data connectors',
          );
        }),
      ),
    'sensorcloud connectors list',
  );

  example(
    connectors
      .command('get <connector>')
      .description('one data connector (its secret is never shown)')
      .action(
        action(async (ctx: Context, connector: string) => {
          printConnector(ctx, await ctx.client.call<DataConnector>('GET', await ctx.name(connector, 'dataconnectors')));
        }),
      ),
    'sensorcloud connectors get cvq2b1r0l4l9s3f2a9m0',
  );

  example(
    writeOptions(connectors.command('create'))
      .description('create an HTTP_PUSH data connector (active unless --disabled)')
      .requiredOption('--url <url>', 'https:// endpoint that receives the pushes')
      .option('--disabled', 'create it USER_DISABLED')
      .option('--paused', 'create it paused: events queue until `connectors resume`')
      .action(
        action(async (ctx: Context, o: WriteOptions & { url: string }) => {
          const { secret, generated } = secretOf(o);
          const delivery = deliveryInput(o).config;
          if (o.paused) delivery.paused = true;
          const body: DataConnectorInput = {
            type: 'HTTP_PUSH',
            displayName: o.displayName ?? '',
            status: o.disabled ? 'USER_DISABLED' : 'ACTIVE',
            events: o.events ?? [],
            labels: o.labelKeys ?? [],
            httpConfig: { url: o.url, signatureSecret: secret ?? '', headers: parseHeaders(o.header) },
            // Only when given: a service older than extensions §X4 refuses the key.
            ...(Object.keys(delivery).length ? { deliveryConfig: delivery } : {}),
          };
          const c = await ctx.client.call<DataConnector>('POST', `projects/${await ctx.project()}/dataconnectors`, {
            body,
          });
          printConnector(ctx, c, generated ? secret : undefined);
        }),
      ),
    'sensorcloud connectors create --url https://example.org/hook --generate-secret --events touch,temperature --label-keys name',
    'sensorcloud connectors create --url https://example.org/hook --max-concurrency 4 --max-rate 20 --label-filter site=oslo',
  );

  example(
    writeOptions(connectors.command('update <connector>'))
      .description('change a data connector; only the options given change')
      .option('--url <url>', 'new https:// endpoint')
      .option('--remove-secret', 'stop signing pushes')
      .option('--all-events', 'forward every event type (clears --events)')
      .option('--clear-headers', 'remove every custom header')
      .option('--clear-label-filters', 'forward the events of every device (clears --label-filter)')
      .action(
        action(async (ctx: Context, connector: string, o: WriteOptions) => {
          const { secret, generated } = secretOf(o);
          if (secret !== undefined && o.removeSecret)
            throw new UsageError('give --secret or --remove-secret, not both');
          if (o.events && o.allEvents) throw new UsageError('give --events or --all-events, not both');
          if (o.header && o.clearHeaders) throw new UsageError('give --header or --clear-headers, not both');
          const delivery = deliveryInput(o);
          const body: Record<string, unknown> = {};
          const httpConfig: Record<string, unknown> = {};
          const mask: string[] = [];
          if (o.displayName !== undefined) (body.displayName = o.displayName), mask.push('displayName');
          if (o.events || o.allEvents) (body.events = o.events ?? []), mask.push('events');
          if (o.labelKeys) (body.labels = o.labelKeys), mask.push('labels');
          if (o.url !== undefined) (httpConfig.url = o.url), mask.push('httpConfig.url');
          if (secret !== undefined || o.removeSecret)
            (httpConfig.signatureSecret = secret ?? ''), mask.push('httpConfig.signatureSecret');
          if (o.header || o.clearHeaders)
            (httpConfig.headers = parseHeaders(o.header)), mask.push('httpConfig.headers');
          if (delivery.mask.length) (body.deliveryConfig = delivery.config), mask.push(...delivery.mask);
          if (mask.length === 0) throw new UsageError('nothing to change: see `sensorcloud connectors update --help`');
          if (Object.keys(httpConfig).length) body.httpConfig = httpConfig;
          const c = await ctx.client.call<DataConnector>('PATCH', await ctx.name(connector, 'dataconnectors'), {
            query: { updateMask: mask.join(',') },
            body,
          });
          printConnector(ctx, c, generated ? secret : undefined);
        }),
      ),
    'sensorcloud connectors update cvq2b1r0l4l9s3f2a9m0 --events touch --label-keys name,room',
    'sensorcloud connectors update cvq2b1r0l4l9s3f2a9m0 --max-rate 0 --label-filter site=oslo --label-filter floor',
  );

  example(
    connectors
      .command('rotate-secret <connector>')
      .description(
        'switch to a new signature secret without a gap: for the overlap, pushes are signed with the new secret (X-Service-Signature) and the previous one (X-Service-Signature-Previous)',
      )
      .option('--secret <secret>', 'the new secret (default: a random one made by the service, printed once)')
      .option('--generate', 'a random new secret made by the service, printed once (the default)')
      .option('--overlap <duration>', 'how long the previous secret is still sent: 0 (none) to 7d', '24h')
      .action(
        action(async (ctx: Context, connector: string, o: { secret?: string; generate?: boolean; overlap: string }) => {
          if (o.secret !== undefined && o.generate) throw new UsageError('give --secret or --generate, not both');
          if (o.secret === '')
            throw new UsageError('--secret must not be empty (`update --remove-secret` stops signing)');
          const overlap = parseDuration(o.overlap, '--overlap', MAX_OVERLAP_SECONDS);
          const name = await ctx.name(connector, 'dataconnectors');
          const body: RotateSecretBody = {
            ...(o.secret !== undefined ? { signatureSecret: o.secret } : {}),
            overlap: `${overlap}s`,
          };
          const res = await ctx.client.call<RotateSecretAnswer>('POST', `${name}:rotateSecret`, { body });
          printRotation(ctx, res, o.secret === undefined, overlap);
        }),
      ),
    'sensorcloud connectors rotate-secret cvq2b1r0l4l9s3f2a9m0 --overlap 24h',
  );

  const setStatus = (status: 'ACTIVE' | 'USER_DISABLED') =>
    action(async (ctx: Context, connector: string) => {
      const c = await ctx.client.call<DataConnector>('PATCH', await ctx.name(connector, 'dataconnectors'), {
        query: { updateMask: 'status' },
        body: { status },
      });
      if (ctx.out.json || ctx.out.quiet) return printConnector(ctx, c);
      ctx.out.line(`${c.name} is ${c.status}.`);
    });
  example(
    connectors
      .command('enable <connector>')
      .description('make a connector ACTIVE (no backfill of what it missed)')
      .action(setStatus('ACTIVE')),
    'sensorcloud connectors enable cvq2b1r0l4l9s3f2a9m0',
  );
  example(
    connectors
      .command('disable <connector>')
      .description('make a connector USER_DISABLED (its queue is dropped)')
      .action(setStatus('USER_DISABLED')),
    'sensorcloud connectors disable cvq2b1r0l4l9s3f2a9m0',
  );

  // Extensions §X4: a pause keeps the queue (within its 12-hour expiry); a disable drops it.
  const setPaused = (paused: boolean) =>
    action(async (ctx: Context, connector: string) => {
      const c = await ctx.client.call<DataConnector>('PATCH', await ctx.name(connector, 'dataconnectors'), {
        query: { updateMask: 'deliveryConfig.paused' },
        body: { deliveryConfig: { paused } },
      });
      if (ctx.out.json || ctx.out.quiet) return printConnector(ctx, c);
      const inactive = c.status === 'ACTIVE' ? '' : ` It is ${c.status}: nothing is pushed until it is enabled.`;
      ctx.out.line(
        paused
          ? `${c.name} is paused: events queue (for up to 12 hours) and none is pushed until it is resumed.${inactive}`
          : `${c.name} is resumed: queued events are pushed in order of due time.${inactive}`,
      );
    });
  example(
    connectors
      .command('pause <connector>')
      .description('stop pushing: events keep queueing (for up to 12 hours), nothing is dropped')
      .action(setPaused(true)),
    'sensorcloud connectors pause cvq2b1r0l4l9s3f2a9m0',
  );
  example(
    connectors
      .command('resume <connector>')
      .description('push again, the queued events first (in order of due time)')
      .action(setPaused(false)),
    'sensorcloud connectors resume cvq2b1r0l4l9s3f2a9m0',
  );

  example(
    connectors
      .command('sync <connector>')
      .description('push the latest event of each type of each device again')
      .action(
        action(async (ctx: Context, connector: string) => {
          const name = await ctx.name(connector, 'dataconnectors');
          ctx.out.done(await ctx.client.call('POST', `${name}:sync`), `Queued the latest events for ${idOf(name)}.`);
        }),
      ),
    'sensorcloud connectors sync cvq2b1r0l4l9s3f2a9m0',
  );

  example(
    connectors
      .command('metrics <connector>')
      .description('successes, errors and p99 latency of the last 3 hours')
      .action(
        action(async (ctx: Context, connector: string) => {
          const res = await ctx.client.call<DataConnectorMetrics>(
            'GET',
            `${await ctx.name(connector, 'dataconnectors')}:metrics`,
          );
          const m = res.metrics;
          ctx.out.record(
            res,
            [
              ['successCount', String(m.successCount)],
              ['errorCount', m.errorCount > 0 ? ctx.out.red(String(m.errorCount)) : String(m.errorCount)],
              ['latency99p', m.latency99p],
            ],
            '',
          );
          if (ctx.out.quiet) ctx.out.line(`${m.successCount} ${m.errorCount} ${m.latency99p}`);
        }),
      ),
    'sensorcloud connectors metrics cvq2b1r0l4l9s3f2a9m0',
  );

  registerDeliveryCommands(connectors);

  example(
    connectors
      .command('delete <connector>')
      .description('delete a connector with its queue and metrics')
      .action(
        action(async (ctx: Context, connector: string) => {
          const name = await ctx.name(connector, 'dataconnectors');
          ctx.out.done(await ctx.client.call('DELETE', name), `Deleted ${name}.`);
        }),
      ),
    'sensorcloud connectors delete cvq2b1r0l4l9s3f2a9m0',
  );
}
