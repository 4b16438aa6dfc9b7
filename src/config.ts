// Configuration: one schema, every key with its env name and default (docs/configuration.md mirrors this).
// Precedence: CLI flags > environment > defaults. Invalid configuration fails fast with every problem named.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { connectTimeoutMs, isDatabaseUrl, setsApplicationName } from './runtime/database-url.ts';

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
  /** Connections each process keeps to PostgreSQL (SENSORCLOUD_DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  /** The master key's file: <dataDir>/master.key unless SENSORCLOUD_MASTER_KEY_FILE names a shared one. */
  masterKeyFile: string;
  /** SENSORCLOUD_MASTER_KEY_FILE was set (the file must exist: a cluster's processes share one key). */
  masterKeyFileSet: boolean;
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
  /** What the event streams of a process may hold together (src/api/stream-budget.ts). */
  streamCaps: Readonly<{ perPrincipal: number; total: number; bufferedBytes: number }>;
  /** Milliseconds a client has to deliver a whole request, headers and body. */
  requestTimeoutMs: number;
  /** Password checks (scrypt) a process runs at once, in all and per client address (auth/password-check-slots.ts). */
  passwordChecks: Readonly<{ total: number; perClient: number }>;
  /**
   * Milliseconds a claimed delivery stays leased to its attempt. On PostgreSQL, the rows of a process that died
   * mid-attempt are attempted again once their lease is over; on SQLite, at the next start.
   */
  deliveryLeaseMs: number;
  /**
   * The delivery log (extensions §X1): deliveries are kept `retentionSeconds` (SENSORCLOUD_DELIVERY_LOG_RETENTION,
   * default 72h) and at most `max` per connector (SENSORCLOUD_DELIVERY_LOG_MAX, default 100000; 0 turns the log off).
   */
  deliveryLog: Readonly<{ retentionSeconds: number; max: number }>;
  /** Events one `:replay` may enqueue, counted after the filters (SENSORCLOUD_REPLAY_MAX_EVENTS, default 100000). */
  replayMaxEvents: number;
  /**
   * The SMTP server notification rules' EMAIL actions are sent through (SENSORCLOUD_SMTP_URL, an smtp:// or smtps://
   * URL, user and password included when it needs them); null = none, and rules with an EMAIL action are refused.
   */
  smtpUrl: string | null;
  /**
   * The sender address of those e-mails (SENSORCLOUD_SMTP_FROM); default `sensorcloud@<host of the SMTP URL>`, or
   * `sensorcloud@<SENSORCLOUD_EMAIL_DOMAIN>` when that host is an IP address. Null when there is no SMTP server.
   */
  smtpFrom: string | null;
  /** Start the demo (emulated sensors producing events in the bootstrap project). */
  demo: boolean;
  logLevel: string;
  /** SENSORCLOUD_PUBLIC_URL was not set: publicUrl follows HOST and the port actually listened on (port 0). */
  publicUrlDerived: boolean;
  /**
   * Where port, host and data dir came from, for messages: the flag (`--port`) or the variable (`PORT`) the
   * operator used, or both (`--port or PORT`) for a default.
   */
  sources: Readonly<{ port: string; host: string; dataDir: string }>;
}

export interface ConfigFlags {
  port?: string | number;
  host?: string;
  dataDir?: string;
  databaseUrl?: string;
  demo?: boolean;
}

/** Every problem of the configuration, in one line (the operator sees it as the only line of a failed start). */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function parseRateLimit(raw: string, problems: string[]): RateLimit | null {
  if (raw.trim().toLowerCase() === 'off') return null;
  const unitless = /^\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*$/.exec(raw);
  if (unitless) {
    problems.push(`SENSORCLOUD_RATE_LIMIT=${raw.trim()} has no unit: write ${unitless[1]}/${unitless[2]}s`);
    return null;
  }
  const m = /^\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*s\s*$/.exec(raw);
  if (!m || Number(m[1]) < 1 || Number(m[2]) <= 0) {
    problems.push(`SENSORCLOUD_RATE_LIMIT must be "<requests>/<seconds>s" (e.g. 100/5s) or "off", got "${raw}"`);
    return null;
  }
  return { capacity: Number(m[1]), refillPerSecond: Number(m[1]) / Number(m[2]) };
}

/** A sender or recipient address: one mailbox, no display name (what an e-mail's From and To headers take as is). */
const MAILBOX = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;

/**
 * SENSORCLOUD_SMTP_URL and SENSORCLOUD_SMTP_FROM: an smtp:// or smtps:// URL of a host (user and password allowed, no
 * path, query or fragment), and the sender address. The URL's password is never part of a message.
 */
