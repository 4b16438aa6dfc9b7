// GET /v2/openapi.json: generated from the schemas the routes register, so it cannot drift from validation.
import type { FastifyInstance } from 'fastify';
import { OPERATIONS } from './operation-ids.ts';
import { publicPath } from './verbs.ts';

interface Collected {
  method: string;
  url: string;
  schema: Record<string, unknown>;
  summary?: string;
  response?: unknown;
  auth?: boolean;
}

export function createOpenApiCollector(app: FastifyInstance) {
  const routes: Collected[] = [];
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v2') && !route.url.startsWith('/oauth2')) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      routes.push({
        method: method.toLowerCase(),
        url: route.url,
        schema: (route.schema ?? {}) as Record<string, unknown>,
        summary: (route.config as { summary?: string } | undefined)?.summary,
        response: (route.config as { response?: unknown } | undefined)?.response,
        auth: (route.config as { auth?: boolean } | undefined)?.auth,
      });
    }
  });
  return {
    document(publicUrl: string) {
      const paths: Record<string, Record<string, unknown>> = {};
      for (const r of routes) {
        const path = publicPath(r.url).replace(/:([A-Za-z0-9_]+)/g, (m, name: string, offset: number, s: string) =>
          s[offset - 1] === '/' ? `{${name}}` : m,
        );
        const parameters: unknown[] = [];
        for (const name of [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])) {
          parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
        }
        const qs = r.schema.querystring as { properties?: Record<string, unknown>; required?: string[] } | undefined;
        for (const [name, schema] of Object.entries(qs?.properties ?? {})) {
          parameters.push({ name, in: 'query', required: qs?.required?.includes(name) ?? false, schema });
        }
        // A route without an entry gets a readable fallback; the openapi test fails on it, so it is never shipped.
        const [operationId, tag] = OPERATIONS[`${r.method.toUpperCase()} ${path}`] ?? [
          `${r.method}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
          'Other',
        ];
        const op: Record<string, unknown> = {
          operationId,
          tags: [tag],
          summary: r.summary ?? '',
          parameters,
          responses: {
            '200': {
              description: 'Success',
              content: { 'application/json': { schema: r.response ?? { type: 'object' } } },
            },
            default: {
              description: 'Error',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
            },
          },
        };
        if (r.schema.body)
          op.requestBody = { required: true, content: { 'application/json': { schema: r.schema.body } } };
        if (r.auth === false) op.security = [];
        (paths[path] ??= {})[r.method] = op;
      }
      return {
        openapi: '3.1.0',
        info: { title: 'Sensor Cloud API', version: 'v2' },
        servers: [{ url: publicUrl }],
        components: {
          securitySchemes: { basic: { type: 'http', scheme: 'basic' }, bearer: { type: 'http', scheme: 'bearer' } },
          schemas: {
            Error: {
              type: 'object',
              required: ['error', 'code', 'help'],
              properties: { error: { type: 'string' }, code: { type: 'integer' }, help: { type: 'string' } },
            },
          },
        },
        security: [{ basic: [] }, { bearer: [] }],
        paths,
      };
    },
  };
}
