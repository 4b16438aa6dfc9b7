// The CLI's HTTP client against a scripted loopback server: a 429 is waited out as Retry-After says, pages are
// followed until nextPageToken is empty, an OAuth2 token is exchanged once, cached, and exchanged again after a
// 401; the server's error messages come through as ApiError/AuthError, and no answer in time as ApiTimeoutError.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { ApiClient, type CachedToken, type TokenStore } from '../../src/cli/client.ts';
import { ApiError, ApiTimeoutError, AuthError } from '../../src/cli/errors.ts';
import { freePort } from '../helpers/serve-process.ts';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
let handler: Handler = (_req, _body, res) => res.writeHead(500).end();
const seen: Array<{ method: string; url: string; authorization?: string; body: string }> = [];
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
    handler(req, body, res);
  });
});
let url = '';
before(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
const basic = (): ApiClient => new ApiClient({ url, credentials: { keyId: 'k1', secret: 's1', email: null } });

describe('happy', () => {
  it('waits out a 429 as Retry-After says, then succeeds', async () => {
    seen.length = 0;
    let calls = 0;
    handler = (_req, _body, res) =>
      calls++ === 0
        ? json(res, 429, { error: 'rate limit exceeded', code: 429 }, { 'retry-after': '1' })
        : json(res, 200, { ok: true });
    const waits: string[] = [];
    const client = new ApiClient({
      url,
      credentials: { keyId: 'k1', secret: 's1', email: null },
      onWait: (m) => waits.push(m),
    });
    assert.deepEqual(await client.call('GET', 'roles'), { ok: true });
    assert.equal(seen.length, 2);
    assert.deepEqual(waits, ['rate limited: retrying in 1 s']);
    assert.equal(seen[0]!.authorization, `Basic ${Buffer.from('k1:s1').toString('base64')}`);
  });

  it('follows pages until nextPageToken is empty, and stops at a limit', async () => {
    seen.length = 0;
    handler = (req, _body, res) => {
      const token = new URL(req.url!, url).searchParams.get('pageToken') ?? '';
      const page = token === '' ? 0 : Number(token);
      json(res, 200, {
        devices: [`d${page * 2}`, `d${page * 2 + 1}`],
        nextPageToken: page < 2 ? String(page + 1) : '',
      });
    };
    assert.deepEqual(await basic().list('projects/p/devices', 'devices', { deviceTypes: ['a', 'b'] }), [
      'd0',
      'd1',
      'd2',
      'd3',
      'd4',
      'd5',
    ]);
    assert.equal(seen.length, 3);
    assert.match(seen[0]!.url, /^\/v2\/projects\/p\/devices\?deviceTypes=a&deviceTypes=b&pageSize=1000$/);
    seen.length = 0;
    assert.deepEqual(await basic().list('projects/p/devices', 'devices', {}, 3), ['d0', 'd1', 'd2']);
    assert.equal(seen.length, 2);
    assert.match(seen[0]!.url, /pageSize=3/);
  });

  it('exchanges an HS256 assertion for a token, caches it, and exchanges again after a 401', async () => {
    seen.length = 0;
    let issued = 0;
    const valid = new Set<string>();
    handler = (req, _body, res) => {
      if (req.url === '/oauth2/token') {
        const token = `t${++issued}`;
        valid.add(token);
        return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
      }
      const token = req.headers.authorization?.replace('Bearer ', '') ?? '';
      return valid.has(token)
        ? json(res, 200, { token })
        : json(res, 401, { error: 'invalid or expired token', code: 401 });
    };
    const stored = new Map<string, CachedToken>();
    const tokens: TokenStore = {
      get: (k) => stored.get(k) ?? null,
      set: (k, t) => void stored.set(k, t),
      delete: (k) => void stored.delete(k),
    };
    const client = new ApiClient({
      url,
      credentials: { keyId: 'k1', secret: 's1', email: 'sa@p.serviceaccount.sensorcloud.local' },
      tokens,
    });
    assert.deepEqual(await client.call('GET', 'projects'), { token: 't1' });
    assert.deepEqual(await client.call('GET', 'projects'), { token: 't1' });
    const assertion = new URLSearchParams(seen[0]!.body).get('assertion')!;
    assert.deepEqual(decodeProtectedHeader(assertion), { alg: 'HS256', kid: 'k1', typ: 'JWT' });
    const claims = decodeJwt(assertion);
    assert.deepEqual([claims.iss, claims.aud], ['sa@p.serviceaccount.sensorcloud.local', `${url}/oauth2/token`]);
    assert.equal(new URLSearchParams(seen[0]!.body).get('grant_type'), 'urn:ietf:params:oauth:grant-type:jwt-bearer');
    // Another process (a new client) uses the stored token; once the server forgets it, one new exchange.
    valid.delete('t1');
    const next = new ApiClient({
      url,
      credentials: { keyId: 'k1', secret: 's1', email: 'sa@p.serviceaccount.sensorcloud.local' },
      tokens,
    });
    assert.deepEqual(await next.call('GET', 'projects'), { token: 't2' });
    assert.equal(issued, 2);
    assert.equal(stored.get(`${url} k1`)?.token, 't2');
  });
});

describe('errors', () => {
  it('an API error carries its status and the API message; a 401 is an AuthError', async () => {
    handler = (_req, _body, res) => json(res, 404, { error: 'device not found', code: 404, help: '' });
    const notFound = await basic()
      .call('GET', 'projects/p/devices/d')
      .catch((e) => e);
    assert.ok(notFound instanceof ApiError);
    assert.deepEqual([notFound.status, notFound.message, notFound.exitCode], [404, 'device not found', 1]);
    handler = (_req, _body, res) => json(res, 401, { error: 'invalid credentials', code: 401 });
    const denied = await basic()
      .call('GET', 'projects')
      .catch((e) => e);
    assert.ok(denied instanceof AuthError);
    assert.equal(denied.exitCode, 3);
  });

  it('a refused assertion (400 invalid_grant) is an AuthError with the description', async () => {
    handler = (_req, _body, res) =>
      json(res, 400, {
        error: 'invalid_grant',
        error_description: 'assertion signature does not verify with the key',
        code: 400,
      });
    const err = await new ApiClient({ url, credentials: { keyId: 'k1', secret: 'bad', email: 'sa@x' } })
      .call('GET', 'projects')
      .catch((e) => e);
    assert.ok(err instanceof AuthError);
    assert.match(err.message, /assertion signature does not verify/);
  });

  it('gives up after the 429 retries and reports the API message', async () => {
    handler = (_req, _body, res) => json(res, 429, { error: 'rate limit exceeded', code: 429 }, { 'retry-after': '1' });
    const client = new ApiClient({
      url,
      credentials: { keyId: 'k1', secret: 's1', email: null },
      maxRateLimitRetries: 1,
    });
    const err = await client.call('GET', 'roles').catch((e) => e);
    assert.ok(err instanceof ApiError);
    assert.deepEqual([err.status, err.message], [429, 'rate limit exceeded']);
  });

  it('an unreachable server is an API error naming it', async () => {
    const port = await freePort();
    const err = await new ApiClient({
      url: `http://127.0.0.1:${port}`,
      credentials: { keyId: 'k', secret: 's', email: null },
    })
      .call('GET', 'roles')
      .catch((e) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.message, `cannot reach http://127.0.0.1:${port}: ECONNREFUSED`);
  });

  it('no answer within timeoutMs is an ApiTimeoutError (exit 1) naming the server and the wait', async () => {
    let answer: (() => void) | null = null;
    handler = (_req, _body, res) => (answer = () => json(res, 200, {}));
    const err = await basic()
      .call('POST', 'projects/p/dataconnectors/c:replay', { body: {}, timeoutMs: 200 })
      .catch((e) => e);
    (answer as (() => void) | null)?.();
    assert.ok(err instanceof ApiTimeoutError, String(err));
    assert.deepEqual([err.message, err.exitCode], [`no answer from ${url} within 0.2 s`, 1]);
  });
});
