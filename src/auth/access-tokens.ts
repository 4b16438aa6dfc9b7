// Bearer access tokens (contract §2.4, §7 #12): a compact HS256 JWT signed with a key derived from the
// master key, carrying the principal, the key it was minted with, the expiry and, for a user, its token generation.
// Stateless to verify; the authenticator still checks on every request that the principal (and key) exist and that
// a user's generation has not moved on, so deletion, sign-out and a password reset kill tokens.
import { createHmac } from 'node:crypto';
import { safeEqual } from './secret-box.ts';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 3600;
/** A token is still honoured this long after its expiry (clients count expires_in from receipt). */
export const ACCESS_TOKEN_GRACE_SECONDS = 30;

export interface AccessTokenClaims {
  /** `sa:<id>` or `user:<id>`. */
  sub: string;
  /** Key id for service accounts; '' for users. */
  kid: string;
  iat: number;
  exp: number;
  /**
   * A user's token generation when the token was minted (UserRecord.tokenGeneration): the token is refused once the
   * user's has moved on (signed out, password reset). Absent on service-account tokens, and on user tokens minted
   * before generations existed, which count as generation 0.
   */
  gen?: number;
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

export interface AccessTokenSigner {
  sign(claims: AccessTokenClaims): string;
  /** The claims, or null when the token is malformed, forged or expired (beyond the grace period). */
  verify(token: string, nowSeconds: number): AccessTokenClaims | null;
}

export function createAccessTokenSigner(masterKey: Buffer): AccessTokenSigner {
  const key = createHmac('sha256', masterKey).update('sensorcloud/access-token/v1').digest();
  const mac = (input: string) => createHmac('sha256', key).update(input).digest('base64url');
  return {
    sign(claims) {
      const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
      return `${HEADER}.${payload}.${mac(`${HEADER}.${payload}`)}`;
    },
    verify(token, nowSeconds) {
      const parts = token.split('.');
      if (parts.length !== 3 || parts[0] !== HEADER) return null;
      if (!safeEqual(mac(`${parts[0]}.${parts[1]}`), parts[2]!)) return null;
      let claims: AccessTokenClaims;
      try {
        claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
      } catch {
        return null;
      }
      if (typeof claims.sub !== 'string' || typeof claims.exp !== 'number') return null;
      if (claims.gen !== undefined && typeof claims.gen !== 'number') return null;
      if (nowSeconds > claims.exp + ACCESS_TOKEN_GRACE_SECONDS) return null;
      return claims;
    },
  };
}
