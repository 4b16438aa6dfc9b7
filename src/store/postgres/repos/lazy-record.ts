// A record whose values are made on first use, and that otherwise behaves as a plain object of them (spread,
// Object.keys, `in`). A group-commit batch makes its repos, and the write-behind wraps their methods, for every
// batch; a batch uses a few of them, and making all of them each time (thirteen repos, ~100 methods) took 3 % of
// the main thread's busy time at saturation (CPU profile of `npm run bench:cost -- max 15 --postgres`).

export function lazyRecord<T extends object>(keys: readonly string[], make: (key: string) => unknown): T {
  const known = new Set(keys);
  const made = new Map<string, unknown>();
  const value = (key: string): unknown => {
    if (!made.has(key)) made.set(key, make(key));
    return made.get(key);
  };
  return new Proxy({} as T, {
    get: (_target, key) => (typeof key === 'string' && known.has(key) ? value(key) : undefined),
    has: (_target, key) => typeof key === 'string' && known.has(key),
    ownKeys: () => [...known],
    getOwnPropertyDescriptor: (_target, key) =>
      typeof key === 'string' && known.has(key)
        ? { value: value(key), enumerable: true, configurable: true, writable: false }
        : undefined,
  });
}
