// The receiver: an HTTPS server on 127.0.0.1 that counts and timestamps every push and answers 200 {}.
// It can be switched "down" (port closed, connections dropped) and can open "silent" ports that accept a
// connection and never send a byte. Timestamps are process.hrtime (CLOCK_MONOTONIC, shared by every process
// on the machine), so the runner can correlate them with its own send times.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { serveHelper } from './procs.ts';

const [certFile, keyFile] = process.argv.slice(2);
const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;
const KEY_RE = /"updateTime":"([^"]+)"/;

let arrivals = new Float64Array(1 << 16);
let arrivalPaths = new Uint16Array(1 << 16);
let count = 0;
let signed = 0;
const pathIds = new Map<string, number>();
const pathNames: string[] = [];
let recordKeys = false;
/** Only pushes to paths starting with it have their keys recorded ("" = every path). */
let recordPrefix = '';
let keys: string[] = [];
let keyTimes: number[] = [];
/**
 * Pushes and alert webhooks to paths starting with it have their event recorded (null = none): the event's eventId,
 * the first updateTime of its data (the publish's key), the X-Sensorcloud-Alert-Transition header and the alert's
 * name, with the arrival time. Bodies are parsed whole: for low rates (webhooks, a latency run), not for floods.
 */
let eventPrefix: string | null = null;
let events: RecordedEvents = emptyEvents();

interface RecordedEvents {
  times: number[];
  paths: string[];
  eventIds: string[];
  keys: string[];
  transitions: string[];
  alerts: string[];
}
function emptyEvents(): RecordedEvents {
  return { times: [], paths: [], eventIds: [], keys: [], transitions: [], alerts: [] };
}

function recordEvent(t: number, path: string, body: string, transition: string): void {
  let eventId = '';
  let key = '';
  let alert = '';
  try {
    const b = JSON.parse(body) as {
      event?: { eventId?: unknown; data?: Record<string, { updateTime?: unknown }> } | null;
      alert?: { name?: unknown } | null;
    };
    if (typeof b.event?.eventId === 'string') eventId = b.event.eventId;
    const inner = b.event?.data ? Object.values(b.event.data)[0] : undefined;
    if (typeof inner?.updateTime === 'string') key = inner.updateTime;
    if (typeof b.alert?.name === 'string') alert = b.alert.name;
  } catch {
    // not JSON: recorded with empty fields
  }
  events.times.push(t);
  events.paths.push(path);
  events.eventIds.push(eventId);
  events.keys.push(key);
  events.transitions.push(transition);
  events.alerts.push(alert);
}

function pathId(path: string): number {
  let id = pathIds.get(path);
  if (id === undefined) {
    id = pathNames.length;
    pathIds.set(path, id);
    pathNames.push(path);
  }
  return id;
}

function record(path: string, body: string, isSigned: boolean, transition: string): void {
  const t = nowMs();
  if (count === arrivals.length) {
    const a = new Float64Array(arrivals.length * 2);
    a.set(arrivals);
    arrivals = a;
    const p = new Uint16Array(arrivalPaths.length * 2);
    p.set(arrivalPaths);
    arrivalPaths = p;
  }
  arrivals[count] = t;
  arrivalPaths[count] = pathId(path);
  count++;
  if (isSigned) signed++;
  if (recordKeys && path.startsWith(recordPrefix)) {
    const m = KEY_RE.exec(body);
    if (m) {
      keys.push(m[1]!);
      keyTimes.push(t);
    }
  }
  if (eventPrefix !== null && path.startsWith(eventPrefix)) recordEvent(t, path, body, transition);
}

const tlsOptions = { cert: readFileSync(certFile!), key: readFileSync(keyFile!), keepAliveTimeout: 65_000 };

/** Reads a push, records its arrival, then calls `answer`. */
function receive(req: IncomingMessage, answer: () => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    record(
      (req.url ?? '/').split('?')[0]!,
      Buffer.concat(chunks).toString('utf8'),
      req.headers['x-service-signature'] !== undefined,
      String(req.headers['x-sensorcloud-alert-transition'] ?? ''),
    );
    answer();
  });
}

function ok(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
  res.end('{}');
}

const sockets = new Set<Socket>();
const server = createHttpsServer(tlsOptions, (req, res) => receive(req, () => ok(res)));
server.headersTimeout = 60_000;
server.requestTimeout = 0;
server.on('secureConnection', (s: Socket) => {
  sockets.add(s);
  s.once('close', () => sockets.delete(s));
});
server.on('tlsClientError', () => {
  /* clients that give up are normal under load */
});

let port = 0;
let up = false;
function listen(p: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(p, '127.0.0.1', () => {
      server.off('error', reject);
      up = true;
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : p);
    });
  });
}

// Silent endpoints: accept, hold the socket, never answer (not even the TLS handshake).
const silentServers: NetServer[] = [];
const silentSockets = new Set<Socket>();
let silentAccepted = 0;
async function openSilent(n: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = createNetServer((sock) => {
      silentAccepted++;
      silentSockets.add(sock);
      sock.on('error', () => {});
      sock.once('close', () => silentSockets.delete(sock));
      sock.resume(); // read and discard, never write
    });
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    silentServers.push(s);
    const a = s.address();
    ports.push(typeof a === 'object' && a ? a.port : 0);
  }
  return ports;
}

