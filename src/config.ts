// Configuration: one schema, every key with its env name and default (docs/configuration.md mirrors this).
// Precedence: CLI flags > environment > defaults. Invalid configuration fails fast with every problem named.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { tryParseDuration } from './domain/time.ts';

export interface RateLimit {
  capacity: number;
  /** Tokens per second. */
  refillPerSecond: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  publicUrl: string;
  emailDomain: string;
  adminEmail: string | null;
  adminPassword: string | null;
  caFile: string | null;
  allowPrivateEndpoints: string[];
  /** null = rate limiting off. */
  rateLimit: RateLimit | null;
  /** Seconds events are kept in history. */
  eventRetentionSeconds: number;
  /** Seconds between emulated heartbeats; 0 disables. */
  heartbeatIntervalSeconds: number;
  /** Messages a slow stream reader may fall behind before its stream is closed with a 503 line. */
  streamBufferMessages: number;
  /** Milliseconds a client has to deliver a whole request, headers and body. */
  requestTimeoutMs: number;
  /** Start the demo (emulated sensors producing events in the bootstrap project). */
  demo: boolean;
  logLevel: string;
}

export interface ConfigFlags {
  port?: string | number;
  host?: string;
  dataDir?: string;
  databaseUrl?: string;
  demo?: boolean;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

function parseRateLimit(raw: string, problems: string[]): RateLimit | null {
  if (raw.trim().toLowerCase() === 'off') return null;
  const m = /^\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*s?\s*$/.exec(raw);
  if (!m || Number(m[1]) < 1 || Number(m[2]) <= 0) {
    problems.push(`SENSORCLOUD_RATE_LIMIT must be "<requests>/<seconds>s" (e.g. 100/5s) or "off", got "${raw}"`);
    return null;
  }
  return { capacity: Number(m[1]), refillPerSecond: Number(m[1]) / Number(m[2]) };
}

function parseCidrs(raw: string, problems: string[]): string[] {
  const out: string[] = [];
  for (const part of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(part);
    if (!m) problems.push(`SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: "${part}" is not a CIDR (e.g. 127.0.0.0/8)`);
    else out.push(part);
  }
  return out;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, flags: ConfigFlags = {}): Config {
  const problems: string[] = [];
  const pick = (flag: unknown, name: string): string | undefined => {
    if (flag !== undefined && flag !== null && flag !== '') return String(flag);
    const v = env[name];
    return v === undefined || v === '' ? undefined : v;
  };

  const portRaw = pick(flags.port, 'PORT') ?? '8080';
  const port = Number(portRaw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`PORT must be an integer 0-65535, got "${portRaw}"`);
  const host = pick(flags.host, 'HOST') ?? '127.0.0.1';
  const dataDir = resolve(pick(flags.dataDir, 'SENSORCLOUD_DATA_DIR') ?? './data');

  const databaseUrl = pick(flags.databaseUrl, 'SENSORCLOUD_DATABASE_URL') ?? null;
  if (databaseUrl !== null) {
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) problems.push('SENSORCLOUD_DATABASE_URL must start with postgres:// (unset it to use SQLite)');
    else problems.push('SENSORCLOUD_DATABASE_URL: the PostgreSQL backend is not available in this version; unset it to use the embedded SQLite store');
  }

  const hostForUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  // With an invalid PORT the derived URL is meaningless; PORT's own problem is reported instead.
  let publicUrl = pick(undefined, 'SENSORCLOUD_PUBLIC_URL') ?? `http://${hostForUrl}:${Number.isInteger(port) ? port : 8080}`;
  try {
    const u = new URL(publicUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    publicUrl = publicUrl.replace(/\/+$/, '');
  } catch {
    problems.push(`SENSORCLOUD_PUBLIC_URL must be an http(s) URL, got "${publicUrl}"`);
  }

  const emailDomain = (pick(undefined, 'SENSORCLOUD_EMAIL_DOMAIN') ?? 'sensorcloud.local').toLowerCase();
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(emailDomain)) {
    problems.push(`SENSORCLOUD_EMAIL_DOMAIN must be a domain name, got "${emailDomain}"`);
  }
  const adminEmail = pick(undefined, 'SENSORCLOUD_ADMIN_EMAIL')?.toLowerCase() ?? null;
  if (adminEmail !== null && !/^[^@\s]+@[^@\s]+$/.test(adminEmail)) problems.push(`SENSORCLOUD_ADMIN_EMAIL is not an email address: "${adminEmail}"`);
  const adminPassword = pick(undefined, 'SENSORCLOUD_ADMIN_PASSWORD') ?? null;
  if (adminPassword !== null && adminPassword.length < 12) problems.push('SENSORCLOUD_ADMIN_PASSWORD must be at least 12 characters');

