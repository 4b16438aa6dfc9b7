// Authentication cache: Authorization header → Principal for a few seconds, so a busy client does not pay for the
// key, service account and memberships reads and an AES-GCM open on every request. Entries are keyed by a SHA-256
// of the header (the secret itself is never kept) and are dropped as soon as the store's auth version moves (every
// write to users, service accounts, keys or memberships, project deletes included): a deleted key, service account
// or user, or a changed membership, takes effect on the very next request. Failures are never cached.
// On PostgreSQL the version counts the writes of every process (a trigger-kept row), so this holds in a cluster.
import { sha256 } from '../runtime/sha256.ts';
import type { Principal } from './principal.ts';
import { authenticateCredential, type AuthDeps } from './authenticate.ts';

export const AUTH_CACHE_TTL_MS = 5000;
const MAX_ENTRIES = 10_000;

interface Entry {
  principal: Principal;
  /** store.authVersion() read before the lookup that produced the entry. */
  version: number;
  /** Cached until (ms on deps.clock): the TTL, or the credential's own validity if that ends sooner. */
  expiresAt: number;
}

/** Shared between requests, so frozen: a handler that tried to change it would corrupt later requests. */
function freezePrincipal(p: Principal): Principal {
  for (const m of p.memberships) {
    Object.freeze(m.roles);
    Object.freeze(m);
  }
  Object.freeze(p.memberships);
  return Object.freeze(p);
}

export type Authenticator = (header: string | undefined) => Promise<Principal>;

export function createCachedAuthenticator(deps: AuthDeps): Authenticator {
  const entries = new Map<string, Entry>();
  return async (header) => {
    if (!header) return (await authenticateCredential(deps, header)).principal;
    const key = sha256(header, 'base64');
    // Read before the lookup: a write that lands while it awaits leaves the entry already stale.
    const version = await deps.store.authVersion();
    const now = deps.clock.now();
    const hit = entries.get(key);
    if (hit !== undefined) {
      if (hit.version === version && now <= hit.expiresAt) return hit.principal;
      entries.delete(key);
    }
    const { principal, validUntil } = await authenticateCredential(deps, header);
    if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
    const frozen = freezePrincipal(principal);
    entries.set(key, { principal: frozen, version, expiresAt: Math.min(now + AUTH_CACHE_TTL_MS, validUntil) });
    return frozen;
  };
}
