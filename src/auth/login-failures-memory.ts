// The login throttle's counts kept in this process's memory: a store one process owns (SQLite) has no cluster to
// share them with, and a restart forgets them. Each call runs to its end before any other (no await in between),
// so attempts racing are counted one by one, as PostgreSQL's row locks count those of a cluster.
import type { LoginFailures } from '../store/contract/store.ts';

/** How often the keys whose window has passed are forgotten, in the callers' milliseconds. */
const SWEEP_MS = 60_000;

export function createMemoryLoginFailures(): LoginFailures {
  /** Times (ms) of the attempts counted per key, oldest first; only those after the latest `since` matter. */
  const counted = new Map<string, number[]>();
  let sweptAt = -Infinity;

  // Keeps the map bounded by the keys tried within a window: a flood of made-up emails leaves nothing behind.
  const sweep = (at: number, since: number) => {
    if (at - sweptAt < SWEEP_MS) return;
    sweptAt = at;
    for (const [key, times] of counted) if (times[times.length - 1]! <= since) counted.delete(key);
  };

  return {
    async reserve(counts, at, since) {
      sweep(at, since);
      const current = counts.map(({ key, limit }) => ({
        key,
        limit,
        times: (counted.get(key) ?? []).filter((t) => t > since),
      }));
      const full = current.find((c) => c.times.length >= c.limit);
      if (full) return { key: full.key, retryAt: full.times[full.times.length - full.limit]! + (at - since) };
      for (const { key, times } of current) {
        // In order, though a clock set back (a test's) may give a time before the latest.
        const i = times.findLastIndex((t) => t <= at);
        times.splice(i + 1, 0, at);
        counted.set(key, times);
      }
      return null;
    },
    async forgive(key, at) {
      const times = counted.get(key);
      const i = times?.indexOf(at) ?? -1;
      if (i >= 0) times!.splice(i, 1);
    },
    async clear(key) {
      counted.delete(key);
    },
  };
}
