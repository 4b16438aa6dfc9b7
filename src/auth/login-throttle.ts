// Password-login throttle (contract §2.5): after 10 failed logins for one email within 15 minutes, that email
// is refused (429) until the window has passed. Sliding window, in memory, per process; time from the Clock.
import type { Clock } from '../runtime/clock.ts';

export const MAX_FAILED_LOGINS = 10;
export const FAILED_LOGIN_WINDOW_MS = 15 * 60 * 1000;

export interface LoginThrottle {
  /** 0 when a login for this email may be tried, else the whole seconds until it may (at least 1). */
  retryAfterSeconds(email: string): number;
  recordFailure(email: string): void;
  /** A successful login forgets the earlier failures. */
  recordSuccess(email: string): void;
}

export function createLoginThrottle(clock: Clock, max = MAX_FAILED_LOGINS, windowMs = FAILED_LOGIN_WINDOW_MS): LoginThrottle {
  /** Failure times (ms) per lower-cased email, oldest first, at most `max` kept. */
  const failures = new Map<string, number[]>();
  let lastSweep = clock.now();

  const recent = (email: string, now: number): number[] => {
    const key = email.toLowerCase();
    const times = (failures.get(key) ?? []).filter((t) => t > now - windowMs);
    if (times.length === 0) failures.delete(key);
    else failures.set(key, times);
    return times;
  };

  // Forget emails whose failures have all left the window, so the map stays bounded by recent traffic.
  const sweep = (now: number) => {
    if (now - lastSweep < 60_000) return;
    lastSweep = now;
    for (const [key, times] of failures) if (times[times.length - 1]! <= now - windowMs) failures.delete(key);
  };

  return {
    retryAfterSeconds(email) {
      const now = clock.now();
      sweep(now);
      const times = recent(email, now);
      if (times.length < max) return 0;
      return Math.max(1, Math.ceil((times[times.length - max]! + windowMs - now) / 1000));
    },
    recordFailure(email) {
      const now = clock.now();
      const times = recent(email, now);
      times.push(now);
      failures.set(email.toLowerCase(), times.slice(-max));
    },
    recordSuccess(email) {
      failures.delete(email.toLowerCase());
    },
  };
}
