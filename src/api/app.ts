// createApp(deps): the HTTP surface. Never listens; main.ts (or a test) decides where it runs.
import Fastify, { LogController, type FastifyBaseLogger } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { createCachedAuthenticator } from '../auth/auth-cache.ts';
import type { Deps } from '../deps.ts';
import { notFound, tooManyRequests } from '../domain/errors.ts';
import { principalBucket, type Principal } from '../auth/principal.ts';
import { BODY_LIMIT_BYTES, parseJsonBody } from './body.ts';
import { sessionAuthorization } from './console-session.ts';
import { createConsoleHandler, loadConsoleFiles } from './console-static.ts';
import { drainBody } from './drain-body.ts';
import { sendError, writeClientError } from './errors.ts';
import { createApiServer, type ApiServer, type RequestListener } from './http-server.ts';
import { createOpenApiCollector } from './openapi.ts';
import { lazyValidatorCompilers } from './lazy-validators.ts';
import { createPublishFastPath } from './publish-fast-path.ts';
import { parseQuery } from './query.ts';
import { createRateLimiter } from './rate-limit.ts';
import { registerRoutes } from './routes/index.ts';
import type { App, RouteConfig } from './types.ts';
import { rewriteUrl } from './verbs.ts';

export type { App } from './types.ts';

const MEDIA_TYPE = /^\s*[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+\s*$/;

export interface AppOptions {
  /** Where the console build is; default dist/console/ of this checkout. */
  consoleDir?: string;
  /** The server to answer on, possibly listening already (main.ts binds first); default a new one. */
  server?: ApiServer;
}

export async function createApp(deps: Deps, options: AppOptions = {}): Promise<App> {
  const limiter = createRateLimiter(deps.config.rateLimit, deps.clock);
  const authenticate = createCachedAuthenticator(deps);
  /** Credentials and the rate limit of an authenticated API request: the caller, or a 401 or 429 to answer. */
  const admit = async (authorization: string | undefined, ip: string): Promise<Principal> => {
    let principal: Principal;
    try {
      principal = await authenticate(authorization);
    } catch (err) {
      // Unauthenticated requests count against the client's IP (contract §1.11), so guessing is rate limited too.
      const wait = limiter.take(`ip:${ip}`);
      if (wait > 0) throw tooManyRequests(wait);
      throw err;
    }
    const wait = limiter.take(principalBucket(principal));
    if (wait > 0) throw tooManyRequests(wait);
    return principal;
  };
  const publishFastPath = createPublishFastPath(deps, admit);
  const api = options.server ?? createApiServer(deps.config);
  let listener: RequestListener = () => undefined;
  const app = Fastify({
    // The plain form of :publish is answered before fastify sees it (publish-fast-path.ts). The server gets the
    // timeouts fastify gives the servers it creates itself.
    serverFactory: (handler) => {
      listener = (req, res) => {
        if (!publishFastPath(req, res)) handler(req, res);
      };
      return api.server;
    },
    loggerInstance: deps.logger as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request: pino's child() cost about a quarter of a small request's time (API bench), and
    // the one request.log call (errors.ts) names the reqId itself.
    childLoggerFactory: (logger) => logger,
    bodyLimit: BODY_LIMIT_BYTES,
    // HEAD is not part of the API: an unknown method on a known path is a 404 (contract §1.4).
    exposeHeadRoutes: false,
    rewriteUrl: (req) => rewriteUrl(req.url ?? '/'),
    ajv: {
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
        strict: false,
      },
    },
    schemaController: { compilersFactory: { buildValidator: lazyValidatorCompilers() } },
    routerOptions: { caseSensitive: true, maxParamLength: 2048, querystringParser: parseQuery },
    // Router-level failures get the error body too: a bad percent-encoding is a 400, and an over-long id
    // matches nothing, so it is a 404 (contract §1.4: no 414, an id of any format is a 404).
    frameworkErrors: (err, _request, reply) =>
      sendError(reply, deps.config.publicUrl, err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? notFound('not found') : err),
    // Requests Node cannot parse (oversize headers: 431, garbage: 400) or that arrive too slowly (408) get a 400
    // with the error body too, in the OAuth shape on the token endpoint.
    clientErrorHandler: (err, socket) =>
      writeClientError(deps.config, err as unknown as NodeJS.ErrnoException & { rawPacket?: Buffer }, socket),
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Bodies are JSON whatever their Content-Type; an empty body is no body (contract §1.2).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (!request.routeOptions.url) return done(null, undefined); // unknown route: answered 404, body unread
    if ((request.routeOptions.config as RouteConfig | undefined)?.rawBody) return done(null, text);
    try {
      done(null, parseJsonBody(text));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  // Every JSON body ends with a newline, so that `curl` output and logs of bodies end their line.
  app.setReplySerializer((payload) => JSON.stringify(payload) + '\n');

  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    // Bodies are JSON whatever their Content-Type, even one that is not a media type (fastify would refuse it).
    const contentType = request.headers['content-type'];
    if (contentType !== undefined && !MEDIA_TYPE.test(contentType.split(';')[0]!))
      request.headers['content-type'] = 'application/json';
    const config = request.routeOptions.config as RouteConfig | undefined;
    const isApi = request.url.startsWith('/v2/') || request.url.startsWith('/oauth2/');
    if (!isApi) return;
    if (config?.auth === false) {
      // The console's wildcard route also answers unknown API GETs (their 404): no token taken, as for any 404.
      if (config.console || request.url.startsWith('/v2/openapi.json')) return;
      const wait = limiter.take(`ip:${request.ip}`);
      if (wait > 0) throw tooManyRequests(wait);
      return;
    }
    if (!request.routeOptions.url) return; // unknown route: 404 below, no credentials needed to learn that
    // The console's session cookie stands in for a missing Authorization header (console-session.ts); clients
    // that send the header never reach the cookie code.
    const authorization =
      request.headers.authorization ??
      sessionAuthorization(request.method, request.headers, deps.config.publicUrl, request.protocol);
    request.principal = await admit(authorization, request.ip);
  });

  // A server that listens already (main.ts binds first) answers "starting" until every route is in place.
  app.addHook('onReady', async () => api.attach(listener));

  app.setErrorHandler(async (err, request, reply) => {
    if ((err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') await drainBody(request.raw);
    return sendError(reply, deps.config.publicUrl, err);
  });
  app.setNotFoundHandler((_request, reply) =>
    reply.code(404).send({ error: 'not found', code: 404, help: `${deps.config.publicUrl}/docs/errors#404` }),
  );

  const openapi = createOpenApiCollector(app);
  await registerRoutes(app, deps);
  app.get('/v2/openapi.json', { config: { auth: false, summary: 'This OpenAPI document' } }, async () =>
    openapi.document(deps.config.publicUrl),
  );
  app.get(
    '/*',
    { config: { auth: false, console: true } },
    createConsoleHandler(loadConsoleFiles(options.consoleDir), deps.config.publicUrl),
  );
  return app;
}
