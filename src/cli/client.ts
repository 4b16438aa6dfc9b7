// The CLI's one HTTP client for the /v2 API: authentication (an OAuth2 JWT-bearer token, contract §2.3-§2.4,
// renewed before it expires and once after a 401; Basic Auth when the service account email is unknown), paging
// (§1.5), `Retry-After` on 429 (§1.11), errors turned into ApiError/AuthError with the API's own message, and the
// NDJSON event stream (§4.8).
import { randomUUID } from 'node:crypto';
import type { TokenResponse } from '../wire/oauth.ts';
import { ApiError, ApiTimeoutError, AuthError } from './errors.ts';

export interface Credentials {
  keyId: string;
  secret: string;
  /** The service account email (the assertion's `iss`); null = Basic Auth. */
  email: string | null;
}

export interface CachedToken {
  token: string;
  /** Unix ms after which the token is not used any more. */
  expiresAt: number;
}

/** Where tokens outlive one command (a 0600 file for profiles); get/set never throw. */
export interface TokenStore {
  get(key: string): CachedToken | null;
  set(key: string, token: CachedToken): void;
  delete(key: string): void;
}

export interface ClientOptions {
  /** Server base without /v2, e.g. http://127.0.0.1:8080. */
  url: string;
  credentials: Credentials;
  tokens?: TokenStore;
  /** 429 answers waited out before giving up. Default 5. */
  maxRateLimitRetries?: number;
  /** Longest single Retry-After wait, seconds. Default 60. */
  maxRetryAfterSeconds?: number;
  /** Where waits are announced (stderr), unless quiet. */
  onWait?: (message: string) => void;
}

export type QueryValue = string | number | boolean | undefined | null | readonly string[];
export type Query = Record<string, QueryValue>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Send no Authorization header (invites:accept). */
  anonymous?: boolean;
  /**
   * The longest wait for the answer, ms (`connectors replay`: one call that may take a while). Without it a call
   * waits as long as fetch does (5 minutes for the response headers). At most that: fetch gives up then anyway.
   */
  timeoutMs?: number;
}

/** How long fetch waits for response headers (undici's default headersTimeout): the ceiling of any timeoutMs. */
export const FETCH_HEADERS_TIMEOUT_MS = 300_000;

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Lifetime asked of an assertion; the server accepts up to 3660 s. */
const ASSERTION_SECONDS = 300;
/** A cached token is renewed this long before it expires, so a command never starts with a dying one. */
const TOKEN_MARGIN_MS = 120_000;

