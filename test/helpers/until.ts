// Waiting in tests for what another process, connection or thread does, which no fake clock can move: the one
// place tests sleep or poll. Time rules of our own code (retries, expiry, leases) move a FakeClock instead.
import { setTimeout as delay } from 'node:timers/promises';

/** Waits `ms` of real time: for something that must *not* happen in that time, or a server's own timer. */
export function sleep(ms: number): Promise<void> {
  return delay(ms);
}

export interface WaitOptions {
  /** Fails after this long (default 15 s: a busy CI machine is several times slower than a laptop). */
  timeoutMs?: number;
  /** Time between two checks (default 50 ms). */
  everyMs?: number;
}

/** Resolves once `check` holds; throws `timed out waiting for <what>` after the timeout. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  options: WaitOptions | number = {},
): Promise<void> {
  await waitFor(what, async () => ((await check()) ? true : undefined), options);
}

/** The first value `get` gives other than undefined; throws `timed out waiting for <what>` after the timeout. */
export async function waitFor<T>(
  what: string,
  get: () => T | undefined | Promise<T | undefined>,
  options: WaitOptions | number = {},
): Promise<T> {
  const { timeoutMs = 15_000, everyMs = 50 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(everyMs);
  }
}
