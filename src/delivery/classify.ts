// Turning what happened to one push attempt into an AttemptOutcome (contract §6.4, §6.5), with the delivery log's
// class of it (extensions §X1): pure, tested on its own.
import type { AttemptOutcome, AttemptOutcomeClass, AttemptReason } from './types.ts';

/** The dispatcher's own error for an address the SSRF guard refused (no connection was made). */
export class RefusedAddressError extends Error {
  readonly code = 'ERR_SENSORCLOUD_REFUSED_ADDRESS';
  constructor(message: string) {
    super(message);
    this.name = 'RefusedAddressError';
  }
}

/** Longest Retry-After we pass on; the retry schedule caps intervals at one hour anyway (§6.5). */
const MAX_RETRY_AFTER_SECONDS = 3600;

/**
 * `Retry-After` as seconds from `nowMs`: delay-seconds or an HTTP date (RFC 9110 §10.2.3). Undefined when absent or
 * unparseable; negative delays (a date in the past) become 0; capped at 3600.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  let seconds: number;
  if (/^\d+$/.test(text)) {
    seconds = Number(text);
  } else {
    // Only date-looking text: Date.parse would otherwise accept odd inputs such as "1.5".
    if (!/[a-z]/i.test(text)) return undefined;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    seconds = Math.ceil((at - nowMs) / 1000);
  }
  return Math.min(Math.max(seconds, 0), MAX_RETRY_AFTER_SECONDS);
}

/** An answer arrived: any 2xx acknowledges; everything else (3xx included: redirects are not followed) fails. */
export function classifyResponse(input: {
  status: number;
  retryAfter?: string | string[];
  responseTimeMs: number;
  nowMs: number;
}): AttemptOutcome {
  const { status, responseTimeMs } = input;
  if (status >= 200 && status <= 299)
    return { ok: true, reason: 'ack', outcome: 'SUCCESS', status, responseTimeMs, message: `HTTP ${status}` };
  const outcome: AttemptOutcome = {
    ok: false,
    reason: 'http_status',
    outcome: 'HTTP_ERROR',
    status,
    responseTimeMs,
    message: status >= 300 && status <= 399 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`,
  };
  if (status === 429 || status === 503) {
    const retryAfterSeconds = parseRetryAfter(input.retryAfter, input.nowMs);
    if (retryAfterSeconds !== undefined) outcome.retryAfterSeconds = retryAfterSeconds;
  }
  return outcome;
}

// OpenSSL / node:tls verification and handshake failures (everything else on the socket is a connection error).
const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_REJECTED',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_TLS_HANDSHAKE_TIMEOUT',
  'EPROTO',
]);

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

// The peer ended a connection that was open (undici's "other side closed" is UND_ERR_SOCKET).
const RESET_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', 'ECONNABORTED']);

// Name resolution failed: dns.lookup (getaddrinfo: ENOTFOUND for "no such name", EAI_* otherwise) and the resolver's
// codes that name no socket error (its ECONNREFUSED and ETIMEOUT are told apart by `syscall`, below).
const DNS_CODES = new Set(['ENOTFOUND', 'ENODATA', 'ESERVFAIL', 'ENONAME', 'EBADNAME', 'EBADRESP', 'EFORMERR']);

/** Whether a failed `syscall` was a name lookup: getaddrinfo (dns.lookup), or the resolver's query*, getHostByAddr. */
const isDnsSyscall = (syscall: string | undefined): boolean =>
  syscall !== undefined && (syscall === 'getaddrinfo' || syscall === 'getHostByAddr' || syscall.startsWith('query'));

/** What `reason` alone says of an outcome's class: exact for every reason but `connection`, which the error refines. */
const CLASS_OF_REASON: Readonly<Record<AttemptReason, AttemptOutcomeClass>> = {
  ack: 'SUCCESS',
  http_status: 'HTTP_ERROR',
  timeout: 'TIMEOUT',
  tls: 'TLS_ERROR',
  connection: 'OTHER',
  refused_address: 'BLOCKED_ADDRESS',
};

/**
 * The delivery log's class of an outcome (§X1): the one the dispatcher set, else what its reason alone says (an
 * outcome made outside the dispatcher: the engine's guard against a throwing one, a test's scripted dispatcher).
 */
export function outcomeClassOf(outcome: Pick<AttemptOutcome, 'reason' | 'outcome'>): AttemptOutcomeClass {
  return outcome.outcome ?? CLASS_OF_REASON[outcome.reason];
}

/** The class of a `connection` failure: refused, reset, DNS, or other (unreachable networks, a closed client …). */
function connectionClass(code: string | undefined, syscall: string | undefined): AttemptOutcomeClass {
  if (isDnsSyscall(syscall) || (code !== undefined && (DNS_CODES.has(code) || code.startsWith('EAI_'))))
    return 'DNS_ERROR';
  if (code === 'ECONNREFUSED') return 'CONNECTION_REFUSED';
  if (code !== undefined && RESET_CODES.has(code)) return 'CONNECTION_RESET';
  return 'OTHER';
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function errorSyscall(err: unknown): string | undefined {
  const syscall = (err as { syscall?: unknown } | null)?.syscall;
  return typeof syscall === 'string' ? syscall : undefined;
}

/** The most telling error: undici wraps socket and TLS errors in `cause`; prefer one with a non-undici code. */
function rootError(err: unknown): unknown {
  let current = err;
  for (let i = 0; i < 5 && current !== null && current !== undefined; i++) {
    const code = errorCode(current);
    if (code !== undefined && !code.startsWith('UND_ERR')) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return err;
}

/**
 * No answer arrived. `timedOut` is set by the dispatcher when its own 10 s deadline aborted the attempt; the response
 * time of a timeout is the deadline itself (§6.4).
 */
export function classifyError(
  err: unknown,
  input: { timedOut: boolean; timeoutMs: number; responseTimeMs: number },
): AttemptOutcome {
  const root = rootError(err);
  const code = errorCode(root) ?? errorCode(err);
  const text = (root instanceof Error ? root.message : String(root)).slice(0, 300);
  if (
    err instanceof RefusedAddressError ||
    root instanceof RefusedAddressError ||
    code === 'ERR_SENSORCLOUD_REFUSED_ADDRESS'
  ) {
    return {
      ok: false,
      reason: 'refused_address',
      outcome: 'BLOCKED_ADDRESS',
      responseTimeMs: input.responseTimeMs,
      message: `refused address: ${text}`,
    };
  }
  if (input.timedOut || (code !== undefined && TIMEOUT_CODES.has(code))) {
    return {
      ok: false,
      reason: 'timeout',
      outcome: 'TIMEOUT',
      responseTimeMs: input.timeoutMs,
      message: `no response headers within ${input.timeoutMs} ms`,
    };
  }
  if (
    code !== undefined &&
    (TLS_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code.startsWith('CERT_'))
  ) {
    return {
      ok: false,
      reason: 'tls',
      outcome: 'TLS_ERROR',
      responseTimeMs: input.responseTimeMs,
      message: `TLS: ${code}: ${text}`,
    };
  }
  return {
    ok: false,
    reason: 'connection',
    outcome: connectionClass(code, errorSyscall(root) ?? errorSyscall(err)),
    responseTimeMs: input.responseTimeMs,
    message: code !== undefined ? `connection: ${code}: ${text}` : `connection: ${text}`,
  };
}