  const caFile = pick(undefined, 'SENSORCLOUD_CA_FILE') ?? null;
  if (caFile !== null) {
    try {
      if (!readFileSync(caFile, 'utf8').includes('-----BEGIN CERTIFICATE-----')) problems.push(`SENSORCLOUD_CA_FILE ${caFile} holds no PEM certificate`);
    } catch {
      problems.push(`SENSORCLOUD_CA_FILE ${caFile} cannot be read`);
    }
  }
  const allowPrivateEndpoints = parseCidrs(pick(undefined, 'SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS') ?? '', problems);
  const rateLimit = parseRateLimit(pick(undefined, 'SENSORCLOUD_RATE_LIMIT') ?? '100/5s', problems);

  const retentionRaw = pick(undefined, 'SENSORCLOUD_EVENT_RETENTION') ?? '31d';
  const eventRetentionSeconds = parseSpan(retentionRaw);
  if (eventRetentionSeconds === null || eventRetentionSeconds <= 0) problems.push(`SENSORCLOUD_EVENT_RETENTION must be a duration like 31d, 12h or 3600s, got "${retentionRaw}"`);
  const heartbeatRaw = pick(undefined, 'SENSORCLOUD_HEARTBEAT_INTERVAL') ?? '15m';
  const heartbeatIntervalSeconds = parseSpan(heartbeatRaw);
  if (heartbeatIntervalSeconds === null || heartbeatIntervalSeconds < 0) problems.push(`SENSORCLOUD_HEARTBEAT_INTERVAL must be a duration like 15m or 0 (off), got "${heartbeatRaw}"`);

  const bufferRaw = pick(undefined, 'SENSORCLOUD_STREAM_BUFFER') ?? '1000';
  const streamBufferMessages = Number(bufferRaw);
  if (!Number.isInteger(streamBufferMessages) || streamBufferMessages < 1) problems.push(`SENSORCLOUD_STREAM_BUFFER must be a positive integer, got "${bufferRaw}"`);

  const requestTimeoutRaw = pick(undefined, 'SENSORCLOUD_REQUEST_TIMEOUT') ?? '30s';
  const requestTimeoutSeconds = parseSpan(requestTimeoutRaw);
  if (requestTimeoutSeconds === null || requestTimeoutSeconds < 1 || requestTimeoutSeconds > 3600) {
    problems.push(`SENSORCLOUD_REQUEST_TIMEOUT must be a duration from 1s to 1h, like 30s, got "${requestTimeoutRaw}"`);
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    port, host, dataDir, databaseUrl, publicUrl, emailDomain, adminEmail, adminPassword, caFile,
    allowPrivateEndpoints, rateLimit,
    eventRetentionSeconds: eventRetentionSeconds!,
    heartbeatIntervalSeconds: heartbeatIntervalSeconds!,
    streamBufferMessages,
    requestTimeoutMs: Math.round(requestTimeoutSeconds! * 1000),
    demo: flags.demo === true || env.SENSORCLOUD_DEMO === '1' || env.SENSORCLOUD_DEMO === 'true',
    logLevel: env.LOG_LEVEL ?? 'info',
  });
}

/** "31d", "12h", "15m", "90s", or a bare number of seconds. */
export function parseSpan(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([dhms]?)\s*$/.exec(raw);
  if (!m) return tryParseDuration(raw);
  const unit = { d: 86400, h: 3600, m: 60, s: 1, '': 1 }[m[2] as 'd' | 'h' | 'm' | 's' | ''];
  return Number(m[1]) * unit;
}
