/** Why dist/service/ does not match the sources, or null when it does. */
export function serviceBundleStale(): string | null;
export function buildService(): Promise<void>;
