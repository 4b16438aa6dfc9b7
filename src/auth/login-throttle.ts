// Password-login throttle (contract §2.5, docs/authentication.md). Every login is counted before its password is
// checked, twice, in a sliding window of 15 minutes:
// - per client and email: 10 from one client address (an IPv6 /64) refuse that client for that email. This is the
//   lock a guesser meets, and it is its own: the owner, at another address, still logs in.
// - per email: 50 from all addresses together refuse the email everywhere. This bounds a guesser who spreads over
//   many addresses; to lock the owner out, one has to keep sending 50 wrong passwords every 15 minutes from at
//   least five addresses.
// A login whose password is right is no failure: its count is taken back, and so are its client's earlier failures
// for the email. Counting first (an atomic reservation in LoginFailures) means attempts racing cannot all be
// checked: the count was once read before the check (scrypt, slow) and written after it, and 60 wrong passwords
// sent at once were all checked. Time comes from the Clock. One process (SQLite) keeps the counts in memory; the
// processes of a cluster share them in the database, since kept per process, N processes behind a load balancer
// would allow N times the attempts.
import type { Clock } from '../runtime/clock.ts';
import { tooManyRequests } from '../domain/errors.ts';
import type { LoginFailures, Store } from '../store/contract/store.ts';
import { clientKey } from './client-address.ts';
import { createMemoryLoginFailures } from './login-failures-memory.ts';

export const FAILED_LOGINS_PER_CLIENT = 10;
export const FAILED_LOGINS_PER_EMAIL = 50;
export const FAILED_LOGIN_WINDOW_MS = 15 * 60 * 1000;

export interface LoginAttempt {
  /** The password was right: the attempt is no failure, and the client's earlier failures for the email are forgiven. */
  succeeded(): Promise<void>;
}

export interface LoginThrottle {
  /**
   * Counts a login for the email from the client (its address) before the password is checked, or refuses it with
   * a 429 whose Retry-After says when it may be tried. A check that fails leaves the count as it is.
   */
  begin(email: string, client: string): Promise<LoginAttempt>;
}

export interface ThrottleLimits {
  perClient: number;
  perEmail: number;
  windowMs: number;
}

const DEFAULT_LIMITS: ThrottleLimits = {
  perClient: FAILED_LOGINS_PER_CLIENT,
  perEmail: FAILED_LOGINS_PER_EMAIL,
  windowMs: FAILED_LOGIN_WINDOW_MS,
};

export function createLoginThrottle(
  clock: Clock,
  failures: LoginFailures,
  limits: ThrottleLimits = DEFAULT_LIMITS,
): LoginThrottle {
  return {
    async begin(rawEmail, client) {
      const email = rawEmail.toLowerCase();
      // Distinct prefixes, and the email last, so that no email can spell another key.
      const emailKey = `email ${email}`;
      const clientEmailKey = `client ${clientKey(client)} ${email}`;
      const at = clock.now();
      const full = await failures.reserve(
        [
          { key: clientEmailKey, limit: limits.perClient },
          { key: emailKey, limit: limits.perEmail },
        ],
        at,
        at - limits.windowMs,
      );
      if (full) {
        const wait = Math.max(1, Math.ceil((full.retryAt - at) / 1000));
        throw tooManyRequests(
          wait,
          full.key === clientEmailKey
            ? 'too many failed logins for this email from this address; try again later'
            : 'too many failed logins for this email; try again later',
        );
      }
      return {
        async succeeded() {
          await failures.clear(clientEmailKey);
          await failures.forgive(emailKey, at);
        },
      };
    },
  };
}

/** The throttle for this store: shared when other processes share it, else in this process's memory. */
export function loginThrottleFor(store: Pick<Store, 'cluster'>, clock: Clock): LoginThrottle {
  return createLoginThrottle(clock, store.cluster ? store.cluster.loginFailures : createMemoryLoginFailures());
}
