// The app's types, shared by app.ts and the route files (which app.ts registers, so they cannot import it).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../auth/principal.ts';

export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Per-route options (`config` of a route), read by the app's hooks, its error mapping and the OpenAPI document. */
export interface RouteConfig {
  /** false: no credentials needed (token endpoint, invitations, health, docs). Default true for /v2. */
  auth?: boolean;
  /** The handler parses the raw body itself (the token endpoint's form bodies). */
  rawBody?: boolean;
  /** Errors use the stream shape {"error":{code,message}} (contract §4.8). */
  streamErrors?: boolean;
  /** Errors use the OAuth shape {error, error_description, code, help} (the token endpoint, contract §2.3). */
  oauthErrors?: boolean;
  /** One-line description for the OpenAPI document. */
  summary?: string;
  /** Schema of the 200 body, for the OpenAPI document only (responses are not filtered through it). */
  response?: unknown;
  /** The console's static files (console-static.ts). */
  console?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig extends RouteConfig {}
}
