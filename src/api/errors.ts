// The only place errors become HTTP: {error, code, help} with a status from the closed set (contract §1.4).
// Unknown errors become a generic 500; their text is logged with the request id, never sent.
import type { FastifyError, FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, type ErrorStatus } from '../domain/errors.ts';
import type { Logger } from '../runtime/logger.ts';

export interface ErrorBody {
  error: string;
  code: number;
  help: string;
  error_description?: string;
}

export function errorBody(publicUrl: string, status: number, message: string): ErrorBody {
  return { error: message, code: status, help: `${publicUrl}/docs/errors#${status}` };
}

/** Maps anything thrown to a status and message; logs what the client must not see, with the request's id. */
export function classifyError(
  err: unknown,
  request: { id: string; log: Pick<Logger, 'error'> },
): { status: ErrorStatus; message: string; apiError?: ApiError } {
  if (err instanceof ApiError) return { status: err.status, message: err.message, apiError: err };
  const fe = err as FastifyError;
  if (fe?.validation) {
    return { status: 400, message: `invalid request: ${fe.message}` };
  }
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 400, message: 'request body larger than 1 MiB' };
  if (fe?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fe?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return { status: 400, message: 'request body must be a JSON object' };
  if (fe?.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') return { status: 400, message: 'invalid Content-Length' };
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode === 404 ? 404 : 400, message: fe.message || 'bad request' };
  }
  request.log.error({ err, reqId: request.id }, 'unexpected error');
  return { status: 500, message: `internal error (request id ${request.id})` };
}

/**
 * The OAuth `error` code of an answer of the token endpoint (contract §2.3), which answers in the OAuth shape: the
 * one the grant chose, else one for the status, whatever refused the request (the body parser, the body limit, a
 * slow or malformed request). Null keeps the standard body (429, contract §2.3).
 */
function oauthCodeOf(status: number, apiError: ApiError | undefined): string | null {
  if (apiError?.extra.oauthError) return apiError.extra.oauthError;
  if (status === 400) return 'invalid_request';
  if (status === 500) return 'server_error';
  if (status === 503) return 'temporarily_unavailable';
  return null;
}

function oauthBody(publicUrl: string, status: number, oauthCode: string, message: string): ErrorBody {
  return {
    error: oauthCode,
    error_description: message,
    code: status,
    help: errorBody(publicUrl, status, message).help,
  };
}

export function sendError(reply: FastifyReply, publicUrl: string, err: unknown): FastifyReply {
  const { status, message, apiError } = classifyError(err, reply.request);
  if (apiError?.extra.retryAfterSeconds !== undefined)
    reply.header('Retry-After', String(apiError.extra.retryAfterSeconds));
  const config = reply.request.routeOptions.config as { streamErrors?: boolean; oauthErrors?: boolean } | undefined;
  if (config?.streamErrors) return reply.code(status).send({ error: { code: status, message } });
  const oauthCode = config?.oauthErrors ? oauthCodeOf(status, apiError) : null;
  if (oauthCode !== null)
    return reply
      .code(status)
      .header('Cache-Control', 'no-store')
      .send(oauthBody(publicUrl, status, oauthCode, message));
  return reply.code(status).send(errorBody(publicUrl, status, message));
}

/** The path of the request a low-level HTTP error belongs to, when known: from the bytes Node could not parse, or
 *  from the request being received on the socket (a request that timed out while its body arrived). */
function clientErrorPath(err: { rawPacket?: Buffer }, socket: Duplex): string | null {
  const line = err.rawPacket ? /^[A-Z]+ (\S+)/.exec(err.rawPacket.toString('latin1', 0, 512)) : null;
  if (line) return line[1]!;
  return (socket as { _httpMessage?: { req?: { url?: string } } })._httpMessage?.req?.url ?? null;
}

/**
 * Answers a request Node itself refused before the API saw it (server `clientError`): unparseable (400), headers
 * over the size limit (431), headers or body not received within their timeouts (408). The API's statuses do not
 * include 408 or 431, so each is a 400 with the error body (the OAuth shape on the token endpoint), then the
 * connection closes.
 */
export function writeClientError(
  config: { publicUrl: string; requestTimeoutMs: number },
  err: NodeJS.ErrnoException & { rawPacket?: Buffer },
  socket: Duplex,
): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const message =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? 'request headers too large'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? `the request did not arrive completely within ${config.requestTimeoutMs / 1000} s`
        : 'malformed HTTP request';
  const oauth = clientErrorPath(err, socket)?.startsWith('/oauth2/token') === true;
  const body =
    JSON.stringify(
      oauth ? oauthBody(config.publicUrl, 400, 'invalid_request', message) : errorBody(config.publicUrl, 400, message),
    ) + '\n';
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${oauth ? 'Cache-Control: no-store\r\n' : ''}Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** The same answer as sendError, written without fastify (the lean :publish path, publish-fast-path.ts). */
export function writeError(
  res: ServerResponse,
  publicUrl: string,
  err: unknown,
  request: { id: string; log: Pick<Logger, 'error'> },
): void {
  const { status, message, apiError } = classifyError(err, request);
  const body = JSON.stringify(errorBody(publicUrl, status, message)) + '\n';
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
  };
  if (apiError?.extra.retryAfterSeconds !== undefined)
    headers['retry-after'] = String(apiError.extra.retryAfterSeconds);
  res.writeHead(status, headers);
  res.end(body);
}
