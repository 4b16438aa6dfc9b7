// The push transport (contract §6.2–§6.4, §6.10): sign → send over pooled keep-alive HTTPS (undici) → classify.
// Every new connection resolves the host itself, checks the address with the SSRF guard and connects to exactly
// that address (pinned; SNI and certificate checks still use the host name), so DNS rebinding cannot redirect it.
import { X509Certificate } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Agent, buildConnector } from 'undici';
import type { Config } from '../config.ts';
import type { Clock } from '../runtime/clock.ts';
import type { IdGenerator } from '../runtime/ids.ts';
import type { Logger } from '../runtime/logger.ts';
import { classifyError, classifyResponse, RefusedAddressError } from './classify.ts';
import { buildPushHeaders, packageVersion, pushUserAgent } from './push-headers.ts';
import { keepResponseSnippet, RESPONSE_SNIPPET_BYTES } from './response-snippet.ts';
import { createAddressPolicy, type AddressPolicy } from './ssrf.ts';
import type { AttemptOutcome, Dispatcher, PushTarget } from './types.ts';

// Re-exported: the dispatcher thread and tests read the version here.
export { packageVersion };

/** No response headers within this many ms aborts the attempt (§6.4). */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** The response body is read up to this many bytes (§6.4); only its first 1,024 are kept, for the delivery log. */
export const MAX_RESPONSE_BODY_BYTES = 64 * 1024;

export interface DispatcherOptions {
  config: Pick<Config, 'caFile' | 'allowPrivateEndpoints'>;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** For `User-Agent: SensorCloud-DataConnector/<version>`; default: the version in package.json. */
  version?: string;
  /** Deadline for response headers, from the attempt's start (connect included), in ms. Default 10 000; tests shorten it. */
  timeoutMs?: number;
  /**
   * Keep-alive connections (= concurrent attempts) per receiver origin, shared by every connector pushing there.
   * Default 64. Probes (attempts of failing or suspect connectors) hold at most half of them together.
   */
  connectionsPerOrigin?: number;
  /**
   * Concurrent attempts over all origins. Default 1536: the engine's 1024, and the 512 it keeps for connectors that
   * answer while new dead endpoints hold slots until their timeouts (slots.ts, room). Further sends wait their turn,
   * within their deadline.
   */
  maxInFlight?: number;
  /** Host name → addresses. Default: the system resolver (dns.lookup, all addresses). Tests inject fake DNS. */
  lookup?: (hostname: string) => Promise<string[]>;
  /** A further PEM bundle to trust. Default: the NODE_EXTRA_CA_CERTS file (node ignores it once `ca` is given). */
  extraCaFile?: string | null;
}

/**
 * The trust store for pushes (§6.10): node's bundled roots + SENSORCLOUD_CA_FILE + NODE_EXTRA_CA_CERTS, built once.
 * An unreadable SENSORCLOUD_CA_FILE is a configuration error (throws); an unreadable NODE_EXTRA_CA_CERTS is only
 * logged, as node itself does.
 */
export function loadTrustStore(caFile: string | null, extraCaFile: string | null, logger: Logger): SecureContext {
  return createSecureContext({ ca: [...rootCertificates, ...readTrustFiles(caFile, extraCaFile, logger)] });
}

/**
 * The extra CA certificates (PEM texts) of SENSORCLOUD_CA_FILE and NODE_EXTRA_CA_CERTS, each certificate parsed, so a
 * bad file is found here: an unreadable or malformed SENSORCLOUD_CA_FILE is a configuration error (throws); an
 * unreadable NODE_EXTRA_CA_CERTS is only warned about. Cheap, unlike building the trust store with the ~140 bundled
 * roots (~200 ms), which the dispatcher thread does for itself: the start checks the files with this alone.
 */
