// A background job that runs a tick at a fixed period, never overlapping itself, with failures logged (when they
// start and when they end: failure-log.ts). Timers are unref'd so they never keep the process alive on their own.
import { createFailureLog } from './failure-log.ts';
import type { Logger } from './logger.ts';

export interface Periodic {
  /** Runs one tick now, then every periodMs. */
  start(periodMs: number): void;
  /** Stops the timer and waits for a tick in progress. */
  stop(): Promise<void>;
}

/** `messages`: the lines when ticks start failing and when one works again; `now`: milliseconds (deps.clock). */
export function createPeriodic(
  tick: () => Promise<unknown>,
  logger: Logger,
  messages: { failing: string; recovered: string },
  now: () => number,
): Periodic {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  const failures = createFailureLog(logger, 'error', messages, now);
  const run = () => {
    if (running) return;
    running = tick()
      .then(
        () => failures.succeeded(),
        (err) => failures.failed(err),
      )
      .finally(() => {
        running = null;
      });
  };
  return {
    start(periodMs) {
      if (timer) return;
      timer = setInterval(run, periodMs);
      timer.unref();
      run();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      if (running) await running;
    },
  };
}
