// The Dispatcher on a worker thread of its own. Signing, TLS and the HTTP exchange of every push took about a
// sixth of the event loop under load, next to the API and SQLite, which must stay on the main thread (one
// writer connection). The worker runs the very same transport (dispatcher.ts: SSRF guard, trust store, pooled
// keep-alive connections); this side only forwards attempts to it and outcomes back, in batches per turn of
// the event loop, so one message crosses the thread boundary for many pushes.
//
// The worker keeps its own wall clock: an outcome's responseTimeMs is measured there, exactly as in process.
// An outcome crosses as it is: the fields it leaves out (no body snippet for an empty answer or a failure, no
// truncation flag unless set) cost nothing, and a snippet crosses as its own bytes (at most 1 KiB).
//
// If the worker dies, every attempt it held fails like a dropped connection (its row is retried by the
// engine), and the next send starts a new worker. A worker that dies within a second of starting (one that
// cannot start at all) is not restarted at once: sends fail at once instead, for 1 s, then 2, 4 … up to 30 s,
// so a broken install fails every push with a clear reason instead of spawning a thread per batch.
import { Worker } from 'node:worker_threads';
import { systemClock, type Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { outcomeClassOf } from './classify.ts';
import { packageVersion, readTrustFiles, type DispatcherOptions } from './dispatcher.ts';
import type { AttemptOutcome, Dispatcher, PushTarget } from './types.ts';

/** What the worker gets at start; everything else it builds itself (dispatcher-host.ts). */
export interface DispatcherWorkerData {
  caFile: string | null;
  allowPrivateEndpoints: string[];
  extraCaFile: string | null;
  version: string;
  timeoutMs?: number;
  connectionsPerOrigin?: number;
  maxInFlight?: number;
}

/** main → worker */
export type ToWorker =
  | { type: 'send'; items: Array<[id: number, target: PushTarget, body: Uint8Array]> }
  | { type: 'close' };

/** worker → main */
export type FromWorker =
  | { type: 'done'; items: Array<[id: number, outcome: AttemptOutcome]> }
  | { type: 'log'; level: 'warn' | 'error'; obj: Record<string, unknown>; msg: string }
  | { type: 'closed' };

export type ThreadedDispatcherOptions = Pick<
  DispatcherOptions,
  'config' | 'logger' | 'version' | 'timeoutMs' | 'connectionsPerOrigin' | 'maxInFlight' | 'extraCaFile'
> & {
  /** For the restart backoff after a worker dies young. Default: the system clock. */
  clock?: Clock;
  /** The worker's entry; tests substitute one that misbehaves. Default: DISPATCHER_HOST. */
  workerUrl?: URL;
};

// The thread's entry: the compiled host itself (dist/), or, run from the TypeScript sources, a plain-JavaScript
// entry that loads the host through tsx (dispatcher-worker.mjs).
const DISPATCHER_HOST = import.meta.url.endsWith('.ts')
  ? new URL('./dispatcher-worker.mjs', import.meta.url)
  : new URL('./dispatcher-host.js', import.meta.url);

const failed = (message: string): AttemptOutcome => ({
  ok: false,
  reason: 'connection',
  outcome: 'OTHER',
  responseTimeMs: 0,
  message: `connection: ${message}`,
});

export function createThreadedDispatcher(options: ThreadedDispatcherOptions): Dispatcher {
  const logger: Logger = options.logger;
  const extraCaFile =
    options.extraCaFile !== undefined ? options.extraCaFile : (process.env.NODE_EXTRA_CA_CERTS ?? null);
  // Checked here so that a bad SENSORCLOUD_CA_FILE fails the start (on this thread), not the first push.
  readTrustFiles(options.config.caFile, extraCaFile, logger);
  const workerUrl = options.workerUrl ?? DISPATCHER_HOST;
  const workerData: DispatcherWorkerData = {
    caFile: options.config.caFile,
    allowPrivateEndpoints: [...options.config.allowPrivateEndpoints],
    extraCaFile,
    version: options.version ?? packageVersion(),
    timeoutMs: options.timeoutMs,
    connectionsPerOrigin: options.connectionsPerOrigin,
    maxInFlight: options.maxInFlight,
  };

  let worker: Worker | null = null;
  let nextId = 1;
  const waiting = new Map<number, (outcome: AttemptOutcome) => void>();
  let outbox: Array<[number, PushTarget, Uint8Array]> = [];
  let flushScheduled = false;
  let closed = false;
  const clock = options.clock ?? systemClock;
  let startedAtMs = 0;
  let backoffMs = 0;
  let restartAtMs = 0;

  function settle(id: number, outcome: AttemptOutcome): void {
    const resolve = waiting.get(id);
    waiting.delete(id);
    resolve?.(outcome);
  }

  /**
   * An outcome as the worker sent it, made whole again: a structured clone turns a Buffer into a plain Uint8Array
   * (wrapped again here, no copy), and an outcome sent without its class gets the one its reason gives.
   */
  function arrived(outcome: AttemptOutcome): AttemptOutcome {
    const bytes: Uint8Array | undefined = outcome.responseBody;
    if (bytes !== undefined && !Buffer.isBuffer(bytes))
      outcome.responseBody = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (outcome.outcome === undefined) outcome.outcome = outcomeClassOf(outcome);
    return outcome;
  }

  function failAll(message: string): void {
    const all = [...waiting.values()];
    waiting.clear();
    for (const resolve of all) resolve(failed(message));
  }

  function start(): Worker {
    startedAtMs = clock.now();
    // A worker's default young generation let its heap grow by ~100 MB under fan-out load (memory benchmark:
    // 330 MB peak, over the 300 MB goal); 8 MB keeps it near 50 MB with no measurable cost in throughput.
    const w = new Worker(workerUrl, {
      workerData,
      resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 256 },
    });
    // Never keeps the process alive by itself; the server and the engine do.
    w.unref();
    w.on('message', (m: FromWorker) => {
      if (m.type === 'done') {
        for (const [id, outcome] of m.items) settle(id, arrived(outcome));
      } else if (m.type === 'log') {
        logger[m.level](m.obj, m.msg);
      }
    });
    w.on('error', (err) => {
      logger.error(
        { err },
        'delivery dispatcher thread failed; its attempts count as failed and a new thread takes over',
      );
    });
    w.on('exit', () => {
      if (worker === w) worker = null;
      if (!closed) {
        const lived = clock.now() - startedAtMs;
        backoffMs = lived < 1000 ? Math.min(30_000, Math.max(1000, backoffMs * 2)) : 0;
        restartAtMs = clock.now() + backoffMs;
      }
      failAll('the dispatcher thread stopped during the attempt');
    });
    return w;
  }

  function flush(): void {
    flushScheduled = false;
    if (outbox.length === 0) return;
    const items = outbox;
    outbox = [];
    if (!worker && clock.now() < restartAtMs) {
      const message = `the dispatcher thread failed right after it started; the next one starts in ${Math.ceil((restartAtMs - clock.now()) / 1000)} s`;
      for (const [id] of items) settle(id, failed(message));
      return;
    }
    worker ??= start();
    worker.postMessage({ type: 'send', items } satisfies ToWorker);
  }

  return {
    send(target, body) {
      if (closed) return Promise.resolve(failed('the dispatcher is closed'));
      return new Promise<AttemptOutcome>((resolve) => {
        const id = nextId++;
        waiting.set(id, resolve);
        // Only what the transport reads crosses the boundary (the target may carry more).
        outbox.push([
          id,
          {
            url: target.url,
            headers: target.headers,
            signatureSecret: target.signatureSecret,
            previousSignatureSecret: target.previousSignatureSecret,
            probe: target.probe,
            trigger: target.trigger,
            alertTransition: target.alertTransition,
          },
          body,
        ]);
        if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(flush);
        }
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      flush();
      const w = worker;
      if (!w) return;
      // The worker lets attempts in flight finish (their outcomes arrive first), then closes its pools.
      await new Promise<void>((resolve) => {
        w.on('message', (m: FromWorker) => {
          if (m.type === 'closed')
            void w.terminate().then(
              () => resolve(),
              () => resolve(),
            );
        });
        w.once('exit', () => resolve());
        w.postMessage({ type: 'close' } satisfies ToWorker);
      });
      failAll('the dispatcher is closed');
    },
  };
}