export function readTrustFiles(caFile: string | null, extraCaFile: string | null, logger: Logger): string[] {
  const out: string[] = [];
  if (caFile) {
    let pem: string;
    try {
      pem = readFileSync(caFile, 'utf8');
    } catch (err) {
      throw new Error(`SENSORCLOUD_CA_FILE: cannot read "${caFile}": ${(err as Error).message}`);
    }
    const certs = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
    if (certs.length === 0) throw new Error(`SENSORCLOUD_CA_FILE: "${caFile}" holds no PEM certificate`);
    for (const cert of certs) {
      try {
        new X509Certificate(cert);
      } catch (err) {
        throw new Error(`SENSORCLOUD_CA_FILE: "${caFile}" holds a malformed certificate: ${(err as Error).message}`);
      }
    }
    out.push(pem);
  }
  if (extraCaFile) {
    try {
      out.push(readFileSync(extraCaFile, 'utf8'));
    } catch (err) {
      logger.warn(
        { file: extraCaFile, err: (err as Error).message },
        'NODE_EXTRA_CA_CERTS cannot be read; pushes ignore it',
      );
    }
  }
  return out;
}

/** A waiter in a gate's line, and how it is let in. */
interface InLine {
  waiter: Waiter;
  admit(admitted: boolean): void;
}

/**
 * At most `limit` holders; a leaving holder hands its slot straight to a waiter: the first in line, or, in a fair
 * gate (an origin's), the first of the next URL in turn among those waiting. 100 connectors to a hanging path on a
 * receiver host filled the line for its connections, and a healthy path of the same host waited behind all of them
 * until its attempts timed out; now each waiting URL gets its turn as slots free.
 */
class Gate {
  private active = 0;
  /** The line of each URL ('' for all, in a gate that is not fair), and the URLs in turn. */
  private readonly lines = new Map<string, InLine[]>();
  private readonly turns: string[] = [];
  constructor(
    private readonly limit: number,
    private readonly fair = false,
  ) {}
  /** Admits at once when a slot is free (the common case: no promise). */
  tryEnter(): boolean {
    if (this.active >= this.limit) return false;
    this.active++;
    return true;
  }
  /** Waits for a slot; false (and no slot held) when the waiter's deadline passes first. */
  wait(waiter: Waiter): Promise<boolean> {
    if (waiter.expired) return Promise.resolve(false);
    const key = this.fair ? waiter.url : '';
    return new Promise((resolve) => {
      const entry: InLine = {
        waiter,
        admit(admitted) {
          waiter.onExpire = null;
          resolve(admitted);
        },
      };
      waiter.onExpire = () => {
        const line = this.lines.get(key);
        const i = line?.indexOf(entry) ?? -1;
        if (i >= 0) line!.splice(i, 1);
        if (line?.length === 0) {
          this.lines.delete(key);
          this.turns.splice(this.turns.indexOf(key), 1);
        }
        resolve(false);
      };
      let line = this.lines.get(key);
      if (line === undefined) {
        this.lines.set(key, (line = []));
        this.turns.push(key);
      }
      line.push(entry);
    });
  }
  leave(): void {
    const key = this.turns.shift();
    if (key === undefined) {
      this.active--;
      return;
    }
    const line = this.lines.get(key)!;
    const entry = line.shift()!;
    if (line.length > 0) this.turns.push(key);
    else this.lines.delete(key);
    entry.admit(true);
  }
  get idle(): boolean {
    return this.active === 0 && this.turns.length === 0;
  }
}

// Connection errors after which the next vetted address of the same host is worth a try.
const TRY_NEXT_ADDRESS = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

type Connector = buildConnector.connector;

/** undici's TLS connector behind the SSRF guard: resolve, vet, then connect to the vetted address only. */
function createGuardedConnector(
  base: Connector,
  policy: AddressPolicy,
  lookup: (hostname: string) => Promise<string[]>,
): Connector {
  return (options, callback) => {
    const host = options.hostname;
    if (isIP(host) !== 0) {
      const reason = policy.check(host);
      if (reason !== null) callback(new RefusedAddressError(reason), null);
      else base(options, callback);
      return;
    }
    lookup(host).then(
      (addresses) => {
        const vetted = addresses.filter((address) => policy.check(address) === null);
        if (vetted.length === 0) {
          const reason = addresses.length === 0 ? 'no address' : policy.check(addresses[0]!);
          callback(
            new RefusedAddressError(`${host} resolves to ${addresses.join(', ') || 'nothing'} (${reason})`),
            null,
          );
          return;
        }
        const attempt = (i: number): void => {
          // hostname = the vetted IP (where the socket goes); servername = the host (SNI and certificate check).
          base({ ...options, hostname: vetted[i]!, servername: host }, (err, socket) => {
            const code = (err as { code?: string } | null)?.code;
            if (err && i + 1 < vetted.length && code !== undefined && TRY_NEXT_ADDRESS.has(code)) attempt(i + 1);
            else if (err) callback(err, null);
            else callback(null, socket!);
          });
        };
        attempt(0);
      },
      (err: Error) => callback(err, null),
    );
  };
}

