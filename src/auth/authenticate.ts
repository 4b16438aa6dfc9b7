// Turns an Authorization header into a Principal (contract §2.1-2.4): Basic for service accounts with
// enableBasicAuth, Bearer for tokens minted by /oauth2/token. Anything else is a 401.
import type { Clock } from '../runtime/clock.ts';
import type { Store } from '../store/contract/store.ts';
import type { AccessTokenSigner } from './access-tokens.ts';
import { unauthenticated } from '../domain/errors.ts';
import type { Principal } from './principal.ts';
import { ACCESS_TOKEN_GRACE_SECONDS } from './access-tokens.ts';
import { safeEqual, type SecretBox } from './secret-box.ts';

/** What authentication reads: the store, the clock, and the two keys derived from the master key. */
export interface AuthDeps {
  store: Store;
  clock: Clock;
  secretBox: Pick<SecretBox, 'open'>;
  tokens: Pick<AccessTokenSigner, 'verify'>;
}

export async function authenticate(deps: AuthDeps, header: string | undefined): Promise<Principal> {
  return (await authenticateCredential(deps, header)).principal;
}

export interface Authenticated {
  principal: Principal;
  /** Last instant (ms on deps.clock) the credential itself is honoured: a token's expiry plus grace; Infinity for Basic. */
  validUntil: number;
}

/** authenticate(), also saying how long the credential stays valid by itself (for the cache in auth-cache.ts). */
export async function authenticateCredential(deps: AuthDeps, header: string | undefined): Promise<Authenticated> {
  if (!header) throw unauthenticated('missing Authorization header');
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'basic') return { principal: await authenticateBasic(deps, value), validUntil: Infinity };
  if (scheme === 'bearer') return authenticateBearer(deps, value);
  throw unauthenticated('unsupported Authorization scheme; use Basic or Bearer');
}

async function authenticateBasic(deps: AuthDeps, value: string): Promise<Principal> {
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (!value || colon < 0) throw unauthenticated('malformed Basic credentials');
  const keyId = decoded.slice(0, colon);
  const secret = decoded.slice(colon + 1);
  const key = await deps.store.keys.get(keyId);
  const sa = key ? await deps.store.serviceAccounts.get(key.serviceAccountId) : null;
  if (!key || !sa || !safeEqual(deps.secretBox.open(key.secretEnc), secret))
    throw unauthenticated('invalid key id or secret');
  if (!sa.enableBasicAuth) throw unauthenticated('Basic Auth is not enabled for this service account; use OAuth2');
  const memberships = await deps.store.memberships.listByMember(sa.id);
  return { kind: 'serviceAccount', id: sa.id, email: sa.email, projectId: sa.projectId, keyId: key.id, memberships };
}

async function authenticateBearer(deps: AuthDeps, token: string): Promise<Authenticated> {
  const claims = deps.tokens.verify(token, deps.clock.now() / 1000);
  if (!claims) throw unauthenticated('invalid or expired access token');
  // verify() refuses the token once now / 1000 > exp + grace.
  const validUntil = (claims.exp + ACCESS_TOKEN_GRACE_SECONDS) * 1000;
  const [kind, id] = claims.sub.split(':');
  if (kind === 'sa' && id) {
    const key = await deps.store.keys.get(claims.kid);
    const sa = key && key.serviceAccountId === id ? await deps.store.serviceAccounts.get(id) : null;
    if (!sa) throw unauthenticated('the key or service account of this token no longer exists');
    const memberships = await deps.store.memberships.listByMember(sa.id);
    return {
      principal: {
        kind: 'serviceAccount',
        id: sa.id,
        email: sa.email,
        projectId: sa.projectId,
        keyId: claims.kid,
        memberships,
      },
      validUntil,
    };
  }
  if (kind === 'user' && id) {
    const user = await deps.store.users.get(id);
    if (!user?.active) throw unauthenticated('the user of this token no longer exists');
    if ((claims.gen ?? 0) !== user.tokenGeneration)
      throw unauthenticated('this session has ended (signed out, or the password was reset); sign in again');
    const memberships = await deps.store.memberships.listByMember(user.id);
    return { principal: { kind: 'user', id: user.id, email: user.email, memberships }, validUntil };
  }
  throw unauthenticated('invalid access token');
}
