// Checking a push's `X-Service-Signature` (contract §6.3, §6.9): an HS256 JWT made with the connector's signature
// secret whose `checksum_sha256` claim is the hex SHA-256 of the raw body. HS256 only (`alg: none`, HS512 and every
// other algorithm are refused before any key is used), `exp` and `iat` checked with a clock skew, and the HMAC and
// the checksum compared in constant time against the bytes exactly as received. node:crypto only, no dependency:
// the kit is also the stand-alone package in packages/receiver (`sensorcloud-receiver`). The checks and their order
// are those of jose's jwtVerify (which this file used before), so every token gets the same reason as it did then.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

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
  constructor(
    readonly reason: SignatureFailureReason,
    message: string,
  ) {
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
export type HeadersLike = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

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

const toBytes = (body: Uint8Array | string): Uint8Array =>
  typeof body === 'string' ? Buffer.from(body, 'utf8') : body;

/**
 * The bytes of one part of a compact JWT, or undefined when it is not base64url. Decoded as jose decoded it (the
 * WHATWG "forgiving" base64 of atob): ASCII whitespace is skipped, and up to two `=` may pad a multiple of four.
 */
function base64url(part: string): Buffer | undefined {
  const text = part.replace(/[\t\n\f\r ]/g, '');
  const match = /^([A-Za-z0-9_-]*)(={0,2})$/.exec(text);
  if (match === null || (match[2] !== '' && text.length % 4 !== 0) || match[1]!.length % 4 === 1) return undefined;
  return Buffer.from(match[1]!, 'base64url');
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A JSON object (not an array, not null) from a base64url part, or undefined. */
function jsonObject(part: string): Record<string, unknown> | undefined {
  const bytes = base64url(part);
  if (bytes === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(utf8.decode(bytes));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

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
  const raw =
    typeof header === 'string' || header === undefined || header === null ? header : signatureHeaderOf(header);
  if (!raw || raw.trim() === '') return fail('missing_header', `no ${SIGNATURE_HEADER} header`);
  const token = raw.trim();
  const skew = options.clockSkewSeconds ?? 60;
  const nowSeconds =
    options.now === undefined
      ? Date.now() / 1000
      : options.now instanceof Date
        ? options.now.getTime() / 1000
        : options.now;

  // The algorithm is checked first and by us: the token never chooses how it is verified. (A five-part token, a
  // JWE, has its header read too, so that its alg is what refuses it.)
  const parts = token.split('.');
  const protectedHeader = parts.length === 3 || parts.length === 5 ? jsonObject(parts[0]!) : undefined;
  if (protectedHeader === undefined) return fail('malformed', `${SIGNATURE_HEADER} is not a JWT`);
  const alg = protectedHeader.alg;
  if (alg !== 'HS256')
    return fail('algorithm', `${SIGNATURE_HEADER} uses alg ${JSON.stringify(alg)}; only HS256 is accepted`);

  const key = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  if (key.length === 0) throw new TypeError('verifySignature: the signature secret is empty');
  if (!Number.isFinite(nowSeconds)) throw new TypeError('verifySignature: options.now is not a valid time');
  if (typeof skew !== 'number' || !Number.isFinite(skew) || skew < 0)
    throw new TypeError('verifySignature: options.clockSkewSeconds must be a number ≥ 0');
  const malformed = (why: string): never => fail('malformed', `${SIGNATURE_HEADER} is not a valid JWT: ${why}`);
  if (parts.length !== 3) return malformed('Invalid Compact JWS');
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
  // RFC 7515 §4.1.11: `crit` lists extensions the verifier must understand. The only one known is `b64` (RFC 7797),
  // and a JWT may not use it to leave its payload unencoded: refused once the HMAC is known to match.
  if (protectedHeader.crit !== undefined) {
    const crit = protectedHeader.crit;
    if (!Array.isArray(crit) || crit.length === 0 || crit.some((name) => typeof name !== 'string' || name === ''))
      return malformed('"crit" must be an array of non-empty strings');
    const unknown = crit.find((name) => name !== 'b64');
    if (unknown !== undefined) return malformed(`Extension Header Parameter "${unknown}" is not recognized`);
    if (typeof protectedHeader.b64 !== 'boolean') return malformed('the "b64" header parameter must be a boolean');
  }

  if (!/^[\x00-\x7f]*$/.test(encodedPayload)) return malformed('The payload is not a valid base64url string');
  const signature = base64url(encodedSignature);
  if (signature === undefined) return malformed('Failed to base64url decode the signature');
  const expectedSignature = createHmac('sha256', key).update(`${encodedHeader}.${encodedPayload}`).digest();
  if (signature.length !== expectedSignature.length || !timingSafeEqual(signature, expectedSignature)) {
    return fail('signature', 'the signature does not match: wrong secret, or a changed token');
  }
  if (protectedHeader.crit !== undefined && protectedHeader.b64 === false)
    return malformed('JWTs MUST NOT use unencoded payload');
  const payload = jsonObject(encodedPayload);
  if (payload === undefined) return malformed('JWT Claims Set must be a top-level JSON object');

  // The registered time claims as jose checked them: numbers when present, against "now" in whole seconds.
  const now = Math.floor(nowSeconds);
  for (const claim of ['iat', 'nbf', 'exp']) {
    if (payload[claim] !== undefined && typeof payload[claim] !== 'number')
      return fail('issued_at', `claim check failed: "${claim}" claim must be a number`);
  }
  if (typeof payload.nbf === 'number' && payload.nbf > now + skew)
    return fail('issued_at', 'claim check failed: "nbf" claim timestamp check failed');
  if (typeof payload.exp === 'number' && payload.exp <= now - skew)
    return fail('expired', 'the signature has expired (exp is past)');
  const claims = payload as SignatureClaims;

  if (typeof claims.iat !== 'number' || !Number.isFinite(claims.iat))
    return fail('issued_at', 'the signature has no numeric iat');
  if (claims.iat > nowSeconds + skew)
    return fail('issued_at', 'the signature was issued in the future (check the clock)');
  if (options.maxAgeSeconds !== undefined && nowSeconds - claims.iat > options.maxAgeSeconds + skew) {
    return fail('too_old', `the signature is older than ${options.maxAgeSeconds} s`);
  }
  if (typeof claims.exp !== 'number') return fail('expired', 'the signature has no exp');

  if (typeof claims.checksum_sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(claims.checksum_sha256)) {
    return fail('missing_checksum', 'the signature carries no checksum_sha256');
  }
  const actual = createHash('sha256').update(toBytes(rawBody)).digest();
  const expected = Buffer.from(claims.checksum_sha256, 'hex');
  if (!timingSafeEqual(actual, expected))
    return fail('checksum_mismatch', 'the body is not the one that was signed (checksum_sha256 differs)');
  return claims;
}