const systemLookup = async (hostname: string): Promise<string[]> =>
  (await dnsLookup(hostname, { all: true })).map((entry) => entry.address);

interface ParsedTarget {
  origin: string;
  path: string;
}

/** What waits at a gate: the deadline's state, and where the wait leaves the function that stops it. */
interface Waiter {
  /** Where it is sent (a fair gate takes turns among URLs). */
  readonly url: string;
  /** The deadline passed. */
  expired: boolean;
  /** Stops the current wait for a slot; set by the gate while the waiter waits there. */
  onExpire: (() => void) | null;
}

/** The deadline timer's callback: module-level, so that arming it costs no closure per attempt. */
function expireAttempt(attempt: { expire(): void }): void {
  attempt.expire();
}

/** The deadline's error, handed to undici's abort so that the attempt ends with it. */
class DeadlineError extends Error {
  readonly code = 'ERR_SENSORCLOUD_DEADLINE';
}

/** The value of `name` (lower case) in undici's raw header list [name, value, name, value, …]. */
function rawHeader(rawHeaders: Buffer[], name: string): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const key = rawHeaders[i]!;
    if (key.length === name.length && key.toString('latin1').toLowerCase() === name)
      return rawHeaders[i + 1]!.toString('latin1');
  }
  return undefined;
}

/** The gate of `origin` in `gates`, made when there is none (a gate goes once it is idle). */
function gateOf(gates: Map<string, Gate>, origin: string, limit: number, fair: boolean): Gate {
  let gate = gates.get(origin);
  if (gate === undefined) gates.set(origin, (gate = new Gate(limit, fair)));
  return gate;
}

