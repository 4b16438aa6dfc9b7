// POST /oauth2/token (contract §2.3-2.5): form-encoded (or JSON) body, OAuth error codes, never a 401.
// Requests are rate limited by client IP in the app hook; password logins are throttled and bounded in token-grants.ts.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { authenticate } from '../../auth/authenticate.ts';
import { ApiError, forbidden, oauthError } from '../../domain/errors.ts';
import { exchangeAssertion, exchangePassword } from '../../services/token-grants.ts';
import { JWT_BEARER_GRANT, PASSWORD_GRANT, TokenRequestSchema, TokenResponseSchema } from '../../wire/oauth.ts';
import type { App } from '../types.ts';
import {
  CONSOLE_HEADER,
  CONSOLE_HEADER_VALUE,
  checkOrigin,
  clearedSessionCookie,
  hasConsoleHeader,
  readSessionCookie,
  sessionCookie,
} from '../console-session.ts';

type Fields = Map<string, string>;

/** A form body, or a JSON object when the body starts with '{'. Repeated or non-string fields are refused. */
export function parseTokenRequest(raw: string): Fields {
  const text = raw.trimStart();
  const fields: Fields = new Map();
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw oauthError('invalid_request', 'request body is neither a form nor a JSON object');
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw oauthError('invalid_request', 'request body is neither a form nor a JSON object');
    for (const [k, v] of Object.entries(parsed)) {
      if (v === null || v === undefined) continue;
      if (typeof v !== 'string') throw oauthError('invalid_request', `${k} must be a string`);
      if (!v.isWellFormed())
        throw oauthError('invalid_request', `${k} is not valid Unicode (it holds a lone surrogate)`);
      fields.set(k, v);
    }
    return fields;
  }
  for (const [k, v] of new URLSearchParams(text)) {
    if (fields.has(k)) throw oauthError('invalid_request', `${k} must not be repeated`);
    fields.set(k, v);
  }
  return fields;
}

function required(fields: Fields, name: string): string {
  const value = fields.get(name);
  if (value === undefined || value === '') throw oauthError('invalid_request', `missing ${name}`);
  return value;
}

/** `<PUBLIC_URL>/oauth2/token` [dec] and `<scheme>://<Host>/oauth2/token` of this request [ours, §7 #14]. */
function acceptedAudiences(deps: Deps, request: FastifyRequest): string[] {
  const audiences = [`${deps.config.publicUrl}/oauth2/token`];
  const host = request.headers.host;
  if (host && /^[A-Za-z0-9.\-:[\]]+$/.test(host)) audiences.push(`${request.protocol}://${host}/oauth2/token`);
  return audiences;
}

export function registerOauthRoutes(app: App, deps: Deps): void {
  app.post(
    '/oauth2/token',
    {
      schema: { body: TokenRequestSchema },
      validatorCompiler: () => () => true, // the schema is documentation; the raw body is checked by parseTokenRequest
      config: {
        auth: false,
        rawBody: true,
        oauthErrors: true,
        summary: `Exchange a JWT-bearer assertion (grant_type=${JWT_BEARER_GRANT}) or a console login (grant_type=password) for an access token`,
        response: TokenResponseSchema,
      },
    },
    async (request, reply) => {
      const fields = parseTokenRequest(typeof request.body === 'string' ? request.body : '');
      const grantType = required(fields, 'grant_type');
      const cookieSession = fields.get('session') === 'cookie';
      if (cookieSession) {
        // Only the console asks for a cookie, and only for a user: a cross-origin form cannot send the header, so
        // another site cannot sign a visitor in to an account of its choosing.
        if (grantType !== PASSWORD_GRANT)
          throw oauthError('invalid_request', 'session=cookie is only for grant_type=password');
        if (!hasConsoleHeader(request.headers))
          throw oauthError(
            'invalid_request',
            `session=cookie needs the header ${CONSOLE_HEADER}: ${CONSOLE_HEADER_VALUE}`,
          );
        checkOrigin(request.headers, deps.config.publicUrl, request.protocol);
      }
      let token;
      if (grantType === JWT_BEARER_GRANT) {
        token = await exchangeAssertion(deps, required(fields, 'assertion'), acceptedAudiences(deps, request));
      } else if (grantType === PASSWORD_GRANT) {
        const username = required(fields, 'username');
        const password = required(fields, 'password');
        token = await exchangePassword(deps, username.trim().toLowerCase(), password, request.ip);
      } else {
        throw oauthError(
          'unsupported_grant_type',
          'grant_type must be urn:ietf:params:oauth:grant-type:jwt-bearer or password',
        );
      }
      reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
      if (!cookieSession) return token;
      reply.header('Set-Cookie', sessionCookie(token.access_token, token.expires_in, deps.config.publicUrl));
      return { token_type: token.token_type, expires_in: token.expires_in };
    },
  );

  // Sign-out of the console (RFC 7009's endpoint name): clears the session cookie and ends the user's sessions, so
  // the token stops working everywhere at once (a copy taken from the browser included), not at its expiry.
  app.post(
    '/oauth2/revoke',
    {
      config: {
        auth: false,
        rawBody: true,
        response: Type.Object({}),
        summary:
          "End the web console session: clears its cookie and ends the user's sessions (needs X-Requested-With: sensorcloud-console)",
      },
    },
    async (request, reply) => {
      if (!hasConsoleHeader(request.headers))
        throw forbidden(`sign-out needs the header ${CONSOLE_HEADER}: ${CONSOLE_HEADER_VALUE}`);
      checkOrigin(request.headers, deps.config.publicUrl, request.protocol);
      await endSessionsOf(deps, request.headers.authorization ?? cookieAuthorization(request.headers.cookie));
      reply.header('Set-Cookie', clearedSessionCookie(deps.config.publicUrl)).header('Cache-Control', 'no-store');
      return {};
    },
  );
}

function cookieAuthorization(cookieHeader: string | undefined): string | undefined {
  const token = readSessionCookie(cookieHeader);
  return token === undefined ? undefined : `Bearer ${token}`;
}

/**
 * Ends the sessions of the user whose token the request carries (UserRepo.endSessions). Only a token that still
 * works does: one already ended, expired or forged ends nothing (a stolen old token cannot sign its user out again
 * and again), and neither does a service account's (its tokens end with its key). Sign-out still clears the cookie.
 */
async function endSessionsOf(deps: Deps, authorization: string | undefined): Promise<void> {
  if (authorization === undefined) return;
  let principal;
  try {
    principal = await authenticate(deps, authorization);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return;
    throw err;
  }
  if (principal.kind === 'user') await deps.store.users.endSessions(principal.id);
}
