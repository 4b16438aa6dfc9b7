// Runs inside the dispatcher thread (see dispatcher-thread.ts): the in-process Dispatcher, fed by messages.
// Outcomes that finish in the same turn of this thread's event loop go back in one message.
import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../runtime/clock.ts';
import { createIdGenerator } from '../runtime/ids.ts';
import type { Logger } from '../runtime/logger.ts';
import { systemRandom } from '../runtime/random.ts';
import { createDispatcher } from './dispatcher.ts';
import type { DispatcherWorkerData, FromWorker, ToWorker } from './dispatcher-thread.ts';
import type { AttemptOutcome } from './types.ts';

const port = parentPort!;
const data = workerData as DispatcherWorkerData;

// The transport only warns (an unreadable NODE_EXTRA_CA_CERTS); the main thread's logger writes it.
const forward = (level: 'warn' | 'error') => (obj: unknown, msg?: string) =>
  port.postMessage({
    type: 'log',
    level,
    obj: typeof obj === 'object' && obj !== null ? { ...obj } : { value: obj },
    msg: msg ?? '',
  } satisfies FromWorker);
const ignore = () => undefined;
const logger = {
  warn: forward('warn'),
  error: forward('error'),
  info: ignore,
  debug: ignore,
  trace: ignore,
  fatal: forward('error'),
} as unknown as Logger;

const dispatcher = createDispatcher({
  config: { caFile: data.caFile, allowPrivateEndpoints: data.allowPrivateEndpoints },
  clock: systemClock,
  // jti values only need to be unique; this generator has its own random machine bytes.
  ids: createIdGenerator(systemClock, systemRandom),
  logger,
  version: data.version,
  timeoutMs: data.timeoutMs,
  connectionsPerOrigin: data.connectionsPerOrigin,
  maxInFlight: data.maxInFlight,
  extraCaFile: data.extraCaFile,
});

let done: Array<[number, AttemptOutcome]> = [];
let flushScheduled = false;
// Sends not yet settled, and who waits for them to reach 0 (a close). A counter, not a set of promises: this
// runs for every push, and each tracked promise cost two more promises and closures to collect.
let inFlight = 0;
let idle: (() => void) | null = null;

function flushDone(): void {
  flushScheduled = false;
  if (done.length === 0) return;
  const items = done;
  done = [];
  port.postMessage({ type: 'done', items } satisfies FromWorker);
}

// Each outcome goes as it is: the dispatcher leaves out what is empty (no snippet without body bytes, no truncation
// flag unless set), and a snippet is a buffer of its own, so its clone is its own bytes (at most 1 KiB), never a
// shared pool or a socket's read buffer behind a view.
function finished(id: number, outcome: AttemptOutcome): void {
  done.push([id, outcome]);
  if (--inFlight === 0 && idle !== null) idle();
  if (flushScheduled) return;
  flushScheduled = true;
  setImmediate(flushDone);
}

port.on('message', (m: ToWorker) => {
  if (m.type === 'send') {
    for (const [id, target, bytes] of m.items) {
      const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      inFlight++;
      // send never rejects: every failure is an outcome.
      void dispatcher.send(target, body).then((outcome) => finished(id, outcome));
    }
  } else if (m.type === 'close') {
    void (async () => {
      if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
      await dispatcher.close();
      // The last outcomes leave before the message that says so.
      flushDone();
      port.postMessage({ type: 'closed' } satisfies FromWorker);
    })();
  }
});