function parseSmtp(
  url: string | null,
  from: string | null,
  emailDomain: string,
  problems: string[],
): { smtpUrl: string | null; smtpFrom: string | null } {
  if (url === null) {
    if (from !== null)
      problems.push(
        'SENSORCLOUD_SMTP_FROM is set but SENSORCLOUD_SMTP_URL is not: set both to send e-mail, or neither',
      );
    return { smtpUrl: null, smtpFrom: null };
  }
  const like = 'such as smtps://user:password@mail.example.org:465 or smtp://mail.example.org:587';
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    problems.push(`SENSORCLOUD_SMTP_URL must be an smtp:// or smtps:// URL ${like}`);
  }
  if (parsed !== null) {
    if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:')
      problems.push(`SENSORCLOUD_SMTP_URL must use smtp:// or smtps://, ${like}; got ${parsed.protocol}//`);
    else if (parsed.hostname === '') problems.push(`SENSORCLOUD_SMTP_URL must name a host, ${like}`);
    else if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '')
      problems.push(`SENSORCLOUD_SMTP_URL must have no path, query or fragment, ${like}`);
  }
  const host = parsed?.hostname.replace(/^\[|\]$/g, '') ?? '';
  const isIp = /^[\d.]+$/.test(host) || host.includes(':');
  const sender = from ?? `sensorcloud@${isIp || host === '' ? emailDomain : host.toLowerCase()}`;
  if (!MAILBOX.test(sender))
    problems.push(
      `SENSORCLOUD_SMTP_FROM must be an e-mail address such as alerts@example.org (without a display name), got "${sender}"`,
    );
  return { smtpUrl: url, smtpFrom: sender };
}

