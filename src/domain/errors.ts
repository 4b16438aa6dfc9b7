// The one error type of the service. Domain and service code throw ApiError; api/errors.ts alone turns it
// into the wire shape {error, code, help}. The status set is closed (contract §1.4).

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 429 | 500 | 503;

export class ApiError extends Error {
  constructor(
    readonly status: ErrorStatus,
    message: string,
    /** Extra wire fields or headers, e.g. OAuth `error` codes or Retry-After seconds. */
    readonly extra: { retryAfterSeconds?: number; oauthError?: string } = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const unauthenticated = (message = 'missing or invalid credentials') => new ApiError(401, message);
export const forbidden = (message = 'permission denied') => new ApiError(403, message);
export const notFound = (message = 'not found') => new ApiError(404, message);
export const conflict = (message: string) => new ApiError(409, message);
export const tooManyRequests = (retryAfterSeconds: number, message = 'rate limit exceeded') =>
  new ApiError(429, message, { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)) });
export const unavailable = (message: string, retryAfterSeconds?: number) =>
  new ApiError(
    503,
    message,
    retryAfterSeconds === undefined ? {} : { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)) },
  );

/** OAuth token endpoint errors (contract §2.3): always 400 with an OAuth `error` code. */
export const oauthError = (
  oauthErrorCode: 'invalid_request' | 'unsupported_grant_type' | 'invalid_grant',
  description: string,
) => new ApiError(400, description, { oauthError: oauthErrorCode });
