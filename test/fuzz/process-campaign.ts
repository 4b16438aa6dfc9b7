// The fuzz campaign against a real `sensorcloud serve` process over real HTTP, plus abuse only a socket can do
// (garbage, oversized headers, many slow clients at once): afterwards the process must still answer, and its
// resident memory stay bounded. The in-process campaign (campaign.ts) checks state; this one checks survival.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Auth, RequestOptions, TestResponse } from '../helpers/context.ts';
import { freePort, serve } from '../helpers/serve-process.ts';
import { isStreamRequest, runCampaign, type CampaignOptions, type CampaignReport, type Target } from './campaign.ts';

function authorization(auth: Auth): string | undefined {
  if (!auth) return undefined;
  if ('basic' in auth) return `Basic ${Buffer.from(`${auth.basic[0]}:${auth.basic[1]}`).toString('base64')}`;
  if ('bearer' in auth) return `Bearer ${auth.bearer}`;
  return auth.raw;
}

/** One request over HTTP, answered like the in-process client's; an opened stream (`stream`) is closed: null. */
function send(
  base: string,
  method: string,
  url: string,
  options: RequestOptions,
  auth: Auth,
  stream = false,
): Promise<TestResponse | null> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers };
    const header = authorization(auth);
    if (header !== undefined) headers.authorization = header;
    let payload: string | undefined = options.rawBody;
    if (payload === undefined && options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    // Framed explicitly: Node's client sends a GET or DELETE body unframed unless told its length.
    if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
    const req = httpRequest(`${base}${url}`, { method, headers, timeout: 15_000 });
    req.on('timeout', () => req.destroy(new Error(`no answer within 15 s: ${method} ${url}`)));
    req.on('error', reject);
    req.on('response', (res) => {
      if (stream && res.statusCode === 200) {
        req.destroy();
        resolve(null);
        return;
      }
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => {
        let body: unknown;
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode!, body: body as any, headers: res.headers as Record<string, string>, text });
      });
    });
    req.end(payload);
  });
}

/** Resident memory of a process, from /proc (Linux), in MB. */
function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

/** Writes `parts` to a new connection, `gapMs` apart, and resolves with whatever the server answered. */
function rawExchange(port: number, parts: string[], gapMs = 0): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setTimeout(20_000, () => socket.destroy());
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
    });
    socket.on('error', () => resolve(data));
    socket.on('close', () => resolve(data));
    let i = 0;
    const next = () => {
      if (socket.destroyed || i >= parts.length) return;
      socket.write(parts[i++]!);
      setTimeout(next, gapMs);
    };
    next();
  });
}

export interface ProcessCampaignReport extends Omit<CampaignReport, 'heapUsedMb'> {
  rssMb: number;
}

export async function runProcessCampaign(options: CampaignOptions): Promise<ProcessCampaignReport> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-fuzz-'));
  const port = await freePort();
  const child = await serve({
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    SENSORCLOUD_DATA_DIR: dataDir,
    SENSORCLOUD_RATE_LIMIT: 'off',
    SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
    SENSORCLOUD_REQUEST_TIMEOUT: '2s',
    LOG_LEVEL: 'fatal',
  });
  try {
    const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
    const base = `http://127.0.0.1:${port}`;
    const admin: Auth = { basic: [boot.serviceAccount.keyId, boot.serviceAccount.secret] };
    const target: Target = {
      request: async (method, url, o = {}) =>
        (await send(base, method, url, o, o.auth === undefined ? admin : o.auth))!,
      projectId: boot.project.split('/')[1],
      organizationId: boot.organization.split('/')[1],
      boot,
      publicUrl: base,
      nowSeconds: () => Date.now() / 1000,
    };
    const report = await runCampaign(target, {
      ...options,
      send: (req, auth) => send(base, req.method, req.url, req.options, auth, isStreamRequest(req)),
    });

    // What only a socket can do, many at once: slow clients past the request timeout, garbage, huge headers.
    const slow = Array.from({ length: 40 }, () =>
      rawExchange(
        port,
        [
          `POST /v2/projects HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization(admin)}\r\nContent-Length: 100\r\n\r\n`,
          ...'{"displayName"'.split(''),
        ],
        400,
      ),
    );
    const junk = Array.from({ length: 20 }, (_, i) =>
      rawExchange(port, [
        i % 2 ? 'GARBAGE\r\n\r\n' : `GET /v2/roles HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`,
      ]),
    );
    // The service answers while they hang on.
    assert.equal((await target.request('GET', '/healthz', { auth: null })).status, 200);
    for (const answer of await Promise.all([...slow, ...junk]))
      assert.match(answer, /^HTTP\/1\.1 400 /, answer.slice(0, 120));
    assert.equal((await target.request('GET', '/healthz', { auth: null })).status, 200);
    assert.equal(child.exitCode, null, 'the service process is alive');
    return { ...report, rssMb: Math.round(rssMb(child.pid!)) };
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
    rmSync(dataDir, { recursive: true, force: true });
  }
}
