// Checking a push's `X-Service-Signature` (contract §6.3, §6.9): an HS256 JWT made with the connector's signature
// secret whose `checksum_sha256` claim is the hex SHA-256 of the raw body. HS256 only (`alg: none`, HS512 and every
// other algorithm are refused before any key is used), `exp` and `iat` checked with a clock skew, and the checksum
// compared in constant time against the bytes exactly as received. The JWT itself is verified by jose.
import { createHash, timingSafeEqual } from 'node:crypto';
import { decodeProtectedHeader, errors, jwtVerify } from 'jose';

/** The header that carries the signature; receivers must match its name in any case. */
export const SIGNATURE_HEADER = 'X-Service-Signature';

/** Why a push was refused: one code per cause, so a receiver can log and count them. */
export type SignatureFailureReason =
  /** No X-Service-Signature header (or an empty one). */
  | 'missing_header'
  /** Not a JWT: not three base64url parts, or a header or payload that is not JSON. */
  | 'malformed'
  /** An algorithm other than HS256: `none`, HS512, RS256 … */
  | 'algorithm'
  /** The HMAC does not match: a wrong secret, or a changed header or payload. */
  | 'signature'
  /** `exp` has passed (beyond the clock skew). */
  | 'expired'
  /** `iat` is missing, not a number, or in the future (beyond the clock skew). */
  | 'issued_at'
  /** Older than `maxAgeSeconds`. */
  | 'too_old'
  /** No `checksum_sha256` claim. */
  | 'missing_checksum'
  /** The body is not the one that was signed (a changed byte). */
  | 'checksum_mismatch';

export class SignatureError extends Error {
  override readonly name = 'SignatureError';
  constructor(readonly reason: SignatureFailureReason, message: string) {
    super(message);
  }
}

/** The claims of a verified signature (contract §6.3). */
export interface SignatureClaims {
  /** Hex SHA-1 of the body (legacy; not checked). */
  checksum?: string;
  /** Hex SHA-256 of the body: checked. */
  checksum_sha256: string;
  /** Unix seconds: when this attempt started. */
  iat: number;
  /** Unix seconds: iat + 3600. */
  exp: number;
  /** A new id per attempt (retries of one event have different jti; dedupe on event.eventId). */
  jti?: string;
  [claim: string]: unknown;
}

export interface VerifyOptions {
  /** Refuse signatures issued longer ago than this (seconds). Default: only `exp` limits them (1 hour). */
  maxAgeSeconds?: number;
  /** Allowed clock difference with the service, seconds. Default 60. */
  clockSkewSeconds?: number;
  /** "Now", for tests: a Date or Unix seconds. Default: the system clock. */
  now?: Date | number;
}

/** A headers object (node's IncomingHttpHeaders, a fetch Headers, or any name → value record). */
export type HeadersLike =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

/** The signature header's value from a headers object, matching the name in any case. */
export function signatureHeaderOf(headers: HeadersLike): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(SIGNATURE_HEADER) ?? undefined;
  }
  const wanted = SIGNATURE_HEADER.toLowerCase();
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (name.toLowerCase() !== wanted) continue;
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

const fail = (reason: SignatureFailureReason, message: string): never => {
  throw new SignatureError(reason, message);
};

const toBytes = (body: Uint8Array | string): Uint8Array => (typeof body === 'string' ? Buffer.from(body, 'utf8') : body);

/**
 * Verifies a push: resolves to its claims, or rejects with a SignatureError whose `reason` says why.
 *
 * `rawBody` must be the request body exactly as received (a Buffer, before any JSON parsing); a string is taken as
 * its UTF-8 bytes. `header` is the X-Service-Signature value, or the request's headers object.
 */
export async function verifySignature(
  rawBody: Uint8Array | string,
  header: string | undefined | null | HeadersLike,
  secret: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<SignatureClaims> {
  const token = typeof header === 'string' || header === undefined || header === null ? header : signatureHeaderOf(header);
  if (!token || token.trim() === '') return fail('missing_header', `no ${SIGNATURE_HEADER} header`);
  const skew = options.clockSkewSeconds ?? 60;
  const nowSeconds = options.now === undefined ? Date.now() / 1000 : options.now instanceof Date ? options.now.getTime() / 1000 : options.now;

  // The algorithm is checked first and by us: the token never chooses how it is verified.
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(token.trim()).alg;
  } catch {
    return fail('malformed', `${SIGNATURE_HEADER} is not a JWT`);
  }
  if (alg !== 'HS256') return fail('algorithm', `${SIGNATURE_HEADER} uses alg ${JSON.stringify(alg)}; only HS256 is accepted`);

  const key = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  if (key.length === 0) throw new TypeError('verifySignature: the signature secret is empty');
  let claims: SignatureClaims;
  try {
    const verified = await jwtVerify(token.trim(), key, { algorithms: ['HS256'], clockTolerance: skew, currentDate: new Date(nowSeconds * 1000) });
    claims = verified.payload as SignatureClaims;
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) return fail('signature', 'the signature does not match: wrong secret, or a changed token');
    if (err instanceof errors.JWTExpired) return fail('expired', 'the signature has expired (exp is past)');
    if (err instanceof errors.JOSEAlgNotAllowed) return fail('algorithm', 'only HS256 is accepted');
    if (err instanceof errors.JWTClaimValidationFailed) return fail('issued_at', `claim check failed: ${err.message}`);
    return fail('malformed', `${SIGNATURE_HEADER} is not a valid JWT: ${(err as Error).message}`);
  }

  if (typeof claims.iat !== 'number' || !Number.isFinite(claims.iat)) return fail('issued_at', 'the signature has no numeric iat');
  if (claims.iat > nowSeconds + skew) return fail('issued_at', 'the signature was issued in the future (check the clock)');
  if (options.maxAgeSeconds !== undefined && nowSeconds - claims.iat > options.maxAgeSeconds + skew) {
    return fail('too_old', `the signature is older than ${options.maxAgeSeconds} s`);
  }
  if (typeof claims.exp !== 'number') return fail('expired', 'the signature has no exp');

  if (typeof claims.checksum_sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(claims.checksum_sha256)) {
    return fail('missing_checksum', 'the signature carries no checksum_sha256');
  }
  const actual = createHash('sha256').update(toBytes(rawBody)).digest();
  const expected = Buffer.from(claims.checksum_sha256, 'hex');
  if (!timingSafeEqual(actual, expected)) return fail('checksum_mismatch', 'the body is not the one that was signed (checksum_sha256 differs)');
  return claims;
}
