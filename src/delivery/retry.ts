// The push retry schedule (contract §6.5), pure: exponential from 8 s, capped at 1 h, never shorter than 4× the
// attempt's response time; a 429/503 Retry-After may only lengthen it (cap 1 h); an event is dropped 12 h after
// enqueue. No jitter, so the schedule stays exact and testable (§7 #4).

/** First interval, seconds. */
export const RETRY_BASE_SECONDS = 8;
/** Longest interval, seconds (also the Retry-After cap). */
export const RETRY_MAX_SECONDS = 3600;
/** An unacknowledged event is removed this long after it was queued (enqueue time, not event time). */
export const RETENTION_MS = 12 * 3600 * 1000;
export const RETENTION_MICROS = RETENTION_MS * 1000;
/** Minimum interval as a multiple of the attempt's response time (slow endpoints). */
export const SLOW_ENDPOINT_FACTOR = 4;

/**
 * Seconds to wait after failed attempt `n` (1 = the first delivery) before attempt n+1.
 * `retryAfterSeconds` is honoured only as a lengthening, and never beyond RETRY_MAX_SECONDS.
 */
export function retryIntervalSeconds(n: number, responseTimeMs: number, retryAfterSeconds?: number): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`attempt number must be a positive integer, got ${n}`);
  // 2^(n-1) overflows to Infinity for huge n; the cap makes that harmless.
  const exponential = Math.min(RETRY_BASE_SECONDS * 2 ** (n - 1), RETRY_MAX_SECONDS);
  const slowFloor = (SLOW_ENDPOINT_FACTOR * Math.max(0, responseTimeMs)) / 1000;
  let interval = Math.max(exponential, slowFloor);
  if (retryAfterSeconds !== undefined && Number.isFinite(retryAfterSeconds) && retryAfterSeconds > interval) {
    interval = Math.max(interval, Math.min(retryAfterSeconds, RETRY_MAX_SECONDS));
  }
  return interval;
}

/** The time (ms) at which the next attempt is due, or null when that would fall at or after the 12-hour drop. */
export function nextAttemptTime(
  n: number,
  attemptEndMs: number,
  enqueueTimeMs: number,
  responseTimeMs: number,
  retryAfterSeconds?: number,
): number | null {
  const due = attemptEndMs + retryIntervalSeconds(n, responseTimeMs, retryAfterSeconds) * 1000;
  return due >= enqueueTimeMs + RETENTION_MS ? null : due;
}

/** True when an event queued at `enqueueTimeMs` must be dropped without another attempt at `nowMs`. */
export function isExpired(enqueueTimeMs: number, nowMs: number): boolean {
  return nowMs >= enqueueTimeMs + RETENTION_MS;
}