/** Repeated keys for arrays (contract §1.6); empty values left out. */
export function queryString(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '') continue;
    if (Array.isArray(value)) for (const v of value) params.append(key, v);
    else params.append(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The message of an API error body: `{error, code}`, the stream's `{error:{code,message}}`, or OAuth's. */
function errorMessage(body: unknown, status: number): string {
  if (body && typeof body === 'object') {
    const b = body as { error?: unknown; error_description?: unknown; message?: unknown };
    if (typeof b.error_description === 'string') return b.error_description;
    if (typeof b.error === 'string') return b.error;
    if (b.error && typeof b.error === 'object' && typeof (b.error as { message?: unknown }).message === 'string') {
      return (b.error as { message: string }).message;
    }
  }
  return `HTTP ${status}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class ApiClient {
  readonly url: string;
  private readonly credentials: Credentials;
  private readonly tokens: TokenStore | null;
  private readonly maxRetries: number;
  private readonly maxWaitSeconds: number;
  private readonly onWait: (message: string) => void;
  private token: CachedToken | null = null;

  constructor(options: ClientOptions) {
    this.url = options.url;
    this.credentials = options.credentials;
    this.tokens = options.tokens ?? null;
    this.maxRetries = options.maxRateLimitRetries ?? 5;
    this.maxWaitSeconds = options.maxRetryAfterSeconds ?? 60;
    this.onWait = options.onWait ?? (() => undefined);
  }

  /** `url` of a resource name or collection path relative to /v2 (`projects/p/devices`). */
  apiUrl(path: string, query?: Query): string {
    return `${this.url}/v2/${path.replace(/^\/+/, '')}${queryString(query)}`;
  }

  private get tokenKey(): string {
    return `${this.url} ${this.credentials.keyId}`;
  }

  /** The Authorization header value: a Bearer token when the email is known, else Basic. */
  private async authorization(): Promise<string> {
    const { keyId, secret, email } = this.credentials;
    if (email === null) return `Basic ${Buffer.from(`${keyId}:${secret}`, 'utf8').toString('base64')}`;
    const now = Date.now();
    if (!this.token) this.token = this.tokens?.get(this.tokenKey) ?? null;
    if (!this.token || this.token.expiresAt - TOKEN_MARGIN_MS <= now) this.token = await this.exchange();
    return `Bearer ${this.token.token}`;
  }

  /** A 401 on a token we believed valid: forget it (here and in the store) so the next call exchanges anew. */
  private dropToken(): boolean {
    if (this.credentials.email === null || this.token === null) return false;
    this.token = null;
    this.tokens?.delete(this.tokenKey);
    return true;
  }

  /** The JWT-bearer grant (§2.3): an HS256 assertion signed with the key secret, exchanged at /oauth2/token. */
  private async exchange(): Promise<CachedToken> {
    const { SignJWT } = await import('jose');
    const { keyId, secret, email } = this.credentials;
    const tokenUrl = `${this.url}/oauth2/token`;
    const iat = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: keyId, typ: 'JWT' })
      .setIssuer(email!)
      .setAudience(tokenUrl)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ASSERTION_SECONDS)
      // A new jti each time: the server takes an assertion with a jti once, so one seen on the way is worth nothing.
      .setJti(randomUUID())
      .sign(new TextEncoder().encode(secret));
    const form = new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString();
    const res = await this.send(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    const body = await readJson(res);
    if (res.status === 400 || res.status === 401)
      throw new AuthError(`the server refused the credentials of key ${keyId}: ${errorMessage(body, res.status)}`);
    if (res.status !== 200) throw new ApiError(`token request failed: ${errorMessage(body, res.status)}`, res.status);
    // A JWT-bearer answer always carries the token (only a console login can ask for it in a cookie instead).
    const { access_token: token, expires_in: expiresIn } = body as Required<TokenResponse>;
    // expires_in counts from now (the moment it was received, §2.4).
    const cached = { token, expiresAt: Date.now() + expiresIn * 1000 };
    this.tokens?.set(this.tokenKey, cached);
    return cached;
  }

  /**
   * fetch, waiting out 429s (Retry-After, at most maxRetries times); a network failure is an ApiError, no answer
   * within `timeoutMs` (each try) an ApiTimeoutError.
   */
  private async send(url: string, init: RequestInit, timeoutMs?: number): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(url, timeoutMs === undefined ? init : { ...init, signal: AbortSignal.timeout(timeoutMs) });
      } catch (err) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        if ((err as Error).name === 'TimeoutError' || cause?.code === 'UND_ERR_HEADERS_TIMEOUT') {
          const ms = Math.min(timeoutMs ?? Infinity, FETCH_HEADERS_TIMEOUT_MS);
          throw new ApiTimeoutError(
            `no answer from ${this.url} within ${ms >= 1000 ? Math.round(ms / 1000) : ms / 1000} s`,
          );
        }
        throw new ApiError(`cannot reach ${this.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, 0);
      }
      if (res.status !== 429 || attempt >= this.maxRetries) return res;
      const seconds = Math.min(
        this.maxWaitSeconds,
        Math.max(1, Number.parseInt(res.headers.get('retry-after') ?? '1', 10) || 1),
      );
      await res.body?.cancel();
      this.onWait(`rate limited: retrying in ${seconds} s`);
      await sleep(seconds * 1000);
    }
  }

  /** An authenticated request; a 401 with a token renews the token once and repeats the request. */
  private async authed(method: string, url: string, body: string | undefined, timeoutMs?: number): Promise<Response> {
    for (let renewed = false; ; renewed = true) {
      const headers: Record<string, string> = { authorization: await this.authorization() };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await this.send(url, { method, headers, body }, timeoutMs);
      if (res.status === 401 && !renewed && this.dropToken()) {
        await res.body?.cancel();
        continue;
      }
      return res;
    }
  }

  /** One API call; resolves to the JSON body of a 200, throws ApiError/AuthError otherwise. */
  async call<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const url = this.apiUrl(path, options.query);
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const res = options.anonymous
      ? await this.send(
          url,
          { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body },
          options.timeoutMs,
        )
      : await this.authed(method, url, body, options.timeoutMs);
    const json = await readJson(res);
    if (res.status === 200) return json as T;
    throw this.failure(res.status, json);
  }

  private failure(status: number, body: unknown): Error {
    const message = errorMessage(body, status);
    if (status === 401) return new AuthError(`authentication failed: ${message}`);
    return new ApiError(message, status);
  }

  /**
   * Every item of a paged list (§1.5), page after page, up to `limit` items (default: all). `pageSize` follows
   * the limit so a small listing is one small request.
   */
  async *pages<T = any>(path: string, itemsKey: string, query: Query = {}, limit = Infinity): AsyncGenerator<T> {
    let pageToken = '';
    let yielded = 0;
    for (;;) {
      const pageSize = Math.min(1000, Math.max(1, Number.isFinite(limit) ? limit - yielded : 1000));
      const page = await this.call<Record<string, unknown>>('GET', path, { query: { ...query, pageSize, pageToken } });
      const items = (page[itemsKey] ?? []) as T[];
      for (const item of items) {
        if (yielded >= limit) return;
        yielded++;
        yield item;
      }
      pageToken = typeof page.nextPageToken === 'string' ? page.nextPageToken : '';
      if (pageToken === '' || yielded >= limit) return;
    }
  }

  async list<T = any>(path: string, itemsKey: string, query: Query = {}, limit = Infinity): Promise<T[]> {
    const out: T[] = [];
    for await (const item of this.pages<T>(path, itemsKey, query, limit)) out.push(item);
    return out;
  }

  /**
   * Opens an NDJSON event stream (§4.8) and resolves once its headers arrived (so a 401/403/404 is thrown here);
   * then yields each message's JSON. An `{error}` message is thrown as an ApiError. Ends when the server closes
   * the stream (after an hour) or `signal` aborts.
   */
  async openStream(path: string, query: Query, signal: AbortSignal): Promise<AsyncGenerator<any>> {
    const url = this.apiUrl(path, query);
    let res: Response;
    try {
      for (let renewed = false; ; renewed = true) {
        res = await this.send(url, {
          method: 'GET',
          headers: { authorization: await this.authorization(), accept: 'application/x-ndjson' },
          signal,
        });
        if (res.status === 401 && !renewed && this.dropToken()) {
          await res.body?.cancel();
          continue;
        }
        break;
      }
    } catch (err) {
      if (signal.aborted) return (async function* () {})();
      throw err;
    }
    if (res.status !== 200) throw this.failure(res.status, await readJson(res));
    const body = res.body!;
    const failure = (status: number, json: unknown) => this.failure(status, json);
    return (async function* () {
      const decoder = new TextDecoder();
      let buffered = '';
      try {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
          buffered += decoder.decode(chunk, { stream: true });
          let newline: number;
          while ((newline = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, newline).trim();
            buffered = buffered.slice(newline + 1);
            if (line === '') continue;
            const message = JSON.parse(line) as { error?: { code?: number } };
            if (message.error) throw failure(message.error.code ?? 500, message);
            yield message;
          }
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ApiError || err instanceof AuthError) throw err;
        throw new ApiError(`the event stream broke off: ${(err as Error).message}`, 0);
      }
    })();
  }
}

async function readJson(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return { error: `HTTP ${res.status}: ${text.slice(0, 200)}` };
  }
}
