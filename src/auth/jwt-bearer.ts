// RFC 7523 assertion checks for POST /oauth2/token (contract §2.3), in the contract's order. Pure apart from
// the key lookup the caller passes in. HS256 only, verified here with node:crypto: the algorithm is never
// chosen by the token. Failure descriptions never contain a secret.
import { createHmac } from 'node:crypto';
import { oauthError } from '../domain/errors.ts';
import { safeEqual } from './secret-box.ts';

/** Allowed clock difference between the client and us, seconds. */
export const CLOCK_SKEW_SECONDS = 60;
/** Longest accepted exp − iat, seconds (3600 plus room for clients that read the clock twice). */
export const MAX_ASSERTION_LIFETIME_SECONDS = 3660;

export interface AssertionKey {
  keyId: string;
  /** The plain key secret; its UTF-8 bytes are the HMAC key. */
  secret: string;
  serviceAccountId: string;
  serviceAccountEmail: string;
}

export interface VerifyAssertionOptions {
  /** Unix seconds. */
  nowSeconds: number;
  /** Accepted audiences (normalised here before comparing). */
  audiences: string[];
  /** The key named by `kid` with its service account, or null when either does not exist. */
  lookupKey(keyId: string): Promise<AssertionKey | null>;
  /**
   * Records the assertion's `jti` as used, to be remembered until `expSeconds` (Unix seconds); false when it was used
   * already. Called last, for an assertion that passed every other check, so a forged one never takes a jti.
   */
  useJti?(keyId: string, jti: string, expSeconds: number): Promise<boolean>;
}

export interface VerifiedAssertion {
  serviceAccountId: string;
  keyId: string;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;
/** The signature may be empty (alg none), so that such tokens fail on their alg, the clearer reason. */
const SIGNATURE_SEGMENT = /^[A-Za-z0-9_-]*$/;

const invalid = (description: string) => oauthError('invalid_grant', description);

function decodeObject(segment: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Normalises a token URL for comparison: lower-case scheme and host, default port dropped, trailing slash
 * dropped. Null when it is not an absolute http(s) URL.
 */
export function normaliseAudience(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  const path = url.pathname.length > 1 ? url.pathname.replace(/\/$/, '') : '';
  return `${url.protocol}//${url.host}${path}${url.search}`;
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Runs checks 1-11 of contract §2.3 in order, then the jti check; throws invalid_grant at the first failure. */
export async function verifyAssertion(assertion: string, options: VerifyAssertionOptions): Promise<VerifiedAssertion> {
  // 1. Three base64url segments; header and payload are JSON objects.
  const parts = assertion.split('.');
  const [headerPart = '', payloadPart = '', signaturePart = ''] = parts;
  if (
    parts.length !== 3 ||
    !SEGMENT.test(headerPart) ||
    !SEGMENT.test(payloadPart) ||
    !SIGNATURE_SEGMENT.test(signaturePart)
  ) {
    throw invalid('assertion must be a JWT of three base64url segments');
  }
  const header = decodeObject(headerPart);
  const claims = decodeObject(payloadPart);
  if (!header || !claims) throw invalid('assertion header and payload must be JSON objects');

  // 2. alg is exactly HS256; typ is ignored.
  if (header.alg !== 'HS256') throw invalid('assertion alg must be HS256');

  // 3. kid names an existing key of an existing service account.
  if (typeof header.kid !== 'string' || header.kid === '') throw invalid('assertion header must carry kid, the key id');
  const key = await options.lookupKey(header.kid);
  if (!key) throw invalid('assertion kid does not name an existing key');

  // 4. HMAC-SHA256 under the key secret, compared in constant time.
  const expected = createHmac('sha256', Buffer.from(key.secret, 'utf8'))
    .update(`${headerPart}.${payloadPart}`)
    .digest('base64url');
  if (!safeEqual(expected, signaturePart)) throw invalid('assertion signature does not verify with the key');

  // 5. iss is the service account's email.
  if (typeof claims.iss !== 'string' || claims.iss.toLowerCase() !== key.serviceAccountEmail.toLowerCase()) {
    throw invalid("assertion iss must be the service account's email");
  }

  // 6. aud is a string or an array of strings, one of them accepted.
  const aud = claims.aud;
  const auds =
    typeof aud === 'string'
      ? [aud]
      : Array.isArray(aud) && aud.every((a) => typeof a === 'string')
        ? (aud as string[])
        : null;
  if (!auds) throw invalid('assertion aud must be a string or an array of strings');
  const accepted = new Set(options.audiences.map(normaliseAudience).filter((a): a is string => a !== null));
  if (
    !auds.some((a) => {
      const n = normaliseAudience(a);
      return n !== null && accepted.has(n);
    })
  ) {
    throw invalid(`assertion aud must be the token URL ${options.audiences[0] ?? ''}`.trim());
  }

  // 7. iat and exp are numbers, exp > iat.
  const { iat, exp, nbf } = claims;
  if (!isNumber(iat) || !isNumber(exp)) throw invalid('assertion iat and exp must be numbers');
  if (exp <= iat) throw invalid('assertion exp must be after iat');
  const now = options.nowSeconds;

  // 8. Not issued in the future (beyond the skew).
  if (iat > now + CLOCK_SKEW_SECONDS) throw invalid('assertion iat is in the future; check the client clock');

  // 9. Not expired (beyond the skew).
  if (exp <= now - CLOCK_SKEW_SECONDS) throw invalid('assertion has expired');

  // 10. Short-lived.
  if (exp - iat > MAX_ASSERTION_LIFETIME_SECONDS)
    throw invalid(`assertion exp - iat must be at most ${MAX_ASSERTION_LIFETIME_SECONDS} seconds`);

  // 11. nbf, when present, is not in the future (beyond the skew).
  if (nbf !== undefined && (!isNumber(nbf) || nbf > now + CLOCK_SKEW_SECONDS))
    throw invalid('assertion nbf is in the future or not a number');

  // 12. jti, when present, is a string not used before (RFC 7523 §3 item 7), remembered for as long as check 9 could
  // pass. Without a jti the window of checks 8-10 is the only bound: existing clients (the documented jose call, this
  // service's CLI before it sent one) sign none, and some exchange one assertion more than once.
  const { jti } = claims;
  if (jti !== undefined) {
    if (typeof jti !== 'string') throw invalid('assertion jti must be a string');
    if (options.useJti && !(await options.useJti(key.keyId, jti, exp + CLOCK_SKEW_SECONDS))) {
      throw invalid('assertion jti was used already: sign a new assertion, with a new jti, for each token request');
    }
  }

  return { serviceAccountId: key.serviceAccountId, keyId: key.keyId };
}
