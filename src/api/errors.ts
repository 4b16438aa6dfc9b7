// The only place errors become HTTP: {error, code, help} with a status from the closed set (contract §1.4).
// Unknown errors become a generic 500; their text is logged with the request id, never sent.
import type { FastifyError, FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';
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
export function classifyError(err: unknown, request: { id: string; log: Pick<Logger, 'error'> }): { status: ErrorStatus; message: string; apiError?: ApiError } {
  if (err instanceof ApiError) return { status: err.status, message: err.message, apiError: err };
  const fe = err as FastifyError;
  if (fe && fe.validation) {
    return { status: 400, message: `invalid request: ${fe.message}` };
  }
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 400, message: 'request body larger than 1 MiB' };
  if (fe?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || fe?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return { status: 400, message: 'request body must be a JSON object' };
  if (fe?.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') return { status: 400, message: 'invalid Content-Length' };
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { status: fe.statusCode === 404 ? 404 : 400, message: fe.message || 'bad request' };
  }
  request.log.error({ err, reqId: request.id }, 'unexpected error');
  return { status: 500, message: `internal error (request id ${request.id})` };
}

export function sendError(reply: FastifyReply, publicUrl: string, err: unknown): FastifyReply {
  const { status, message, apiError } = classifyError(err, reply.request);
  if (apiError?.extra.retryAfterSeconds !== undefined) reply.header('Retry-After', String(apiError.extra.retryAfterSeconds));
  const streamStyle = (reply.request.routeOptions.config as { streamErrors?: boolean } | undefined)?.streamErrors;
  if (streamStyle) return reply.code(status).send({ error: { code: status, message } });
  const body = errorBody(publicUrl, status, message);
  if (apiError?.extra.oauthError) {
    return reply.code(status).header('Cache-Control', 'no-store').send({ error: apiError.extra.oauthError, error_description: message, code: status, help: body.help });
  }
  return reply.code(status).send(body);
}

/** The same answer as sendError, written without fastify (the lean :publish path, publish-fast-path.ts). */
export function writeError(res: ServerResponse, publicUrl: string, err: unknown, request: { id: string; log: Pick<Logger, 'error'> }): void {
  const { status, message, apiError } = classifyError(err, request);
  const body = JSON.stringify(errorBody(publicUrl, status, message));
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) };
  if (apiError?.extra.retryAfterSeconds !== undefined) headers['retry-after'] = String(apiError.extra.retryAfterSeconds);
  res.writeHead(status, headers);
  res.end(body);
}
