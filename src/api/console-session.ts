// The web console's session (docs/console.md): the password grant with `session=cookie` puts the access token in
// an HttpOnly, SameSite=Strict cookie instead of the response body, so no page script can ever read it. The
// cookie stands in for the Authorization header only when a request has none; API clients are unaffected.
//
// Forgery: SameSite=Strict keeps the cookie off cross-site requests, and a cookie-authenticated request with an
// unsafe method must also carry `X-Requested-With: sensorcloud-console` (a header a cross-origin page cannot send
// without CORS, which is off) and, when the browser sends `Origin`, come from this service's own origin.
import type { IncomingHttpHeaders } from 'node:http';
import { forbidden } from '../domain/errors.ts';

export const SESSION_COOKIE = 'sensorcloud_session';
export const CONSOLE_HEADER = 'x-requested-with';
export const CONSOLE_HEADER_VALUE = 'sensorcloud-console';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** `Set-Cookie` value holding the token for `maxAgeSeconds` (the token's life). */
export function sessionCookie(token: string, maxAgeSeconds: number, publicUrl: string): string {
  const secure = publicUrl.startsWith('https:') ? '; Secure' : '';
  return `${SESSION_COOKIE}=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure}`;
}

/** `Set-Cookie` value that removes the session cookie. */
export function clearedSessionCookie(publicUrl: string): string {
  return sessionCookie('', 0, publicUrl);
}

/** The session token in a Cookie header, or undefined. */
export function readSessionCookie(cookieHeader: string | undefined): string | undefined {
  if (cookieHeader === undefined) return undefined;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return value === '' ? undefined : value;
    }
  }
  return undefined;
}

/** True when the request is marked as the console's own (the custom header a cross-origin page cannot send). */
export function hasConsoleHeader(headers: IncomingHttpHeaders): boolean {
  return headers[CONSOLE_HEADER] === CONSOLE_HEADER_VALUE;
}

/** Throws 403 unless a browser-sent Origin (when present) is this service's own: its public URL or its Host. */
export function checkOrigin(headers: IncomingHttpHeaders, publicUrl: string, protocol: string): void {
  const origin = headers.origin;
  if (origin === undefined) return;
  const own = [new URL(publicUrl).origin];
  if (headers.host) own.push(`${protocol}://${headers.host}`);
  if (!own.includes(origin)) throw forbidden('request from another origin refused');
}

/**
 * The Authorization header a request without one stands for: `Bearer <token>` from the session cookie, or
 * undefined (no cookie: the usual 401 follows). Throws 403 for a cookie-authenticated unsafe request that lacks
 * the console header or comes from another origin.
 */
export function sessionAuthorization(
  method: string,
  headers: IncomingHttpHeaders,
  publicUrl: string,
  protocol: string,
): string | undefined {
  const token = readSessionCookie(headers.cookie);
  if (token === undefined) return undefined;
  if (!SAFE_METHODS.has(method)) {
    if (!hasConsoleHeader(headers))
      throw forbidden(`a console session request must carry ${CONSOLE_HEADER}: ${CONSOLE_HEADER_VALUE}`);
    checkOrigin(headers, publicUrl, protocol);
  }
  return `Bearer ${token}`;
}
