// The X-Service-Signature JWT (contract §6.3): pure, with time and jti passed in so the test vector is exact.
import * as crypto from 'node:crypto';
import { createHmac } from 'node:crypto';

/** base64url of the fixed header `{"alg":"HS256","typ":"JWT"}`, byte for byte. */
const HEADER_B64 = Buffer.from('{"alg":"HS256","typ":"JWT"}', 'utf8').toString('base64url');

/** Lifetime of a signature: `exp = iat + 3600`. */
export const SIGNATURE_LIFETIME_SECONDS = 3600;

/** Lower-case hex SHA-1 and SHA-256 of the raw body bytes (the `checksum` and `checksum_sha256` claims). */
export function bodyChecksums(body: Uint8Array): { sha1: string; sha256: string } {
  return { sha1: hexDigest('sha1', body), sha256: hexDigest('sha256', body) };
}

// crypto.hash (node ≥ 20.12) is about twice as fast as createHash for small bodies; every attempt pays for it.
const oneShotHash = (crypto as { hash?: typeof crypto.hash }).hash;
const hexDigest = (algorithm: string, data: Uint8Array): string =>
  oneShotHash ? oneShotHash(algorithm, data, 'hex') : crypto.createHash(algorithm).update(data).digest('hex');

/**
 * The header value for one attempt: `<b64url(header)>.<b64url(claims)>.<b64url(HMAC-SHA256)>`, claims compact and in
 * the order checksum, checksum_sha256, iat, exp, jti; no `aud`. `iatSeconds` is the attempt's start in Unix seconds.
 */
export function signBody(body: Uint8Array, secret: string, iatSeconds: number, jti: string): string {
  return signWith(signingInput(body, iatSeconds, jti), secret);
}

/**
 * The JWT before its signature, `<b64url(header)>.<b64url(claims)>`: one per attempt, signed by signWith with each of
 * its secrets, so that the signatures of one attempt (a rotation's overlap, extensions §X3) carry the same claims.
 */
export function signingInput(body: Uint8Array, iatSeconds: number, jti: string): string {
  const { sha1, sha256 } = bodyChecksums(body);
  const iat = Math.floor(iatSeconds);
  const claims = `{"checksum":"${sha1}","checksum_sha256":"${sha256}","iat":${iat},"exp":${iat + SIGNATURE_LIFETIME_SECONDS},"jti":${JSON.stringify(jti)}}`;
  return `${HEADER_B64}.${Buffer.from(claims, 'utf8').toString('base64url')}`;
}

/** The whole JWT: `input` (signingInput) with its HMAC-SHA256 under `secret`. */
export function signWith(input: string, secret: string): string {
  const signature = createHmac('sha256', Buffer.from(secret, 'utf8')).update(input).digest('base64url');
  return `${input}.${signature}`;
}
