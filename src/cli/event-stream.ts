// Following a project's event stream (contract §4.8) for `events tail` and `listen`: pings are dropped, the stream
// is reopened when the server ends it (after an hour) or closes it for a slow reader (503), and a lost connection
// is retried with a growing pause, at most 10 times in a row. Events published while reconnecting are not replayed
// (the stream has no history): `events history` has them.
import type { Query } from './client.ts';
import type { Context } from './context.ts';
import { ApiError } from './errors.ts';
import type { ApiEvent } from './event-format.ts';

export interface FollowOptions {
  /** Stream filters (deviceIds, deviceTypes, labelFilters, productNumbers, eventTypes, pingInterval). */
  query: Query;
  /** Stop after this many events (default: until interrupted). */
  count?: number;
  signal: AbortSignal;
  /** Events left out (not handled, not counted); default: every event. */
  accept?(event: ApiEvent): boolean;
  onEvent(event: ApiEvent): Promise<void> | void;
  /** Called once the stream is open (each time it is reopened too). */
  onOpen?(): void;
}

const MAX_FAILURES = 10;
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/** Follows the stream until `count` events were handled or `signal` aborts; returns how many were handled. */
export async function followEvents(ctx: Context, project: string, options: FollowOptions): Promise<number> {
  const path = `projects/${project}/devices:stream`;
  let handled = 0;
  let failures = 0;
  while (!options.signal.aborted) {
    try {
      const messages = await ctx.client.openStream(path, options.query, options.signal);
      options.onOpen?.();
      failures = 0;
      for await (const message of messages) {
        const event = (message as { result?: { event?: ApiEvent } }).result?.event;
        if (!event || event.eventType === 'ping') continue;
        if (options.accept && !options.accept(event)) continue;
        await options.onEvent(event);
        handled++;
        if (options.count !== undefined && handled >= options.count) return handled;
      }
      if (!options.signal.aborted) ctx.out.note('the server ended the stream; reopening it');
    } catch (err) {
      if (options.signal.aborted) break;
      const retryable = err instanceof ApiError && (err.status === 0 || err.status === 503);
      if (!retryable || ++failures > MAX_FAILURES) throw err;
      const pause = Math.min(30_000, 500 * 2 ** (failures - 1));
      // Said at every failure, --quiet or not: with the notes left out, ten retries over 2.5 minutes looked like a
      // command that hangs, and a server that is down is news its user needs at once.
      const hint = failures === 1 && err instanceof ApiError && err.status === 0 ? ' (is the server running?)' : '';
      ctx.out.stderr.write(
        `${(err as Error).message}${hint}; reconnecting in ${(pause / 1000).toFixed(1)} s (attempt ${failures} of ${MAX_FAILURES}, Ctrl-C to stop)\n`,
      );
      await sleep(pause, options.signal);
    }
  }
  return handled;
}

/** An AbortController that Ctrl-C (SIGINT) and SIGTERM abort: the command then ends normally, exit 0. */
export function interruptible(): AbortController {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return controller;
}