export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { clock, ids, logger } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const connectionsPerOrigin = options.connectionsPerOrigin ?? 64;
  const userAgent = pushUserAgent(options.version ?? packageVersion());
  const secureContext = loadTrustStore(
    options.config.caFile,
    options.extraCaFile !== undefined ? options.extraCaFile : (process.env.NODE_EXTRA_CA_CERTS ?? null),
    logger,
  );
  const policy = createAddressPolicy(options.config.allowPrivateEndpoints);
  const base = buildConnector({ secureContext, rejectUnauthorized: true, timeout: timeoutMs, maxCachedSessions: 1000 });
  const agent = new Agent({
    connect: createGuardedConnector(base, policy, options.lookup ?? systemLookup),
    connections: connectionsPerOrigin,
    pipelining: 1,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    // Redirects are never followed (§6.2): undici 7 follows none unless a redirect interceptor is installed.
  });
  // Above the engine's overall cap; the engine decides who gets the slots.
  const overall = new Gate(options.maxInFlight ?? 1536);
  const perOrigin = new Map<string, Gate>();
  // 100 connectors to a hanging path on a receiver host took all 64 connections to it, and a healthy connector to
  // the same host:port saw 6 of 77 events in 55 s: probes wait here for half of an origin's connections.
  const probesPerOrigin = Math.max(1, Math.floor(connectionsPerOrigin / 2));
  const probeGates = new Map<string, Gate>();
  // Connector URLs repeat for every event; parse each once (bounded: cleared when it grows past 1000 entries).
  const targets = new Map<string, ParsedTarget | AttemptOutcome>();
  let closed = false;

  /** Origin and path, or the failed outcome of a URL that can never be pushed to. */
  function parseTarget(url: string): ParsedTarget | AttemptOutcome {
    let parsed = targets.get(url);
    if (parsed !== undefined) return parsed;
    try {
      const u = new URL(url);
      if (u.protocol !== 'https:') {
        parsed = {
          ok: false,
          reason: 'refused_address',
          outcome: 'BLOCKED_ADDRESS',
          responseTimeMs: 0,
          message: `refused address: only https:// URLs are pushed to, not ${u.protocol}//`,
        };
      } else {
        // Credentials in the URL are not sent (u.origin drops them); custom headers carry credentials.
        parsed = { origin: u.origin, path: `${u.pathname}${u.search}` };
      }
    } catch {
      parsed = {
        ok: false,
        reason: 'connection',
        outcome: 'OTHER',
        responseTimeMs: 0,
        message: 'connection: the URL cannot be parsed',
      };
    }
    if (targets.size >= 1000) targets.clear();
    targets.set(url, parsed);
    return parsed;
  }

  const nextJti = (): string => ids.next();
  function buildHeaders(target: PushTarget, body: Buffer, startMs: number): Record<string, string> {
    return buildPushHeaders(target, body, userAgent, Math.floor(startMs / 1000), nextJti);
  }

  /** An attempt that ended before it reached the receiver: no free connection within the deadline. */
  const noConnection = (): AttemptOutcome => ({
    ok: false,
    reason: 'timeout',
    outcome: 'TIMEOUT',
    responseTimeMs: timeoutMs,
    message: `no free connection to the receiver within ${timeoutMs} ms`,
  });

  /**
   * One attempt (§6.4): its deadline, the slots it holds, and undici's dispatch handler, in one object. Built on
   * the handler's callbacks, without what undici's `request` adds per call (a promise wrapper, an abort-signal
   * listener, a response stream to drain: ~20 % of the dispatcher thread with an AbortController per attempt).
   * The callbacks are methods, not closures, and the attempt is one promise, not one per layer: every push
   * allocates this, and garbage collection was ~16 % of the dispatcher thread.
   */
  class Attempt implements Waiter {
    get url(): string {
      return this.target.url;
    }

    readonly startMs = clock.now();
    readonly timer: NodeJS.Timeout;
    /** The deadline passed (before response headers, or while the body was still arriving). */
    expired = false;
    /** The deadline passed before response headers arrived. */
    timedOut = false;
    onExpire: (() => void) | null = null;
    private headersArrived = false;
    private outcome: AttemptOutcome | null = null;
    private received = 0;
    /** The first bytes of the answer's body (at most 1 KiB), for the delivery log; null until one arrives. */
    private snippet: Buffer | null = null;
    private abortRequest: ((err: Error) => void) | null = null;
    private gate: Gate | null = null;
    private probeGate: Gate | null = null;
    private holdsOverall = false;

    constructor(
      private readonly parsed: ParsedTarget,
      private readonly target: PushTarget,
      private readonly body: Buffer,
      private resolve: ((outcome: AttemptOutcome) => void) | null,
    ) {
      this.timer = setTimeout(expireAttempt, timeoutMs, this);
    }

    /**
     * Takes its origin's probe slot if it is a probe, then a per-origin and an overall slot (at once when free, the
     * common case), then sends.
     */
    start(): void {
      const origin = this.parsed.origin;
      if (this.target.probe === true) {
        const probeGate = gateOf(probeGates, origin, probesPerOrigin, false);
        if (!probeGate.tryEnter()) return void this.waitForSlots(probeGate);
        this.probeGate = probeGate;
      }
      const gate = gateOf(perOrigin, origin, connectionsPerOrigin, true);
      if (gate.tryEnter()) {
        this.gate = gate;
        if (overall.tryEnter()) {
          this.holdsOverall = true;
          this.dispatch();
          return;
        }
      }
      void this.waitForSlots(null);
    }

    /**
     * Waits for the slots it does not hold yet (`probeGate`: the probe slot it still needs). Waiting for a free
     * connection counts against the deadline, so every send settles within about twice the timeout.
     */
    private async waitForSlots(probeGate: Gate | null): Promise<void> {
      if (probeGate !== null) {
        if (!(await probeGate.wait(this))) return this.finish(noConnection());
        this.probeGate = probeGate;
      }
      if (this.gate === null) {
        const gate = gateOf(perOrigin, this.parsed.origin, connectionsPerOrigin, true);
        if (!gate.tryEnter() && !(await gate.wait(this))) return this.finish(noConnection());
        this.gate = gate;
      }
      if (!(await overall.wait(this))) return this.finish(noConnection());
      this.holdsOverall = true;
      this.dispatch();
    }

    private dispatch(): void {
      try {
        const headers = buildHeaders(this.target, this.body, this.startMs);
        agent.dispatch(
          { origin: this.parsed.origin, path: this.parsed.path, method: 'POST', headers, body: this.body },
          this,
        );
      } catch (err) {
        this.onError(err as Error);
      }
    }

    /** The deadline: stops the wait for a slot, or the request (at once, or as soon as undici starts it). */
    expire(): void {
      this.expired = true;
      if (!this.headersArrived) this.timedOut = true;
      if (this.onExpire !== null) this.onExpire();
      else this.abortRequest?.(new DeadlineError('deadline'));
    }

    onConnect(abortRequest: (err: Error) => void): void {
      if (this.expired) abortRequest(new DeadlineError('deadline'));
      else this.abortRequest = abortRequest;
    }

    onHeaders(status: number, rawHeaders: Buffer[]): boolean {
      if (status < 200) return true; // 1xx: informational, the answer follows
      this.headersArrived = true;
      const nowMs = clock.now();
      this.outcome = classifyResponse({
        status,
        retryAfter: status === 429 || status === 503 ? rawHeader(rawHeaders, 'retry-after') : undefined,
        responseTimeMs: Math.max(0, nowMs - this.startMs),
        nowMs,
      });
      // The body is read (up to 64 KiB; its first KiB kept, onData) and dropped so the connection can be reused; a
      // stalled body gets one more deadline.
      this.timer.refresh();
      return true;
    }

    onData(chunk: Buffer): boolean {
      if (this.received < RESPONSE_SNIPPET_BYTES) this.snippet = keepResponseSnippet(this.snippet, chunk);
      this.received += chunk.length;
      // Longer bodies are cut off with their connection (the outcome is already known).
      if (this.received > MAX_RESPONSE_BODY_BYTES) this.abortRequest?.(new Error('response body over 64 KiB'));
      return true;
    }

    onComplete(): void {
      if (this.resolve !== null) this.finish(this.answer(true));
    }

    /** A failure while the body arrives does not change the answer the headers gave; any other is the outcome. */
    onError(err: Error): void {
      if (this.resolve === null) return;
      this.finish(
        this.outcome !== null
          ? this.answer(false)
          : classifyError(err, {
              timedOut: this.timedOut,
              timeoutMs,
              responseTimeMs: Math.max(0, clock.now() - this.startMs),
            }),
      );
    }

    /**
     * The outcome the headers gave, with the start of the body that arrived (§X1: responseBody). Taken when the
     * attempt settles, which it has always done at the end of the body (complete, cut off at 64 KiB, or stalled
     * until its deadline), never at the headers: so the snippet holds all it can (up to 1 KiB of the body) and
     * settles nothing later than before. `complete`: the body arrived in full.
     */
    private answer(complete: boolean): AttemptOutcome {
      const outcome = this.outcome!;
      if (this.snippet !== null) outcome.responseBody = this.snippet;
      if (!complete || this.received > RESPONSE_SNIPPET_BYTES) outcome.responseBodyTruncated = true;
      return outcome;
    }

    /** Settles the send once, and gives back the slots and the timer. */
    private finish(outcome: AttemptOutcome): void {
      const resolve = this.resolve;
      if (resolve === null) return;
      this.resolve = null;
      clearTimeout(this.timer);
      if (this.holdsOverall) overall.leave();
      const gate = this.gate;
      if (gate !== null) {
        gate.leave();
        if (gate.idle) perOrigin.delete(this.parsed.origin);
      }
      const probeGate = this.probeGate;
      if (probeGate !== null) {
        probeGate.leave();
        if (probeGate.idle) probeGates.delete(this.parsed.origin);
      }
      resolve(outcome);
    }
  }

  return {
    send(target, body) {
      if (closed)
        return Promise.resolve({
          ok: false,
          reason: 'connection',
          outcome: 'OTHER',
          responseTimeMs: 0,
          message: 'connection: the dispatcher is closed',
        });
      const parsed = parseTarget(target.url);
      if ('reason' in parsed) return Promise.resolve({ ...parsed });
      // The attempt starts now (§6.4). send never rejects: every failure is an outcome.
      return new Promise((resolve) => new Attempt(parsed, target, body, resolve).start());
    },
    async close() {
      if (closed) return;
      closed = true;
      await agent.close().catch(() => agent.destroy().catch(() => undefined));
    },
  };
}
