// The web console's static files (console/, built by Vite into dist/console/) and the served docs page
// /docs/errors. Every path that is not the API (/v2, /oauth2), /healthz or /metrics belongs to the console: a
// file of the build when one matches, else index.html, so deep links reload (the console routes in the browser).
//
// The build is read into memory (and gzipped) once when the app is created: a few hundred KB, answered without a
// disk read, and a rebuild of dist/ under a running service cannot serve it half a build. The route is a
// wildcard, which the router tries only after every API route, and it adds no hook: the API pays nothing for it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './errors.ts';

/** dist/console/ of this checkout: the same relative path from src/api/ (tests, tsx) and from dist/api/. */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/**
 * No inline script or style, nothing from another origin, no framing. uPlot and Preact set styles through the
 * CSSOM (element.style), which style-src does not restrict; blob: images are the CSV download link's target.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // Invitation links carry their token in the path: never send it to another site as a Referer.
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};

interface StaticFile {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  /** Vite's content-hashed files never change under their name: cached for a year. */
  immutable: boolean;
}

export interface ConsoleFiles {
  /** URL path (`/assets/index-abc.js`) → file. */
  files: Map<string, StaticFile>;
  built: boolean;
}

/** Reads a console build into memory; `built: false` when there is none (the service still runs its API). */
export function loadConsoleFiles(dir: string = DEFAULT_CONSOLE_DIR): ConsoleFiles {
  const files = new Map<string, StaticFile>();
  if (!existsSync(join(dir, 'index.html'))) return { files, built: false };
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) {
        walk(path);
        continue;
      }
      const urlPath = `/${relative(dir, path).split(sep).join('/')}`;
      const type = TYPES[extname(name)] ?? 'application/octet-stream';
      const body = readFileSync(path);
      const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 512;
      files.set(urlPath, {
        body,
        gzip: compressible ? gzipSync(body, { level: 9 }) : null,
        type,
        immutable: urlPath.startsWith('/assets/'),
      });
    }
  };
  walk(dir);
  return { files, built: true };
}

const NOT_BUILT = Buffer.from(`<!doctype html><html lang="en"><meta charset="utf-8"><title>Sensor Cloud</title>
<p>The web console is not built. Run <code>npm run build</code> (npm ci does it), then restart the service.
The API is served at <a href="/v2/openapi.json">/v2</a>.</p></html>`);

/** Serves the console for one request; `publicUrl` names the help link of the API's 404 body. */
export function createConsoleHandler(console: ConsoleFiles, publicUrl: string) {
  const send = (request: FastifyRequest, reply: FastifyReply, file: StaticFile, status = 200) => {
    reply.code(status).headers(SECURITY_HEADERS).header('content-type', file.type).header('vary', 'accept-encoding');
    reply.header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    const acceptsGzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
    if (file.gzip !== null && acceptsGzip) return reply.header('content-encoding', 'gzip').send(file.gzip);
    return reply.send(file.body);
  };
  const notFound = (reply: FastifyReply) =>
    reply.code(404).headers(SECURITY_HEADERS).header('content-type', 'text/plain; charset=utf-8').send('not found');

  return async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    // API paths the router did not match (and /v2alpha/…, contract §4.11, but for rules and contacts, which verbs.ts
    // rewrites to /v2/, extensions §X5) keep the API's 404 body.
    if (path.startsWith('/v2') || path.startsWith('/oauth2/')) {
      return reply.code(404).send(errorBody(publicUrl, 404, 'not found'));
    }
    if (!console.built)
      return reply
        .code(503)
        .headers(SECURITY_HEADERS)
        .header('content-type', 'text/html; charset=utf-8')
        .header('cache-control', 'no-cache')
        .send(NOT_BUILT);
    if (path === '/docs/errors' || path === '/docs/errors/')
      return send(request, reply, console.files.get('/errors.html')!);
    const file = console.files.get(path);
    if (file !== undefined && path !== '/index.html' && path !== '/errors.html') return send(request, reply, file);
    // A missing asset is a 404, never the page (a script tag must not receive HTML); anything else is a route.
    if (path.startsWith('/assets/') || extname(path) !== '') return notFound(reply);
    return send(request, reply, console.files.get('/index.html')!);
  };
}
