// A loopback HTTPS receiver for delivery tests: records every request byte for byte and answers as told (status,
// delay, Retry-After, redirect, never answer, drop the connection). Fault injection lives here, not in the service.
import { once } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { testTls } from './tls.ts';

export interface ReceivedRequest {
  method: string;
  /** Path and query as sent. */
  path: string;
  /** Lower-cased names (node's parsed form). */
  headers: IncomingHttpHeaders;
  /** Names in their original case, alternating name/value. */
  rawHeaders: string[];
  /** The raw body bytes as received. */
  body: Buffer;
  /** Wall-clock ms when the body was complete. */
  receivedAt: number;
  /** performance.now() when the body was complete, and when the answer was written (unset until then). */
  arrivedAt: number;
  answeredAt?: number;
}

export interface Reply {
  /** Default 200. */
  status?: number;
  /** Wait this long before answering, in ms. */
  delayMs?: number;
  /** A Retry-After header value (seconds or an HTTP date). */
  retryAfter?: string;
  /** A Location header (use with a 3xx status). */
  location?: string;
  headers?: Record<string, string>;
  /** Response body; default empty. */
  body?: string | Buffer;
  /** Never answer: hold the socket open until the receiver closes. */
  hang?: boolean;
  /** Destroy the connection without answering. */
  destroy?: boolean;
  /** Send the status line, headers and the start of `body`, then never finish the body. */
  stallBody?: boolean;
}

export type Behaviour = Reply | ((request: ReceivedRequest, index: number) => Reply);

export interface ReceiverOptions {
  /** Which certificate to serve: signed by the test CA (default), signed for another host, or self-signed. */
  cert?: 'trusted' | 'wrong-host' | 'self-signed';
  /** Listen address; default 127.0.0.1. */
  host?: string;
  /** How to answer; default 200 with an empty body. */
  reply?: Behaviour;
}

export interface Receiver {
  /** `https://<host>:<port>/hook` */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** TCP connections accepted so far (before TLS): 0 proves the guard refused without connecting. */
  readonly connections: number;
  /** Changes how later requests are answered. */
  reply(behaviour: Behaviour): void;
  /** Answers the next requests with these replies, in order, then falls back to the behaviour. */
  replyOnce(...replies: Reply[]): void;
  /** Resolves once `n` requests have arrived; rejects after `timeoutMs` (default 5000). */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const tls = testTls();
  const pair =
    options.cert === 'self-signed' ? tls.selfSigned : options.cert === 'wrong-host' ? tls.wrongHost : tls.server;
  const host = options.host ?? '127.0.0.1';
  let behaviour: Behaviour = options.reply ?? {};
  const queued: Reply[] = [];
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();
  let connections = 0;

  const server: Server = createServer({ key: pair.key, cert: pair.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const record: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
        arrivedAt: performance.now(),
      };
      const index = requests.length;
      requests.push(record);
      for (const wake of waiters) wake();
      const reply = queued.shift() ?? (typeof behaviour === 'function' ? behaviour(record, index) : behaviour);
      const answer = (): void => {
        record.answeredAt = performance.now();
        if (reply.destroy) {
          req.socket.destroy();
          return;
        }
        const headers: Record<string, string> = { ...reply.headers };
        if (reply.retryAfter !== undefined) headers['Retry-After'] = reply.retryAfter;
        if (reply.location !== undefined) headers.Location = reply.location;
        res.writeHead(reply.status ?? 200, headers);
        if (reply.stallBody) res.write(reply.body ?? 'partial');
        else res.end(reply.body ?? '');
      };
      if (reply.hang) return;
      if (reply.delayMs) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer();
        }, reply.delayMs);
        timers.add(timer);
      } else {
        answer();
      }
    });
  });
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', () => undefined);
  server.listen(0, host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `https://${urlHost}:${port}/hook`,
    port,
    requests,
    get connections() {
      return connections;
    },
    reply(next) {
      behaviour = next;
    },
    replyOnce(...replies) {
      queued.push(...replies);
    },
    waitFor(n, timeoutMs = 5000) {
      if (requests.length >= n) return Promise.resolve(requests.slice());
      return new Promise((resolve, reject) => {
        const wake = (): void => {
          if (requests.length < n) return;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(requests.slice());
        };
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`receiver: expected ${n} requests within ${timeoutMs} ms, got ${requests.length}`));
        }, timeoutMs);
        waiters.add(wake);
      });
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const socket of sockets) socket.destroy();
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}
