// Per-principal token buckets (contract §1.11): capacity N refilled at N per window; an empty bucket gives
// 429 with Retry-After in whole seconds. In memory, per process.
import type { RateLimit } from '../config.ts';
import type { Clock } from '../runtime/clock.ts';

interface Bucket {
  tokens: number;
  last: number;
}

export interface RateLimiter {
  /** Takes one token; returns 0 when allowed, else the seconds until a token is free (at least 1). */
  take(key: string): number;
}

export function createRateLimiter(limit: RateLimit | null, clock: Clock): RateLimiter {
  if (!limit) return { take: () => 0 };
  const buckets = new Map<string, Bucket>();
  let lastSweep = clock.now();
  return {
    take(key) {
      const now = clock.now();
      if (now - lastSweep > 60_000) {
        // Forget buckets that have refilled completely; they are indistinguishable from new ones.
        for (const [k, b] of buckets)
          if (b.tokens + ((now - b.last) / 1000) * limit.refillPerSecond >= limit.capacity) buckets.delete(k);
        lastSweep = now;
      }
      let b = buckets.get(key);
      if (!b) {
        b = { tokens: limit.capacity, last: now };
        buckets.set(key, b);
      }
      b.tokens = Math.min(limit.capacity, b.tokens + ((now - b.last) / 1000) * limit.refillPerSecond);
      b.last = now;
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((1 - b.tokens) / limit.refillPerSecond));
    },
  };
}
