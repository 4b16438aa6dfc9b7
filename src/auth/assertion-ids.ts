// JWT-bearer assertions are taken once (jwt-bearer.ts check 12): each `jti` is remembered in the store, by key, until
// the assertion could no longer pass the expiry check, so a replay is refused in every process of a cluster. The
// retention job forgets the ones past their time.
import { nowMicros, type Clock } from '../runtime/clock.ts';
import { sha256 } from '../runtime/sha256.ts';
import type { Store } from '../store/contract/store.ts';

/** Rows per delete statement of the prune. */
const PRUNE_BATCH = 1000;

/**
 * Records the key's `jti` as used until `expSeconds` (Unix seconds); false when it was used already. The store keeps a
 * SHA-256 of it: a jti is any string the client chose, of any length.
 */
export async function useAssertionId(
  deps: { store: Store; clock: Clock },
  keyId: string,
  jti: string,
  expSeconds: number,
): Promise<boolean> {
  return deps.store.assertionIds.use(keyId, sha256(jti, 'base64'), Math.ceil(expSeconds * 1_000_000), nowMicros(deps));
}

/** Forgets every jti remembered past its time, a batch per statement; returns how many. */
export async function pruneAssertionIds(deps: { store: Store; clock: Clock }): Promise<number> {
  const now = nowMicros(deps);
  let total = 0;
  for (;;) {
    const n = await deps.store.assertionIds.deleteExpired(now, PRUNE_BATCH);
    total += n;
    if (n < PRUNE_BATCH) return total;
  }
}
