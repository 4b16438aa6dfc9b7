// Checking a push's `X-Service-Signature` (contract §6.3, §6.9): an HS256 JWT made with the connector's signature
// secret whose `checksum_sha256` claim is the hex SHA-256 of the raw body. HS256 only (`alg: none`, HS512 and every
// other algorithm are refused before any key is used), `exp` and `iat` checked with a clock skew, and the HMAC and
// the checksum compared in constant time against the bytes exactly as received. node:crypto only, no dependency:
// the kit is also the stand-alone package in packages/receiver (`sensorcloud-receiver`). The checks and their order
// are those of jose's jwtVerify (which this file used before), so every token gets the same reason as it did then.
// Secret rotation (extensions §X3): during an overlap a push also carries `X-Service-Signature-Previous`, the same
// claims signed with the previous secret; a receiver may hold a list of secrets, and a push is accepted when either
// header verifies with any of them, so a receiver holding the old secret, the new one or both refuses no push.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** The header that carries the signature; receivers must match its name in any case. */
export const SIGNATURE_HEADER = 'X-Service-Signature';

/**
 * The header that carries the same claims signed with the connector's previous secret, during the overlap of a
 * secret rotation (`:rotateSecret`, extensions §X3); absent otherwise.
 */
export const PREVIOUS_SIGNATURE_HEADER = 'X-Service-Signature-Previous';

/**
 * The secret a receiver verifies with, or the secrets it accepts while it rolls its secret over (any one of them
 * verifies a push): the connector's `signatureSecret`, as a string (its UTF-8 bytes) or bytes.
 */
export type SignatureSecrets = string | Uint8Array | ReadonlyArray<string | Uint8Array>;

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

/** How one signature header of a refused push failed. */
export interface SignatureHeaderFailure {
  /** `X-Service-Signature` or `X-Service-Signature-Previous`. */
  header: string;
  reason: SignatureFailureReason;
}