function parseCidrs(raw: string, problems: string[]): string[] {
  const out: string[] = [];
  for (const part of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([0-9a-fA-F:.]+)\/(\d{1,3})$/.exec(part);
    if (!m) problems.push(`SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: "${part}" is not a CIDR (e.g. 127.0.0.0/8)`);
    else out.push(part);
  }
  return out;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, flags: ConfigFlags = {}): Config {
  const problems: string[] = [];
  /**
   * The flag's value if given, else the variable's. `source` names the one that was used, so that a message names
   * what the operator typed; both ("--port or PORT") when neither was used and the default applies.
   */
  const pickWithSource = (
    flag: unknown,
    flagName: string,
    name: string,
  ): { value: string | undefined; source: string } => {
    if (flag !== undefined && flag !== null && flag !== '') return { value: String(flag), source: flagName };
    const v = env[name];
    if (v === undefined || v === '') return { value: undefined, source: `${flagName} or ${name}` };
    return { value: v, source: name };
  };
  const pick = (flag: unknown, name: string): string | undefined => pickWithSource(flag, '', name).value;

  const portPicked = pickWithSource(flags.port, '--port', 'PORT');
  const portRaw = portPicked.value ?? '8080';
  const port = /^\d+$/.test(portRaw.trim()) ? Number(portRaw) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    problems.push(`${portPicked.source} must be a port number from 0 to 65535 (0 picks a free one), got "${portRaw}"`);
  const hostPicked = pickWithSource(flags.host, '--host', 'HOST');
  const host = hostPicked.value ?? '127.0.0.1';
  const hostForUrl = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  if (!URL.canParse(`http://${hostForUrl}/`) || new URL(`http://${hostForUrl}/`).pathname !== '/') {
    problems.push(
      `${hostPicked.source} must be a host name or an IP address such as 127.0.0.1 or 0.0.0.0, got "${host}"`,
    );
  }
  const dataDirPicked = pickWithSource(flags.dataDir, '--data-dir', 'SENSORCLOUD_DATA_DIR');
  const dataDir = resolve(dataDirPicked.value ?? './data');

  const databaseUrl = pick(flags.databaseUrl, 'SENSORCLOUD_DATABASE_URL') ?? null;
  if (databaseUrl !== null) {
    if (!isDatabaseUrl(databaseUrl)) {
      problems.push(
        'SENSORCLOUD_DATABASE_URL must be a URL such as postgres://user:password@host:5432/sensorcloud (unset it to use SQLite)',
      );
    } else if (setsApplicationName(databaseUrl)) {
      problems.push(
        'SENSORCLOUD_DATABASE_URL must not set application_name: the service names its connections itself (sensorcloud), by which admin commands tell that a process is connected',
      );
    } else if (Number.isNaN(connectTimeoutMs(databaseUrl))) {
      problems.push(
        'SENSORCLOUD_DATABASE_URL: connect_timeout must be a whole number of seconds from 1 to 3600 (how long to wait for a connection; 10 when not given)',
      );
    }
  }
  const poolRaw = pick(undefined, 'SENSORCLOUD_DATABASE_POOL_SIZE') ?? '10';
  const databasePoolSize = Number(poolRaw);
  if (!/^\d+$/.test(poolRaw) || databasePoolSize < 2 || databasePoolSize > 200) {
    problems.push(`SENSORCLOUD_DATABASE_POOL_SIZE must be a whole number from 2 to 200, got "${poolRaw}"`);
  }
  const masterKeyFileSetTo = pick(undefined, 'SENSORCLOUD_MASTER_KEY_FILE');
  const masterKeyFile = resolve(masterKeyFileSetTo ?? resolve(dataDir, 'master.key'));

  // Derived from HOST and PORT unless set. An invalid PORT or HOST is reported as itself, never as a problem of a
  // URL the operator did not write.
  const publicUrlSet = pick(undefined, 'SENSORCLOUD_PUBLIC_URL');
  let publicUrl = publicUrlSet ?? `http://${hostForUrl}:${Number.isInteger(port) ? port : 8080}`;
  if (publicUrlSet !== undefined) {
    try {
      const u = new URL(publicUrl);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
      publicUrl = publicUrl.replace(/\/+$/, '');
    } catch {
      problems.push(
        `SENSORCLOUD_PUBLIC_URL must be an http(s) URL such as https://sensors.example.org, got "${publicUrl}"`,
      );
    }
  }

  const emailDomain = (pick(undefined, 'SENSORCLOUD_EMAIL_DOMAIN') ?? 'sensorcloud.local').toLowerCase();
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(emailDomain)) {
    problems.push(`SENSORCLOUD_EMAIL_DOMAIN must be a domain name, got "${emailDomain}"`);
  }
  const adminEmail = pick(undefined, 'SENSORCLOUD_ADMIN_EMAIL')?.toLowerCase() ?? null;
  if (adminEmail !== null && !/^[^@\s]+@[^@\s]+$/.test(adminEmail))
    problems.push(`SENSORCLOUD_ADMIN_EMAIL is not an email address: "${adminEmail}"`);
  const adminPassword = pick(undefined, 'SENSORCLOUD_ADMIN_PASSWORD') ?? null;
  if (adminPassword !== null && adminPassword.length < 12)
    problems.push('SENSORCLOUD_ADMIN_PASSWORD must be at least 12 characters');

  const caFile = pick(undefined, 'SENSORCLOUD_CA_FILE') ?? null;
  if (caFile !== null) {
    try {
      if (!readFileSync(caFile, 'utf8').includes('-----BEGIN CERTIFICATE-----'))
        problems.push(`SENSORCLOUD_CA_FILE ${caFile} holds no PEM certificate`);
    } catch {
      problems.push(`SENSORCLOUD_CA_FILE ${caFile} cannot be read`);
    }
  }
  const allowPrivateEndpoints = parseCidrs(pick(undefined, 'SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS') ?? '', problems);
  const rateLimit = parseRateLimit(pick(undefined, 'SENSORCLOUD_RATE_LIMIT') ?? '100/5s', problems);

  // A duration without a unit is refused rather than read as seconds: SENSORCLOUD_EVENT_RETENTION=10, meant as
  // days, once started silently and deleted the whole history at once.
  const span = (name: string, fallback: string, valid: (seconds: number) => boolean, like: string): number | null => {
    const raw = pick(undefined, name) ?? fallback;
    if (UNITLESS.test(raw) && Number(raw) !== 0) {
      problems.push(
        `${name}=${raw.trim()} has no unit: write ${raw.trim()}s, ${raw.trim()}m, ${raw.trim()}h or ${raw.trim()}d`,
      );
      return null;
    }
    const seconds = parseSpan(raw);
    if (seconds === null || !valid(seconds)) {
      problems.push(`${name} must be a duration ${like}, got "${raw}"`);
      return null;
    }
    return seconds;
  };
  const eventRetentionSeconds = span('SENSORCLOUD_EVENT_RETENTION', '31d', (s) => s > 0, 'like 31d, 12h or 3600s');
  const heartbeatIntervalSeconds = span('SENSORCLOUD_HEARTBEAT_INTERVAL', '15m', (s) => s >= 0, 'like 15m or 0 (off)');

  const bufferRaw = pick(undefined, 'SENSORCLOUD_STREAM_BUFFER') ?? '1000';
  const streamBufferMessages = Number(bufferRaw);
  if (!Number.isInteger(streamBufferMessages) || streamBufferMessages < 1)
    problems.push(`SENSORCLOUD_STREAM_BUFFER must be a positive integer, got "${bufferRaw}"`);

  const count = (name: string, fallback: string): number => {
    const raw = pick(undefined, name) ?? fallback;
    const n = Number(raw);
    if (!/^\s*\d+\s*$/.test(raw) || n < 1) problems.push(`${name} must be a whole number of at least 1, got "${raw}"`);
    return n;
  };
  const streamsPerCaller = count('SENSORCLOUD_STREAMS_PER_CALLER', '100');
  const streamsMax = count('SENSORCLOUD_STREAMS_MAX', '1000');
  const streamMemoryRaw = pick(undefined, 'SENSORCLOUD_STREAM_MEMORY') ?? '64MiB';
  const streamMemoryBytes = parseBytes(streamMemoryRaw);
  if (streamMemoryBytes === null || streamMemoryBytes < 1024 * 1024) {
    problems.push(
      `SENSORCLOUD_STREAM_MEMORY must be a size of at least 1MiB, like 64MiB or 1GiB, got "${streamMemoryRaw}"`,
    );
  }

  // Below the libuv thread pool, which scrypt shares with file, DNS and other crypto work: checks filling it made
  // every such call of the process wait behind them (auth/password-check-slots.ts).
  const threadPoolRaw = pick(undefined, 'UV_THREADPOOL_SIZE') ?? '4';
  const threadPool = Number(threadPoolRaw);
  if (!/^\s*\d+\s*$/.test(threadPoolRaw) || threadPool < 2 || threadPool > 1024) {
    problems.push(
      `UV_THREADPOOL_SIZE must be a whole number from 2 to 1024 (the threads of Node's libuv pool: password checks need one, and file, DNS and crypto work another), got "${threadPoolRaw}"`,
    );
  }
  const passwordChecks = count('SENSORCLOUD_PASSWORD_CHECKS', '2');
  const passwordChecksPerClient = count('SENSORCLOUD_PASSWORD_CHECKS_PER_CLIENT', '1');
  if (passwordChecks >= threadPool && threadPool >= 2) {
    problems.push(
      `SENSORCLOUD_PASSWORD_CHECKS must be below the ${threadPool} threads of the libuv pool, which file, DNS and crypto work share: at most ${threadPool - 1}, or raise UV_THREADPOOL_SIZE (got ${passwordChecks})`,
    );
  }
  if (passwordChecksPerClient > passwordChecks) {
    problems.push(
      `SENSORCLOUD_PASSWORD_CHECKS_PER_CLIENT must be at most SENSORCLOUD_PASSWORD_CHECKS (${passwordChecks}), got ${passwordChecksPerClient}`,
    );
  }

  const requestTimeoutSeconds = span(
    'SENSORCLOUD_REQUEST_TIMEOUT',
    '30s',
    (s) => s >= 1 && s <= 3600,
    'from 1s to 1h, like 30s',
  );
  const leaseSeconds = span(
    'SENSORCLOUD_DELIVERY_LEASE',
    '60s',
    (s) => s >= 15 && s <= 3600,
    "from 15s (longer than an attempt's 10 s) to 1h, like 60s",
  );

  const deliveryLogRetentionSeconds = span(
    'SENSORCLOUD_DELIVERY_LOG_RETENTION',
    '72h',
    (s) => s > 0,
    'like 72h, 7d or 3600s',
  );
  const deliveryLogMaxRaw = pick(undefined, 'SENSORCLOUD_DELIVERY_LOG_MAX') ?? '100000';
  const deliveryLogMax = Number(deliveryLogMaxRaw);
  if (!/^\s*\d+\s*$/.test(deliveryLogMaxRaw))
    problems.push(
      `SENSORCLOUD_DELIVERY_LOG_MAX must be a whole number (deliveries kept per connector; 0 turns the log off), got "${deliveryLogMaxRaw}"`,
    );
  const replayMaxEvents = count('SENSORCLOUD_REPLAY_MAX_EVENTS', '100000');

  const { smtpUrl, smtpFrom } = parseSmtp(
    pick(undefined, 'SENSORCLOUD_SMTP_URL') ?? null,
    pick(undefined, 'SENSORCLOUD_SMTP_FROM') ?? null,
    emailDomain,
    problems,
  );

  const logLevel = pick(undefined, 'LOG_LEVEL') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel))
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    port,
    host,
    dataDir,
    databaseUrl,
    databasePoolSize,
    masterKeyFile,
    masterKeyFileSet: masterKeyFileSetTo !== undefined,
    publicUrl,
    emailDomain,
    adminEmail,
    adminPassword,
    caFile,
    allowPrivateEndpoints,
    rateLimit,
    eventRetentionSeconds: eventRetentionSeconds!,
    heartbeatIntervalSeconds: heartbeatIntervalSeconds!,
    streamBufferMessages,
    streamCaps: Object.freeze({
      perPrincipal: streamsPerCaller,
      total: streamsMax,
      bufferedBytes: streamMemoryBytes ?? 0,
    }),
    requestTimeoutMs: Math.round(requestTimeoutSeconds! * 1000),
    passwordChecks: Object.freeze({ total: passwordChecks, perClient: passwordChecksPerClient }),
    deliveryLeaseMs: Math.round(leaseSeconds! * 1000),
    deliveryLog: Object.freeze({ retentionSeconds: deliveryLogRetentionSeconds!, max: deliveryLogMax }),
    replayMaxEvents,
    smtpUrl,
    smtpFrom,
    demo: flags.demo === true || env.SENSORCLOUD_DEMO === '1' || env.SENSORCLOUD_DEMO === 'true',
    logLevel,
    publicUrlDerived: publicUrlSet === undefined,
    sources: Object.freeze({ port: portPicked.source, host: hostPicked.source, dataDir: dataDirPicked.source }),
  });
}

