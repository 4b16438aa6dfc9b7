// A stand-in dispatcher thread for dispatcher-thread.test.ts: acknowledges every push at once, except that a
// body containing "die" makes the thread exit with the attempts it holds unanswered.
import { parentPort } from 'node:worker_threads';

parentPort.on('message', (m) => {
  if (m.type === 'close') {
    parentPort.postMessage({ type: 'closed' });
    return;
  }
  if (m.items.some(([, , body]) => Buffer.from(body).includes('die'))) process.exit(1);
  parentPort.postMessage({
    type: 'done',
    items: m.items.map(([id]) => [
      id,
      { ok: true, reason: 'ack', status: 200, responseTimeMs: 1, message: 'HTTP 200' },
    ]),
  });
});
