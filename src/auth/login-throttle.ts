// Password-login throttle (contract §2.5): after 10 failed logins for one email within 15 minutes, that email
// is refused (429) until the window has passed. Sliding window; time from the Clock. One process (SQLite) keeps
// the failures in memory; the processes of a cluster share them in the database (Cluster.loginFailures), since
// kept per process, N processes behind a load balancer would allow N times the attempts.
import type { Clock } from '../runtime/clock.ts';
import type { LoginFailures, Store } from '../store/store.ts';

export const MAX_FAILED_LOGINS = 10;
export const FAILED_LOGIN_WINDOW_MS = 15 * 60 * 1000;

export interface LoginThrottle {
  /** 0 when a login for this email may be tried, else the whole seconds until it may (at least 1). */
  retryAfterSeconds(email: string): Promise<number>;
  recordFailure(email: string): Promise<void>;
  /** A successful login forgets the earlier failures. */
  recordSuccess(email: string): Promise<void>;
}

/** The wait once `max` failures fall in the window: until the oldest of the latest `max` leaves it. */
function waitSeconds(latestFirst: number[], now: number, max: number, windowMs: number): number {
  if (latestFirst.length < max) return 0;
  return Math.max(1, Math.ceil((latestFirst[max - 1]! + windowMs - now) / 1000));
}

/** The throttle of a cluster: the failures of every process, in the database. */
export function createSharedLoginThrottle(clock: Clock, failures: LoginFailures, max = MAX_FAILED_LOGINS, windowMs = FAILED_LOGIN_WINDOW_MS): LoginThrottle {
  return {
    async retryAfterSeconds(email) {
      const now = clock.now();
      return waitSeconds(await failures.recent(email.toLowerCase(), now - windowMs, max), now, max, windowMs);
    },
    recordFailure(email) {
      const now = clock.now();
      return failures.record(email.toLowerCase(), now, now - windowMs);
    },
    recordSuccess(email) {
      return failures.clear(email.toLowerCase());
    },
  };
}

/** The throttle of one process: the failures in memory. */
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
    async retryAfterSeconds(email) {
      const now = clock.now();
      sweep(now);
      return waitSeconds(recent(email, now).toReversed(), now, max, windowMs);
    },
    async recordFailure(email) {
      const now = clock.now();
      const times = recent(email, now);
      times.push(now);
      failures.set(email.toLowerCase(), times.slice(-max));
    },
    async recordSuccess(email) {
      failures.delete(email.toLowerCase());
    },
  };
}

/** The throttle for this store: shared when other processes share it, else in this process's memory. */
export function loginThrottleFor(store: Pick<Store, 'cluster'>, clock: Clock): LoginThrottle {
  return store.cluster ? createSharedLoginThrottle(clock, store.cluster.loginFailures) : createLoginThrottle(clock);
}
