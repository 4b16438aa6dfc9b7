// The two grants of POST /oauth2/token (contract §2.3-2.5): a JWT-bearer assertion signed with a service
// account key, or a console user's email and password. Both mint the same Bearer access token.
import { ACCESS_TOKEN_LIFETIME_SECONDS } from '../auth/access-tokens.ts';
import { verifyAssertion, type AssertionKey } from '../auth/jwt-bearer.ts';
import type { LoginThrottle } from '../auth/login-throttle.ts';
import { verifyPassword } from '../auth/passwords.ts';
import type { Deps } from '../deps.ts';
import { oauthError, tooManyRequests } from '../domain/errors.ts';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/**
 * A well-formed scrypt hash of nothing in particular: unknown or pending users are checked against it, so a
 * wrong email costs the same time as a wrong password and does not reveal which emails exist.
 */
const DUMMY_PASSWORD_HASH = `scrypt$32768$8$1$${'A'.repeat(22)}$${'A'.repeat(43)}`;

function mint(deps: Deps, sub: string, kid: string): TokenResponse {
  const iat = Math.floor(deps.clock.now() / 1000);
  const access_token = deps.tokens.sign({ sub, kid, iat, exp: iat + ACCESS_TOKEN_LIFETIME_SECONDS });
  return { access_token, token_type: 'Bearer', expires_in: ACCESS_TOKEN_LIFETIME_SECONDS };
}

async function lookupAssertionKey(deps: Deps, keyId: string): Promise<AssertionKey | null> {
  const key = await deps.store.keys.get(keyId);
  if (!key) return null;
  const sa = await deps.store.serviceAccounts.get(key.serviceAccountId);
  if (!sa) return null;
  return { keyId: key.id, secret: deps.secretBox.open(key.secretEnc), serviceAccountId: sa.id, serviceAccountEmail: sa.email };
}

/** JWT-bearer grant: enableBasicAuth plays no part here (contract §2.3). */
export async function exchangeAssertion(deps: Deps, assertion: string, audiences: string[]): Promise<TokenResponse> {
  const verified = await verifyAssertion(assertion, {
    nowSeconds: deps.clock.now() / 1000,
    audiences,
    lookupKey: (kid) => lookupAssertionKey(deps, kid),
  });
  return mint(deps, `sa:${verified.serviceAccountId}`, verified.keyId);
}

/** Password grant for active console users, throttled per email (contract §2.5). */
export async function exchangePassword(deps: Deps, throttle: LoginThrottle, email: string, password: string): Promise<TokenResponse> {
  const wait = await throttle.retryAfterSeconds(email);
  if (wait > 0) throw tooManyRequests(wait, 'too many failed logins for this email; try again later');
  const user = await deps.store.users.getByEmail(email);
  const usable = user !== null && user.active && user.passwordHash !== null;
  const ok = await verifyPassword(password, usable ? user.passwordHash : DUMMY_PASSWORD_HASH);
  if (!usable || !ok) {
    await throttle.recordFailure(email);
    throw oauthError('invalid_grant', 'invalid email or password');
  }
  await throttle.recordSuccess(email);
  return mint(deps, `user:${user.id}`, '');
}