// Slow endpoints: HTTPS ports that answer each push 200 {} after a delay, for delivery bound by the endpoints'
// response time rather than by the CPU. Each port is an origin of its own (a process's pushes to one origin share
// its connections); arrivals are recorded as the main server's, and the requests open at once are counted, in
// all and per port, with their highest since the last reset.
const slowServers: ReturnType<typeof createHttpsServer>[] = [];
const slowSockets = new Set<Socket>();
let slowOpen = 0;
let slowMaxOpen = 0;
let slowMaxOpenPerPort = 0;
async function openSlow(n: number, delayMs: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) {
    let open = 0;
    const s = createHttpsServer(tlsOptions, (req, res) =>
      receive(req, () => {
        open++;
        slowOpen++;
        if (open > slowMaxOpenPerPort) slowMaxOpenPerPort = open;
        if (slowOpen > slowMaxOpen) slowMaxOpen = slowOpen;
        setTimeout(() => {
          open--;
          slowOpen--;
          ok(res);
        }, delayMs);
      }),
    );
    s.on('secureConnection', (sock: Socket) => {
      slowSockets.add(sock);
      sock.once('close', () => slowSockets.delete(sock));
    });
    s.on('tlsClientError', () => {});
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    slowServers.push(s);
    const a = s.address();
    ports.push(typeof a === 'object' && a ? a.port : 0);
  }
  return ports;
}

function lowerBound(t: number): number {
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arrivals[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

port = await listen(0);
serveHelper(
  { port },
  {
    reset() {
      count = 0;
      signed = 0;
      keys = [];
      keyTimes = [];
    },
    now: () => nowMs(),
    stats() {
      const byPath: Record<string, number> = {};
      for (let i = 0; i < count; i++) {
        const name = pathNames[arrivalPaths[i]!]!;
        byPath[name] = (byPath[name] ?? 0) + 1;
      }
      return {
        total: count,
        signed,
        first: count ? arrivals[0] : null,
        last: count ? arrivals[count - 1] : null,
        byPath,
        distinctPaths: Object.keys(byPath).length,
      };
    },
    count: () => count,
    /** Arrivals with from ≤ t < to (hrtime ms), optionally only for paths starting with `prefix`. */
    window(args: { from: number; to: number; prefix?: string }) {
      const start = lowerBound(args.from);
      const end = lowerBound(args.to);
      let n = 0;
      let first: number | null = null;
      let last: number | null = null;
      for (let i = start; i < end; i++) {
        if (args.prefix !== undefined && !pathNames[arrivalPaths[i]!]!.startsWith(args.prefix)) continue;
        n++;
        first ??= arrivals[i]!;
        last = arrivals[i]!;
      }
      return { count: n, first, last };
    },
    /** Arrival times (hrtime ms, ascending) of the pushes to paths starting with `prefix` since the last reset. */
    times(args: { prefix: string }) {
      const out: number[] = [];
      for (let i = 0; i < count; i++) if (pathNames[arrivalPaths[i]!]!.startsWith(args.prefix)) out.push(arrivals[i]!);
      return out;
    },
    /** Starts or stops recording the keys of pushes, to paths starting with `prefix` only when given. */
    record(args: { on: boolean; prefix?: string }) {
      recordKeys = args.on;
      recordPrefix = args.prefix ?? '';
      keys = [];
      keyTimes = [];
    },
    /** Starts (a prefix) or stops (null) recording the events of pushes and webhooks; forgets what was recorded. */
    recordEvents(args: { prefix: string | null }) {
      eventPrefix = args.prefix;
      events = emptyEvents();
    },
    /** Returns and forgets the recorded events. */
    takeEvents() {
      const out = events;
      events = emptyEvents();
      return out;
    },
    /** Returns and forgets the recorded keys (the updateTime found in each body) with their arrival times. */
    takeKeys() {
      const out = { keys, times: keyTimes };
      keys = [];
      keyTimes = [];
      return out;
    },
    async down() {
      if (!up) return;
      up = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
    async up() {
      if (up) return;
      await listen(port);
    },
    silent: (args: { n: number }) => openSilent(args.n),
    silentStats: () => ({ accepted: silentAccepted, open: silentSockets.size }),
    slow: (args: { n: number; delayMs: number }) => openSlow(args.n, args.delayMs),
    /** Requests open at the slow ports now, and the most open at once (in all, and at one port) since the last call. */
    slowStats() {
      const out = { open: slowOpen, maxOpen: slowMaxOpen, maxOpenPerPort: slowMaxOpenPerPort };
      slowMaxOpen = slowOpen;
      slowMaxOpenPerPort = 0;
      return out;
    },
    async closeSlow() {
      for (const sock of slowSockets) sock.destroy();
      await Promise.all(slowServers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      slowServers.length = 0;
    },
    async closeSilent() {
      for (const sock of silentSockets) sock.destroy();
      await Promise.all(silentServers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      silentServers.length = 0;
    },
  },
);
