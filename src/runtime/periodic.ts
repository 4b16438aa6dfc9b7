// A background job that runs a tick at a fixed period, never overlapping itself, with failures logged.
// Timers are unref'd so they never keep the process alive on their own.
import type { Logger } from './logger.ts';

export interface Periodic {
  /** Runs one tick now, then every periodMs. */
  start(periodMs: number): void;
  /** Stops the timer and waits for a tick in progress. */
  stop(): Promise<void>;
}

export function createPeriodic(tick: () => Promise<unknown>, logger: Logger, failureMessage: string): Periodic {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  const run = () => {
    if (running) return;
    running = tick()
      .then(() => undefined, (err) => logger.error({ err }, failureMessage))
      .finally(() => { running = null; });
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
