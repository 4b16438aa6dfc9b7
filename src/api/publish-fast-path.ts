// POST /v2/projects/{p}/devices/{d}:publish answered without fastify. It is the product's hot path (every device
// event that enters over the API), and fastify's routing, hooks, body parser, validation and reply pipeline cost
// 15-30 µs of main-thread CPU per publish (`npm run bench:cost`), a tenth of all the work for an event.
//
// Only the plain form of the request is taken here: every other form (a query string, an encoded colon, a
// trailing slash, a chunked or over-limit body, an over-long id, no Authorization header — so a console session
// cookie) goes on to the fastify route. Both share the admission (credentials, then the rate limit), the body
// rules, the use case and the error body, so they answer alike; test/api/publish-fast-path.test.ts sends each request both ways and compares the answers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Deps } from '../deps.ts';
import type { Principal } from '../auth/principal.ts';
import { BODY_LIMIT_BYTES, parseJsonBody } from './body.ts';
import { writeError } from './errors.ts';
import { publishAsCaller } from '../services/publish.ts';

/** The router's own limit on a path segment (app.ts, maxParamLength); longer ids go to the route, which 404s. */
const PLAIN = /^\/v2\/projects\/([A-Za-z0-9_.~-]{1,2048})\/devices\/([A-Za-z0-9_.~-]{1,2048}):publish$/;

const OK_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'content-length': '3' };

/** Credentials and rate limit of an API request: the caller, or throws the 401/429 to answer. */
export type Admit = (authorization: string | undefined, ip: string) => Promise<Principal>;

/** A request listener that answers plain :publish requests (true) and leaves every other request alone (false). */
export function createPublishFastPath(
  deps: Deps,
  admit: Admit,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  let seq = 0;
  return (req, res) => {
    if (req.method !== 'POST' || !req.url!.endsWith(':publish')) return false;
    const match = PLAIN.exec(req.url!);
    // No Authorization header (a console session cookie, or no credentials): the route's hook answers it.
    if (match === null || req.headers['transfer-encoding'] !== undefined || req.headers.authorization === undefined)
      return false;
    const length = req.headers['content-length'];
    if (length !== undefined && !(Number(length) <= BODY_LIMIT_BYTES)) return false;

    // As on the route: credentials and rate limit are settled (and a refusal answered) before the body counts.
    const admitted = admit(req.headers.authorization, req.socket.remoteAddress ?? '');
    const text = readText(req);
    text.catch(() => undefined); // a refusal may be answered before the body arrives
    void (async () => {
      const principal = await admitted;
      await publishAsCaller(deps, principal, match[1]!, match[2]!, parseJsonBody(await text) ?? {});
      if (res.destroyed) return; // the client left
      res.writeHead(200, OK_HEADERS);
      res.end('{}\n');
    })().catch((err: unknown) => {
      // The request id only names an unexpected error in the log and in the 500's message.
      if (!res.headersSent && !res.destroyed)
        writeError(res, deps.config.publicUrl, err, { id: `pub-${++seq}`, log: deps.logger });
    });
    return true;
  };
}

function readText(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    let ended = false;
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      ended = true;
      resolve(text);
    });
    req.on('error', reject);
    // A client that leaves mid-body: 'close' without 'end'. Every request closes once answered, so the error is
    // built only when the body is incomplete: building one per request (stack trace included) was ~4 % of the
    // main thread under load.
    req.on('close', () => {
      if (!ended) reject(new Error('request closed before its body was complete'));
    });
  });
}
