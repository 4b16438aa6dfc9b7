// `sensorcloud listen --forward-to URL`: follows the project's event stream and forwards each event to a local
// endpoint exactly as a data connector would push it (same body, same headers, signed), printing one line per
// forward with the endpoint's status and latency. For building a receiver on a laptop without a public HTTPS URL.
import type { Command } from 'commander';
import { collect, collectList, parseHeaders, parseInteger } from '../arguments.ts';
import { action, example, idOf, type Context } from '../context.ts';
import { followEvents, interruptible } from '../event-stream.ts';
import type { ForwardResult } from '../forward.ts';
import { generateSecret } from './connectors.ts';

interface ListenOptions {
  forwardTo: string;
  events?: string[];
  labelKeys?: string[];
  header?: string[];
  secret?: string;
  device?: string[];
  count?: string;
  caFile?: string;
  insecure?: boolean;
}

function printResult(ctx: Context, r: ForwardResult): Promise<void> {
  if (ctx.out.json) return ctx.out.write(`${JSON.stringify({ ...r, latencyMs: Math.round(r.latencyMs * 10) / 10 })}\n`);
  if (ctx.out.quiet) return ctx.out.write(`${r.status ?? 'ERR'} ${r.eventId}\n`);
  const ok = r.status !== null && r.status >= 200 && r.status < 300;
  const status = r.status === null ? `ERR ${r.error ?? ''}` : String(r.status);
  const line = `${new Date().toISOString()}  ${r.eventType.padEnd(18)}  ${idOf(r.device).padEnd(23)}  → ${(ok ? ctx.out.green : ctx.out.red)(status)}  ${r.latencyMs.toFixed(0)} ms`;
  return ctx.out.write(`${line}\n`);
}

async function listen(ctx: Context, o: ListenOptions): Promise<void> {
  const project = await ctx.project();
  const secret = o.secret ?? generateSecret();
  const count = o.count === undefined ? undefined : parseInteger(o.count, '--count', 1);
  // Loaded here, with undici, only when listen runs: a module of ours, since a CommonJS package imported lazily
  // keeps only its default export in the build (test/unit/lazy-imports.test.ts).
  const { createForwarder } = await import('../forward.ts');
  const forwarder = await createForwarder(
    ctx.client,
    {
      url: o.forwardTo,
      signatureSecret: secret,
      headers: parseHeaders(o.header),
      labelKeys: o.labelKeys ?? [],
    },
    { caFile: o.caFile, insecure: o.insecure },
  );
  if (o.secret === undefined) {
    // Printed once, on stderr, so stdout stays one line per forward.
    ctx.out.stderr.write(`signature secret: ${secret}\n`);
    ctx.out.warn('this generated secret is shown only once: configure your receiver with it (or pass --secret)');
  }
  const controller = interruptible();
  const types = o.events && o.events.length > 0 ? new Set(o.events) : null;
  try {
    await followEvents(ctx, project, {
      // Every type is read, so that labelsChanged events keep the cached labels right even when filtered out.
      query: { deviceIds: o.device?.map(idOf) },
      signal: controller.signal,
      onOpen: () => ctx.out.note(`forwarding events of projects/${project} to ${o.forwardTo} (Ctrl-C to stop)`),
      count,
      accept: (event) => types === null || types.has(event.eventType),
      async onEvent(event) {
        await printResult(ctx, await forwarder.forward(event));
      },
    });
  } finally {
    await forwarder.close();
  }
}

export function registerListenCommand(program: Command): void {
  example(
    program
      .command('listen')
      .description("forward the project's events to a local endpoint exactly as a data connector pushes them")
      .requiredOption('--forward-to <url>', 'http:// or https:// endpoint, e.g. http://localhost:3000/hook')
      .option('--events <types>', 'forward only these event types (comma-separated or repeated)', collectList)
      .option('--label-keys <keys>', "device label keys copied into each body, as a connector's labels", collectList)
      .option('--header <name: value>', 'custom header on every forward (repeatable)', collect)
      .option('--secret <secret>', 'signature secret (default: a new one, printed once)')
      .option('--device <device>', 'only this device id (repeatable)', collect)
      .option('--count <n>', 'stop after forwarding this many events')
      .option('--ca-file <pem>', 'trust this CA for an https endpoint')
      .option('--insecure', 'accept any certificate of an https endpoint (local self-signed ones)')
      .action(action(listen)),
    'sensorcloud listen --forward-to http://localhost:3000/hook',
    'sensorcloud listen --forward-to http://localhost:3000/hook --events touch,temperature --label-keys name --secret s3cret',
  );
}
