// Time is injected: every timestamp in the service comes from a Clock, so tests can move time by hand.

export interface Clock {
  /** Milliseconds since the Unix epoch (may carry a fractional part for sub-millisecond precision). */
  now(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
};

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  constructor(private ms: number = Date.UTC(2025, 5, 1, 12, 0, 0)) {}
  now(): number {
    return this.ms;
  }
  set(ms: number): void {
    this.ms = ms;
  }
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** Now, in integer microseconds (the store's time unit), from whatever holds the clock (deps, a part's own deps). */
export const nowMicros = (source: { clock: Clock }): number => Math.floor(source.clock.now() * 1000);
