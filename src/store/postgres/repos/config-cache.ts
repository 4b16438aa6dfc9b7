// Projects, each project's active data connectors and its enabled notification rules, read by every publish (the access
// check and the fan-outs), kept in memory and checked against the database's config version: a counter that statement
// triggers move on every write to projects, data_connectors and rules, by any process
// (../functions/bump_config_version.sql). The store reads it with the auth version at the start of every authenticated
// request, so a request sees every change committed before it began. Reads outside a request (heartbeats, the engine)
// use the cache only within a second of the last check, and read the database otherwise. A transaction that wrote any
// of those tables reads past the cache (it must see its own writes); its commit clears it. Measured: the reads of
// projects and connectors were 2 of the ~11 round trips of a published event (docs/benchmarks-log.md).
import type { RuleRecord } from '../../contract/alerting.ts';
import type { DataConnectorRecord } from '../../contract/connector-repos.ts';
import type { ProjectRecord } from '../../contract/records.ts';

const MAX_AGE_MS = 1000;
const MAX_ENTRIES = 10_000;

export class ConfigCache {
  private version = -1;
  /** Moves with the version and with every clear: a read that began before either is not stored. */
  private generation = 0;
  private checkedAt = -Infinity;
  readonly projects = new Map<string, ProjectRecord | null>();
  readonly activeConnectors = new Map<string, DataConnectorRecord[]>();
  readonly enabledRules = new Map<string, RuleRecord[]>();

  /** The config version as just read from the database. */
  checked(version: number): void {
    if (version !== this.version) {
      this.version = version;
      this.clear();
    }
    this.checkedAt = performance.now();
  }

  clear(): void {
    this.generation++;
    this.projects.clear();
    this.activeConnectors.clear();
    this.enabledRules.clear();
  }

  /** `map`'s entry for `key`, or `load`'s answer, stored when nothing moved while it loaded. */
  async read<V>(map: Map<string, V>, key: string, load: () => Promise<V>): Promise<V> {
    // Real time, not the service's clock: this bounds how old a check may be, which only the wall can tell.
    if (performance.now() - this.checkedAt > MAX_AGE_MS) return load();
    const hit = map.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const value = await load();
    if (generation === this.generation) {
      if (map.size >= MAX_ENTRIES) map.clear();
      map.set(key, value);
    }
    return value;
  }
}

/** A transaction's (or the pool's) view of the cache: once a transaction wrote a cached table, it reads past it. */
export interface ConfigView {
  cache: ConfigCache;
  transaction: boolean;
  wrote: boolean;
}

/** Reads through the cache, unless this transaction wrote a cached table. */
export function cachedRead<V>(
  view: ConfigView | undefined,
  map: (cache: ConfigCache) => Map<string, V>,
  key: string,
  load: () => Promise<V>,
): Promise<V> {
  return view === undefined || view.wrote ? load() : view.cache.read(map(view.cache), key, load);
}

/**
 * A write to a cached table: the cache is cleared before it and, outside a transaction (where it commits at once),
 * after it; a transaction's commit clears it (index.ts).
 */
export async function cachedWrite<T>(view: ConfigView | undefined, write: () => Promise<T>): Promise<T> {
  if (view === undefined) return write();
  view.cache.clear();
  if (view.transaction) view.wrote = true;
  try {
    return await write();
  } finally {
    if (!view.transaction) view.cache.clear();
  }
}