/** The configuration once the server listens on `port`: a derived public URL names that port (it differs with PORT=0). */
export function withListeningPort(config: Config, port: number): Config {
  if (!config.publicUrlDerived || port === config.port) return config;
  const url = new URL(config.publicUrl);
  url.port = String(port);
  return Object.freeze({ ...config, port, publicUrl: url.origin });
}

/** "64MiB", "512KiB", "1GiB" (or KB, MB, GB, powers of 1000), in bytes; a number alone is refused. */
export function parseBytes(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|KB|MB|GB)\s*$/i.exec(raw);
  if (!m) return null;
  const unit = m[2]!.toLowerCase();
  const size = { kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, kb: 1e3, mb: 1e6, gb: 1e9 }[unit as 'kib'];
  return Math.round(Number(m[1]) * size);
}

/** A number alone: a duration setting refuses it (but 0), since nobody can tell which unit was meant. */
const UNITLESS = /^\s*\d+(?:\.\d+)?\s*$/;

/** "31d", "12h", "15m", "90s" (or "0"), in seconds. */
export function parseSpan(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([dhms]?)\s*$/.exec(raw);
  if (!m) return null;
  const unit = { d: 86400, h: 3600, m: 60, s: 1, '': 1 }[m[2] as 'd' | 'h' | 'm' | 's' | ''];
  return Number(m[1]) * unit;
}

