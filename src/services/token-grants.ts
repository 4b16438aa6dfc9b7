// The two grants of POST /oauth2/token (contract §2.3-2.5): a JWT-bearer assertion signed with a service
// account key, or a console user's email and password. Both mint the same Bearer access token.
import { ACCESS_TOKEN_LIFETIME_SECONDS } from '../auth/access-tokens.ts';
import { useAssertionId } from '../auth/assertion-ids.ts';
import { verifyAssertion, type AssertionKey } from '../auth/jwt-bearer.ts';
import type { Deps } from '../deps.ts';
import { oauthError } from '../domain/errors.ts';
import type { TokenResponse } from '../wire/oauth.ts';
import { checkPassword } from './password-check.ts';

/** A minted token: the answer of the token endpoint, its access_token always there (the route may move it to a cookie). */
export type MintedToken = Required<TokenResponse>;

/** `gen`: a user's token generation, read with the user (a sign-out meanwhile leaves the token already refused). */
function mint(deps: Deps, sub: string, kid: string, gen?: number): MintedToken {
  const iat = Math.floor(deps.clock.now() / 1000);
  const access_token = deps.tokens.sign({
    sub,
    kid,
    iat,
    exp: iat + ACCESS_TOKEN_LIFETIME_SECONDS,
    ...(gen === undefined ? {} : { gen }),
  });
  return { access_token, token_type: 'Bearer', expires_in: ACCESS_TOKEN_LIFETIME_SECONDS };
}

async function lookupAssertionKey(deps: Deps, keyId: string): Promise<AssertionKey | null> {
  const key = await deps.store.keys.get(keyId);
  if (!key) return null;
  const sa = await deps.store.serviceAccounts.get(key.serviceAccountId);
  if (!sa) return null;
  return {
    keyId: key.id,
    secret: deps.secretBox.open(key.secretEnc),
    serviceAccountId: sa.id,
    serviceAccountEmail: sa.email,
  };
}

/** JWT-bearer grant: enableBasicAuth plays no part here (contract §2.3). */
export async function exchangeAssertion(deps: Deps, assertion: string, audiences: string[]): Promise<MintedToken> {
  const verified = await verifyAssertion(assertion, {
    nowSeconds: deps.clock.now() / 1000,
    audiences,
    lookupKey: (kid) => lookupAssertionKey(deps, kid),
    useJti: (keyId, jti, expSeconds) => useAssertionId(deps, keyId, jti, expSeconds),
  });
  return mint(deps, `sa:${verified.serviceAccountId}`, verified.keyId);
}

/** Password grant for active console users: the check is bounded and throttled (password-check.ts, contract §2.5). */
export async function exchangePassword(
  deps: Deps,
  email: string,
  password: string,
  client: string,
): Promise<MintedToken> {
  let userId = '';
  let generation = 0;
  const ok = await checkPassword(deps, email, client, password, async () => {
    const user = await deps.store.users.getByEmail(email);
    if (user === null || !user.active) return null;
    userId = user.id;
    generation = user.tokenGeneration;
    return user.passwordHash;
  });
  if (!ok) throw oauthError('invalid_grant', 'invalid email or password');
  return mint(deps, `user:${userId}`, '', generation);
}
