// De-duplication of pushes by `event.eventId` (contract §6.9 step 5): delivery is at least once, so the same event
// can arrive twice (a 2xx that came after the 10 s deadline, a retry that crossed an acknowledgement). In memory by
// default, bounded in entries and time; any shared store (Redis SET NX EX, a database unique key) plugs in through
// DedupStore so several receiver processes agree.

/** Where claimed event ids are kept. `add` must be atomic: true only for the caller that added the id. */
export interface DedupStore {
  /** Records the id for `ttlSeconds`; true when it was not there yet. */
  add(eventId: string, ttlSeconds: number): boolean | Promise<boolean>;
  /** Forgets the id (its processing failed: let the retry through). */
  delete(eventId: string): void | Promise<void>;
}

export interface MemoryDedupStoreOptions {
  /** At most this many ids are kept; the oldest go first. Default 100 000. */
  maxEntries?: number;
  /** Clock in ms, for tests. Default Date.now. */
  now?: () => number;
}

/** The in-memory store: ids in insertion order with their expiry; the oldest are evicted past `maxEntries`. */
export class MemoryDedupStore implements DedupStore {
  private readonly entries = new Map<string, number>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: MemoryDedupStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? 100_000;
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1)
      throw new RangeError('maxEntries must be a positive integer');
    this.now = options.now ?? Date.now;
  }

  add(eventId: string, ttlSeconds: number): boolean {
    const now = this.now();
    const expiry = this.entries.get(eventId);
    if (expiry !== undefined && expiry > now) return false;
    // Re-inserted at the end, so Map order stays the order of expiry for one TTL.
    this.entries.delete(eventId);
    this.entries.set(eventId, now + ttlSeconds * 1000);
    this.evict(now);
    return true;
  }

  delete(eventId: string): void {
    this.entries.delete(eventId);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Drops expired ids from the front, and the oldest ids beyond the bound. */
  private evict(now: number): void {
    for (const [id, expiry] of this.entries) {
      if (this.entries.size <= this.maxEntries && expiry > now) break;
      this.entries.delete(id);
    }
  }
}

export interface DeduplicatorOptions {
  /** Default: a MemoryDedupStore with `maxEntries`. */
  store?: DedupStore;
  /** For the default store. Default 100 000. */
  maxEntries?: number;
  /**
   * How long an id is remembered, seconds. Default 13 hours: an event is retried for at most 12 hours after it
   * was queued (contract §6.5). A connector's `:sync` sends the same eventId again on purpose; within this time
   * such a resend is dropped as a duplicate.
   */
  ttlSeconds?: number;
}

export class Deduplicator {
  readonly store: DedupStore;
  readonly ttlSeconds: number;

  constructor(options: DeduplicatorOptions = {}) {
    this.store = options.store ?? new MemoryDedupStore({ maxEntries: options.maxEntries });
    this.ttlSeconds = options.ttlSeconds ?? 13 * 3600;
  }

  /** True the first time an eventId is seen (process the event), false for a duplicate (acknowledge, skip it). */
  async firstSeen(eventId: string): Promise<boolean> {
    if (typeof eventId !== 'string' || eventId === '')
      throw new TypeError('Deduplicator: eventId must be a non-empty string');
    return this.store.add(eventId, this.ttlSeconds);
  }

  /** Forget an event whose processing failed, so that its retry is processed. */
  async forget(eventId: string): Promise<void> {
    await this.store.delete(eventId);
  }
}