/** "10m", "31d", "90s": the largest unit that says `seconds` exactly. */
export function formatSpan(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/**
 * The settings in effect that change what the service keeps or whom it trusts, for the listening line: an operator
 * who set one by mistake (or forgot one set in a shell) sees it at every start. Empty with the defaults.
 */
export function notableSettings(config: Config): string[] {
  const notes: string[] = [];
  if (config.eventRetentionSeconds !== 31 * 86400)
    notes.push(
      `event history kept ${formatSpan(config.eventRetentionSeconds)} (SENSORCLOUD_EVENT_RETENTION; default 31d)`,
    );
  if (config.deliveryLog.max === 0) notes.push('no delivery log (SENSORCLOUD_DELIVERY_LOG_MAX=0)');
  else {
    if (config.deliveryLog.retentionSeconds !== 72 * 3600)
      notes.push(
        `delivery log kept ${formatSpan(config.deliveryLog.retentionSeconds)} (SENSORCLOUD_DELIVERY_LOG_RETENTION; default 72h)`,
      );
    if (config.deliveryLog.max !== 100_000)
      notes.push(
        `delivery log keeps ${config.deliveryLog.max} deliveries per connector (SENSORCLOUD_DELIVERY_LOG_MAX; default 100000)`,
      );
  }
  if (config.caFile !== null) notes.push(`pushes also trust the CAs in ${config.caFile} (SENSORCLOUD_CA_FILE)`);
  if (config.allowPrivateEndpoints.length > 0)
    notes.push(
      `pushes may reach the private addresses ${config.allowPrivateEndpoints.join(', ')} (SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS)`,
    );
  if (config.rateLimit === null) notes.push('no rate limit (SENSORCLOUD_RATE_LIMIT=off)');
  return notes;
}
