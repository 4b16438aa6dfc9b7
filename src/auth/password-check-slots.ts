// How many password checks a process runs at once, in all and per client. A check is scrypt (auth/passwords.ts),
// which Node runs on the libuv thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise) that file, DNS and
// other crypto work share: 64 logins sent at once queued 64 checks there, a real user's login waited 19 s behind
// them, and every file read or DNS lookup of the process waited too (measured: with 4 checks running, a stat()
// took 100-300 ms instead of 0.1 ms). Checks beyond the bound are refused at once, not queued: a queue would hold
// the flood's connections and still make the real user wait behind it.
// - The per-client share keeps one client (an address, an IPv6 /64) from taking every slot.
// - A client whose password was wrong within the window does not get the last free slot: that one is kept for
//   clients that have not failed (with a single slot, there is no such rule). Without it, a flood of wrong logins
//   from 64 addresses, each sent again the moment it was refused, took every slot as soon as it came free, and a
//   real user retrying after Retry-After needed 38 s and 36 refusals to log in (measured); with it, once each of
//   the flood's addresses has failed, they are left the other slots only.
import type { Clock } from '../runtime/clock.ts';
import { clientKey } from './client-address.ts';
import { FAILED_LOGIN_WINDOW_MS } from './login-throttle.ts';

export type Refusal = 'client' | 'server';

/** A slot taken: give it back when the check has ended, saying whether the password was wrong (nothing: no check ran). */
export type Slot = (wrong?: boolean) => void;

export interface PasswordCheckSlots {
  /** A slot for one check by the client, or who holds the slots it could have. */
  take(client: string): Slot | Refusal;
}

/** How long a client counts as failing after a wrong password: the login throttle's window. */
const FAILING_MS = FAILED_LOGIN_WINDOW_MS;

export function createPasswordCheckSlots(clock: Clock, total: number, perClient: number): PasswordCheckSlots {
  let running = 0;
  const byClient = new Map<string, number>();
  /** When each client's latest wrong password was checked; those older than FAILING_MS are swept now and then. */
  const failedAt = new Map<string, number>();
  let sweptAt = clock.now();

  const failing = (key: string, now: number) => {
    const at = failedAt.get(key);
    return at !== undefined && now - at < FAILING_MS;
  };
  const failed = (key: string, now: number) => {
    failedAt.set(key, now);
    if (now - sweptAt < 60_000) return;
    sweptAt = now;
    for (const [k, at] of failedAt) if (now - at >= FAILING_MS) failedAt.delete(k);
  };

  return {
    take(client) {
      const key = clientKey(client);
      const mine = byClient.get(key) ?? 0;
      if (mine >= perClient) return 'client';
      if (running >= total) return 'server';
      if (total > 1 && running === total - 1 && failing(key, clock.now())) return 'server';
      running++;
      byClient.set(key, mine + 1);
      let given = false;
      return (wrong) => {
        if (given) return;
        given = true;
        running--;
        const left = byClient.get(key)! - 1;
        if (left === 0) byClient.delete(key);
        else byClient.set(key, left);
        if (wrong === true) failed(key, clock.now());
        else if (wrong === false) failedAt.delete(key);
      };
    },
  };
}
