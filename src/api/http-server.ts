// The API's HTTP server, made apart from the app so that main.ts can bind the port before it creates anything in
// the data dir (a start that cannot listen must leave no database, keys or bootstrap.json behind). Until the app
// attaches its listener, every request is answered 503 with the error body: the service is starting.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Config } from '../config.ts';
import { StartupError } from '../runtime/startup-error.ts';
import { errorBody } from './errors.ts';

/** A client's request headers must all arrive within this (or the request timeout, if shorter). */
export const HEADERS_TIMEOUT_MS = 10_000;

export type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

export interface ApiServer {
  readonly server: Server;
  /** Routes every request (and every `Expect` other than 100-continue) to `listener` from now on. */
  attach(listener: RequestListener): void;
  /** Answers every request from now on with a 503 and the error body (the service is stopping). */
  refuse(message: string): void;
}

export function createApiServer(config: Pick<Config, 'requestTimeoutMs' | 'publicUrl'>): ApiServer {
  // The connection closes after the answer: a client that keeps sending on a kept-alive connection would otherwise
  // hold a stopping server open (it closes once no connection is left) until it is forced to exit.
  const unavailable =
    (message: string): RequestListener =>
    (_req, res) => {
      const body = JSON.stringify(errorBody(config.publicUrl, 503, message)) + '\n';
      res.writeHead(503, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'retry-after': '1',
        connection: 'close',
      });
      res.end(body);
    };
  let current = unavailable('the service is starting; try again in a moment');
  const listener: RequestListener = (req, res) => current(req, res);
  // A client must deliver its whole request (headers and body) within the request timeout, its headers within
  // the headers timeout, or the connection ends with a 400 (the app's clientErrorHandler): a slow client cannot
  // hold a connection and a body buffer forever. Checked every second. Responses (event streams) are not limited
  // by these.
  const server = createServer(
    {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, config.requestTimeoutMs),
      connectionsCheckingInterval: 1000,
    },
    listener,
  );
  server.keepAliveTimeout = 72_000;
  // Node answers an Expect other than 100-continue with a bare 417 unless someone listens; the API ignores
  // expectations it does not know (RFC 9110 allows it) and answers the request as usual.
  server.on('checkExpectation', listener);
  return {
    server,
    attach(next) {
      current = next;
    },
    refuse(message) {
      current = unavailable(message);
    },
  };
}

/**
 * Listens on the configured host and port. A failure is a StartupError that says what to change, naming the flag
 * or variable the operator used (config.sources).
 */
export async function listenApiServer(
  api: ApiServer,
  config: Pick<Config, 'port' | 'host' | 'sources'>,
): Promise<number> {
  const { server } = api;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => {
      server.off('listening', onListening);
      reject(explainListenError(err, config));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ port: config.port, host: config.host });
  });
  const address = server.address();
  return typeof address === 'object' && address ? address.port : config.port;
}

function explainListenError(err: Error, config: Pick<Config, 'port' | 'host' | 'sources'>): Error {
  const { port, host, sources } = config;
  switch ((err as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return new StartupError(
        `port ${port} on ${host} is already in use (another Sensor Cloud, or another program): stop that program, or choose another port with ${sources.port}`,
        { cause: err },
      );
    case 'EACCES':
      return new StartupError(
        `port ${port} needs privileges this user does not have: choose a port above 1023 with ${sources.port} (and put a proxy in front if clients need port ${port})`,
        { cause: err },
      );
    case 'EADDRNOTAVAIL':
      return new StartupError(
        `${host} is not an address of this machine: set ${sources.host} to one of its addresses, 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)`,
        { cause: err },
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
      return new StartupError(
        `the host name "${host}" does not resolve to an address: set ${sources.host} to an address such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface), or to a name this machine resolves`,
        { cause: err },
      );
    default:
      return err;
  }
}
