// createApp(deps): the HTTP surface. Never listens; main.ts (or a test) decides where it runs.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createCachedAuthenticator } from '../auth/auth-cache.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound, tooManyRequests } from '../domain/errors.ts';
import { principalBucket, type Principal } from '../services/principal.ts';
import { errorBody, sendError } from './errors.ts';
import { createOpenApiCollector } from './openapi.ts';
import { parseQuery } from './query.ts';
import { createRateLimiter } from './rate-limit.ts';
import { registerRoutes } from './routes/index.ts';
import { rewriteUrl } from './verbs.ts';

export type App = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/** Per-route options read by the hooks below. */
export interface RouteConfig {
  /** false: no credentials needed (token endpoint, invitations, health, docs). Default true for /v2. */
  auth?: boolean;
  /** The handler parses the raw body itself (the token endpoint's form bodies). */
  rawBody?: boolean;
  /** Errors use the stream shape {"error":{code,message}} (contract §4.8). */
  streamErrors?: boolean;
  /** One-line description for the OpenAPI document. */
  summary?: string;
  /** Schema of the 200 body, for the OpenAPI document only (responses are not filtered through it). */
  response?: unknown;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    auth?: boolean;
    rawBody?: boolean;
    streamErrors?: boolean;
    summary?: string;
    response?: unknown;
  }
}

export const BODY_LIMIT_BYTES = 1024 * 1024;
const MEDIA_TYPE = /^\s*[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+\s*$/;

/** Deeper bodies are refused (400) rather than risking a stack overflow while walking them. */
export const MAX_BODY_DEPTH = 64;

/** "A null value means the field is absent" (contract §1.2): drops null-valued keys of objects, recursively. */
export function stripNulls(value: unknown, depth = 0): unknown {
  if (depth > MAX_BODY_DEPTH) throw badRequest(`request body is nested more than ${MAX_BODY_DEPTH} levels deep`);
  if (Array.isArray(value)) return value.map((v) => stripNulls(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    // defineProperty, not assignment: a "__proto__" key stays an own field instead of replacing the prototype.
    for (const [k, v] of Object.entries(value)) {
      if (v !== null) Object.defineProperty(out, k, { value: stripNulls(v, depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

export async function createApp(deps: Deps): Promise<App> {
  const app = Fastify({
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request: pino's child() cost about a quarter of a small request's time (API bench), and
    // the one request.log call (errors.ts) names the reqId itself.
    childLoggerFactory: (logger) => logger,
    bodyLimit: BODY_LIMIT_BYTES,
    // HEAD is not part of the API: an unknown method on a known path is a 404 (contract §1.4).
    exposeHeadRoutes: false,
    rewriteUrl: (req) => rewriteUrl(req.url ?? '/'),
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, strict: false } },
    routerOptions: { caseSensitive: true, maxParamLength: 2048, querystringParser: parseQuery },
    // Router-level failures get the error body too: a bad percent-encoding is a 400, and an over-long id
    // matches nothing, so it is a 404 (contract §1.4: no 414, an id of any format is a 404).
    frameworkErrors: (err, _request, reply) =>
      sendError(reply, deps.config.publicUrl, err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? notFound('not found') : err),
    // Requests Node cannot parse (oversize headers: 431, garbage: 400) get a 400 with the error body too.
    clientErrorHandler: (err, socket) => {
      if ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || socket.destroyed) return;
      const tooLarge = (err as NodeJS.ErrnoException).code === 'HPE_HEADER_OVERFLOW';
      const body = JSON.stringify(errorBody(deps.config.publicUrl, 400, tooLarge ? 'request headers too large' : 'malformed HTTP request'));
      if (socket.writable) {
        socket.write(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      }
      socket.destroy(err);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are JSON whatever their Content-Type; an empty body is no body (contract §1.2).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (!request.routeOptions.url) return done(null, undefined); // unknown route: answered 404, body unread
    if ((request.routeOptions.config as RouteConfig | undefined)?.rawBody) return done(null, text);
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(badRequest('request body is not valid JSON'), undefined);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return done(badRequest('request body must be a JSON object'), undefined);
    try {
      done(null, stripNulls(parsed));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  const limiter = createRateLimiter(deps.config.rateLimit, deps.clock);
  const authenticate = createCachedAuthenticator(deps);
  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    // Bodies are JSON whatever their Content-Type, even one that is not a media type (fastify would refuse it).
    const contentType = request.headers['content-type'];
    if (contentType !== undefined && !MEDIA_TYPE.test(contentType.split(';')[0]!)) request.headers['content-type'] = 'application/json';
    const config = request.routeOptions.config as RouteConfig | undefined;
    const isApi = request.url.startsWith('/v2/') || request.url.startsWith('/oauth2/');
    if (!isApi) return;
    if (config?.auth === false) {
      if (request.url.startsWith('/v2/openapi.json')) return;
      const wait = limiter.take(`ip:${request.ip}`);
      if (wait > 0) throw tooManyRequests(wait);
      return;
    }
    if (!request.routeOptions.url) return; // unknown route: 404 below, no credentials needed to learn that
    try {
      request.principal = await authenticate(request.headers.authorization);
    } catch (err) {
      // Unauthenticated requests count against the client's IP (contract §1.11), so guessing is rate limited too.
      const wait = limiter.take(`ip:${request.ip}`);
      if (wait > 0) throw tooManyRequests(wait);
      throw err;
    }
    const wait = limiter.take(principalBucket(request.principal));
    if (wait > 0) throw tooManyRequests(wait);
  });

  app.setErrorHandler((err, _request, reply) => sendError(reply, deps.config.publicUrl, err));
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'not found', code: 404, help: `${deps.config.publicUrl}/docs/errors#404` }));

  const openapi = createOpenApiCollector(app);
  await registerRoutes(app, deps);
  app.get('/v2/openapi.json', { config: { auth: false, summary: 'This OpenAPI document' } }, async () => openapi.document(deps.config.publicUrl));
  return app;
}
