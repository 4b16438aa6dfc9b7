// Read-through caches for hot rows (projects, data connectors, devices), owned by the SQLite store.
// Safe because SQLite has a single writer process and every write goes through a repository that clears the
// cache it affects; a rolled-back transaction clears every cache (it may have cached uncommitted rows).
// Cached records are frozen: a caller that tried to mutate one would corrupt every later read.

const MAX_ENTRIES = 10_000;

export interface ReadCacheOptions<V> {
  /** The size of a value (bytes, roughly), counted against maxWeight; default 0. */
  weigh?: (value: V) => number;
  /** Past this total weight the cache starts afresh, like past its entry limit. Default: no limit. */
  maxWeight?: number;
}

function freezeRecord<V>(value: V): V {
  if (value && typeof value === 'object') {
    // A device is cached again after every event it emits (write-through), so this stays allocation-free.
    for (const k in value) {
      const v = value[k];
      if (v && typeof v === 'object') Object.freeze(v);
    }
    Object.freeze(value);
  }
  return value;
}

export class ReadCache<V> {
  private readonly entries = new Map<string, V>();
  /** Weights of the entries, when the cache weighs them. */
  private readonly weights = new Map<string, number>();
  private weight = 0;

  constructor(private readonly options: ReadCacheOptions<V> = {}) {}

  get(key: string, load: () => V): V {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const value = load();
    this.put(key, value);
    return value;
  }

  /** Caches the value just written (write-through), if the key is cached already. */
  update(key: string, next: (cached: V) => V): void {
    const hit = this.entries.get(key);
    if (hit !== undefined) this.put(key, next(hit));
  }

  delete(key: string): void {
    this.entries.delete(key);
    if (this.options.weigh) this.unweigh(key);
  }

  private put(key: string, value: V): void {
    if (Array.isArray(value)) value.forEach(freezeRecord);
    freezeRecord(value);
    if (this.entries.size >= MAX_ENTRIES) this.clear();
    if (this.options.weigh) {
      this.unweigh(key);
      const weight = this.options.weigh(value);
      if (this.weight + weight > (this.options.maxWeight ?? Infinity)) this.clear();
      this.weights.set(key, weight);
      this.weight += weight;
    }
    this.entries.set(key, value);
  }

  private unweigh(key: string): void {
    const old = this.weights.get(key);
    if (old === undefined) return;
    this.weight -= old;
    this.weights.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.weights.clear();
    this.weight = 0;
  }
}

/** Every cache of one database, so a rollback can clear them all. */
export class CacheRegistry {
  private readonly caches: Array<{ clear(): void }> = [];

  create<V>(options?: ReadCacheOptions<V>): ReadCache<V> {
    const cache = new ReadCache<V>(options);
    this.caches.push(cache);
    return cache;
  }

  /** A plain map whose (mutable) values its repository manages itself; cleared with the others. */
  createMap<K, V>(): Map<K, V> {
    const map = new Map<K, V>();
    this.caches.push(map);
    return map;
  }

  clearAll(): void {
    for (const c of this.caches) c.clear();
  }
}
