// A failure that repeats until something outside comes back (the database: every poll of the delivery engine and
// every hello to the other processes fails while it is unreachable) is logged when it starts and when it ends, not
// at every repetition: a 6 s PostgreSQL restart made an idle process write 58 warnings and errors, stack traces
// included, and an hour would have made ~40,000. While it lasts, a reminder every REMIND_MS says for how long.
const REMIND_MS = 60_000;

/** The log lines it writes (a pino Logger is one). */
export interface FailureLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface FailureLog {
  /** The operation failed: logged if it was working until now, or as a reminder once a minute. */
  failed(err: unknown): void;
  /** The operation worked: if it was failing, one line says it works again, after how long and how many failures. */
  succeeded(): void;
}

/**
 * `failing`: the line of the first failure (e.g. "delivery engine: claiming due deliveries failed"); `recovered`:
 * the line when it works again (e.g. "delivery engine: claiming due deliveries works again"). `now`: milliseconds.
 */
export function createFailureLog(
  logger: FailureLogger,
  level: 'warn' | 'error',
  messages: { failing: string; recovered: string },
  now: () => number,
): FailureLog {
  let since: number | null = null;
  let loggedAt = 0;
  let failures = 0;
  return {
    failed(err) {
      const t = now();
      failures++;
      if (since === null) {
        since = loggedAt = t;
        logger[level]({ err }, messages.failing);
      } else if (t - loggedAt >= REMIND_MS) {
        loggedAt = t;
        logger[level](
          { err, failures, forSeconds: Math.round((t - since) / 1000) },
          `${messages.failing} (still failing)`,
        );
      }
    },
    succeeded() {
      if (since === null) return;
      logger.info({ failures, afterSeconds: Math.round((now() - since) / 100) / 10 }, messages.recovered);
      since = null;
      failures = 0;
    },
  };
}