export class SignatureError extends Error {
  override readonly name = 'SignatureError';
  /**
   * Each header that was checked and why it failed, `X-Service-Signature` first. `reason` is the most telling of
   * them: a failure after an HMAC matched one of the secrets (`checksum_mismatch`, `expired` …) before `signature`,
   * and `signature` before a token that could not be read.
   */
  readonly failures: readonly SignatureHeaderFailure[];
  constructor(
    readonly reason: SignatureFailureReason,
    message: string,
    failures: readonly SignatureHeaderFailure[] = [{ header: SIGNATURE_HEADER, reason }],
  ) {
    super(message);
    this.failures = failures;
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

/** A signature header's value from a headers object (by default X-Service-Signature), matching the name in any case. */
export function signatureHeaderOf(headers: HeadersLike, name: string = SIGNATURE_HEADER): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const wanted = name.toLowerCase();
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (name.toLowerCase() !== wanted) continue;
    return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

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

/** The arguments, checked: the secrets as bytes, "now" in Unix seconds, the clock skew and the maximum age. */
interface Settings {
  keys: Uint8Array[];
  nowSeconds: number;
  skew: number;
  maxAgeSeconds: number | undefined;
}

/** Throws a TypeError for a mistake of the receiver's own (no secret, an empty one, a bad option): not a bad push. */
function settingsOf(secret: SignatureSecrets, options: VerifyOptions): Settings {
  const list: readonly unknown[] =
    typeof secret === 'string' || secret instanceof Uint8Array || !Array.isArray(secret) ? [secret] : secret;
  if (list.length === 0) throw new TypeError('verifySignature: the list of signature secrets is empty');
  const keys = list.map((one) => {
    if (typeof one !== 'string' && !(one instanceof Uint8Array))
      throw new TypeError('verifySignature: a signature secret must be a string or bytes');
    const key = typeof one === 'string' ? new TextEncoder().encode(one) : one;
    if (key.length === 0) throw new TypeError('verifySignature: the signature secret is empty');
    return key;
  });
  const skew = options.clockSkewSeconds ?? 60;
  const nowSeconds =
    options.now === undefined
      ? Date.now() / 1000
      : options.now instanceof Date
        ? options.now.getTime() / 1000
        : options.now;
  if (!Number.isFinite(nowSeconds)) throw new TypeError('verifySignature: options.now is not a valid time');
  if (typeof skew !== 'number' || !Number.isFinite(skew) || skew < 0)
    throw new TypeError('verifySignature: options.clockSkewSeconds must be a number ≥ 0');
  return { keys, nowSeconds, skew, maxAgeSeconds: options.maxAgeSeconds };
}

/** How far the check of one token went: 0 refused before its HMAC, 1 by its HMAC, 2 after it matched a secret. */
type Stage = 0 | 1 | 2;

type Outcome = { ok: true; claims: SignatureClaims } | { ok: false; stage: Stage; error: SignatureError };

/**
 * Checks one token (the value of `header`) against every secret. `settings` is called once the token's algorithm
 * is known to be HS256, as the checks before were ordered: a token that is not a JWT is refused as such even when
 * the secret is misconfigured.
 */
function checkToken(header: string, token: string, rawBody: Uint8Array | string, settings: () => Settings): Outcome {
  let stage: Stage = 0;
  const fail = (reason: SignatureFailureReason, message: string): never => {
    throw new SignatureError(reason, message, [{ header, reason }]);
  };
  try {
    // The algorithm is checked first and by us: the token never chooses how it is verified. (A five-part token, a
    // JWE, has its header read too, so that its alg is what refuses it.)
    const parts = token.split('.');
    const protectedHeader = parts.length === 3 || parts.length === 5 ? jsonObject(parts[0]!) : undefined;
    if (protectedHeader === undefined) return fail('malformed', `${header} is not a JWT`);
    const alg = protectedHeader.alg;
    if (alg !== 'HS256') return fail('algorithm', `${header} uses alg ${JSON.stringify(alg)}; only HS256 is accepted`);

    const { keys, nowSeconds, skew, maxAgeSeconds } = settings();
    const malformed = (why: string): never => fail('malformed', `${header} is not a valid JWT: ${why}`);
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
    stage = 1;
    const signingInput = `${encodedHeader}.${encodedPayload}`;
    const matches = (key: Uint8Array): boolean => {
      const expected = createHmac('sha256', key).update(signingInput).digest();
      return signature.length === expected.length && timingSafeEqual(signature, expected);
    };
    if (!keys.some(matches)) {
      const which = keys.length > 1 ? ` any of the ${keys.length} secrets` : '';
      return fail('signature', `the signature does not match${which}: wrong secret, or a changed token`);
    }
    stage = 2;
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
    if (maxAgeSeconds !== undefined && nowSeconds - claims.iat > maxAgeSeconds + skew) {
      return fail('too_old', `the signature is older than ${maxAgeSeconds} s`);
    }
    if (typeof claims.exp !== 'number') return fail('expired', 'the signature has no exp');

    if (typeof claims.checksum_sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(claims.checksum_sha256)) {
      return fail('missing_checksum', 'the signature carries no checksum_sha256');
    }
    const actual = createHash('sha256').update(toBytes(rawBody)).digest();
    const expected = Buffer.from(claims.checksum_sha256, 'hex');
    if (!timingSafeEqual(actual, expected))
      return fail('checksum_mismatch', 'the body is not the one that was signed (checksum_sha256 differs)');
    return { ok: true, claims };
  } catch (err) {
    if (!(err instanceof SignatureError)) throw err;
    return { ok: false, stage, error: err };
  }
}

/**
 * Verifies a push: resolves to its claims, or rejects with a SignatureError whose `reason` says why.
 *
 * `rawBody` must be the request body exactly as received (a Buffer, before any JSON parsing); a string is taken as
 * its UTF-8 bytes. `header` is the X-Service-Signature value, or the request's headers object. `secret` is the
 * connector's signature secret, or a list of secrets while the receiver rolls its secret over.
 *
 * Given a headers object, X-Service-Signature is checked and then, when the push carries it (during a rotation's
 * overlap), X-Service-Signature-Previous: the push is accepted when either verifies with any of the secrets. So a
 * receiver holding only the old secret, only the new one or both accepts every push of the overlap, and one holding
 * only the old secret refuses pushes once the overlap is over. Given a header value, only that token is checked.
 */
export async function verifySignature(
  rawBody: Uint8Array | string,
  header: string | undefined | null | HeadersLike,
  secret: SignatureSecrets,
  options: VerifyOptions = {},
): Promise<SignatureClaims> {
  const fromObject = !(typeof header === 'string' || header === undefined || header === null);
  const raw = fromObject ? signatureHeaderOf(header) : header;
  if (!raw || raw.trim() === '') throw new SignatureError('missing_header', `no ${SIGNATURE_HEADER} header`);
  const tokens: Array<[string, string]> = [[SIGNATURE_HEADER, raw.trim()]];
  const previous = fromObject ? signatureHeaderOf(header, PREVIOUS_SIGNATURE_HEADER)?.trim() : undefined;
  if (previous) tokens.push([PREVIOUS_SIGNATURE_HEADER, previous]);

  let checked: Settings | undefined;
  const settings = (): Settings => (checked ??= settingsOf(secret, options));
  const refusals: Array<{ header: string; stage: Stage; error: SignatureError }> = [];
  for (const [name, token] of tokens) {
    const outcome = checkToken(name, token, rawBody, settings);
    if (outcome.ok) return outcome.claims;
    refusals.push({ header: name, stage: outcome.stage, error: outcome.error });
  }
  // The refusal that got furthest tells the most (the first such one, X-Service-Signature, on a tie).
  const telling = refusals.reduce((best, r) => (r.stage > best.stage ? r : best));
  const failures = refusals.map((r) => ({ header: r.header, reason: r.error.reason }));
  const message =
    refusals.length === 1
      ? telling.error.message
      : `${telling.error.message} (${failures.map((f) => `${f.header}: ${f.reason}`).join('; ')})`;
  throw new SignatureError(telling.error.reason, message, failures);
}
