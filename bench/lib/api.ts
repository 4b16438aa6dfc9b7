// Talking to the service over its wire contract for setup (devices, connectors, tokens). A 404 from a
// setup call means the feature has not landed: the scenario is skipped, never crashed.
import { SignJWT } from 'jose';
import type { Pool } from 'undici';
import { formatMicros, uniqueMicros } from './stats.ts';
import type { Req } from './loadgen.ts';
import type { ServiceProcess } from './service.ts';

export class Skip extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Skip';
  }
}

export class ApiFailure extends Error {}

export async function call<T = Record<string, unknown>>(
  pool: Pool,
  auth: string | null,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<T> {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = auth;
  let payload: string | undefined;
  if (body !== undefined) {
    headers['content-type'] = contentType;
    payload = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const r = await pool.request({ path, method, headers, body: payload, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const text = await r.body.text();
  if (r.statusCode === 404)
    throw new Skip(`endpoint not available: ${method} ${path.replace(/\/(emu)?[0-9a-v]{20}/g, '/…')} answered 404`);
  if (r.statusCode !== 200) throw new ApiFailure(`${method} ${path} answered ${r.statusCode}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** Creates `n` emulated devices of `type` in the bootstrap project; returns their resource names. */
export async function createDevices(svc: ServiceProcess, n: number, type = 'touch'): Promise<string[]> {
  const names: string[] = [];
  const batch = 16;
  for (let i = 0; i < n; i += batch) {
    const made = await Promise.all(
      Array.from({ length: Math.min(batch, n - i) }, (_, j) =>
        call<{ name: string }>(svc.pool, svc.basicAuth, 'POST', `/v2/${svc.project}/devices`, {
          type,
          labels: { name: `bench ${i + j}` },
        }),
      ),
    );
    names.push(...made.map((d) => d.name));
  }
  return names;
}

export interface ConnectorSpec {
  url: string;
  signatureSecret?: string;
  displayName?: string;
  /** Delivery controls (extensions §X4); absent: the service's defaults (none sent). */
  deliveryConfig?: {
    maxConcurrency?: number;
    maxRate?: number;
    labelFilters?: Record<string, string>;
    paused?: boolean;
  };
}

/** Creates HTTP_PUSH connectors in the bootstrap project; returns their resource names. */
export async function createConnectors(svc: ServiceProcess, specs: ConnectorSpec[]): Promise<string[]> {
  const names: string[] = [];
  const batch = 8;
  for (let i = 0; i < specs.length; i += batch) {
    const made = await Promise.all(
      specs.slice(i, i + batch).map((s, j) =>
        call<{ name: string }>(svc.pool, svc.basicAuth, 'POST', `/v2/${svc.project}/dataconnectors`, {
          type: 'HTTP_PUSH',
          displayName: s.displayName ?? `bench ${i + j}`,
          httpConfig: { url: s.url, signatureSecret: s.signatureSecret ?? '', headers: {} },
          ...(s.deliveryConfig ? { deliveryConfig: s.deliveryConfig } : {}),
        }),
      ),
    );
    names.push(...made.map((c) => c.name));
  }
  return names;
}

/**
 * A publish request factory: touch events round-robin over the devices, each with a unique updateTime that the
 * receiver reads back from the push body (the correlation key).
 */
export function publishRequests(devices: string[], auth: string | null): (i: number) => Req {
  return (i) => {
    const key = formatMicros(uniqueMicros());
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (auth) headers.authorization = auth;
    return {
      method: 'POST',
      path: `/v2/${devices[i % devices.length]}:publish`,
      headers,
      body: `{"touch":{"updateTime":"${key}"}}`,
      key,
    };
  };
}

/** An HS256 JWT-bearer assertion for the bootstrap service account (contract §2.3). */
export async function makeAssertion(svc: ServiceProcess): Promise<string> {
  const sa = svc.bootstrap.serviceAccount;
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: sa.email, aud: svc.bootstrap.tokenUrl, iat, exp: iat + 3600 })
    .setProtectedHeader({ alg: 'HS256', kid: sa.keyId, typ: 'JWT' })
    .sign(new TextEncoder().encode(sa.secret));
}

export const tokenForm = (assertion: string): string =>
  new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString();

/** Exchanges an assertion for a bearer token. */
export async function fetchToken(svc: ServiceProcess): Promise<string> {
  const r = await call<{ access_token: string }>(
    svc.pool,
    null,
    'POST',
    '/oauth2/token',
    tokenForm(await makeAssertion(svc)),
    'application/x-www-form-urlencoded',
  );
  return r.access_token;
}
