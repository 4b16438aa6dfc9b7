// A request refused for its body's size is answered once its body has arrived, read and dropped (never kept). Answered
// at once, the connection closed under a client still sending (Node closes a connection whose request body was not
// read), and the client saw "write EPIPE" or "connection reset" instead of the 400 and its message. A body declared
// or found larger than DRAIN_LIMIT_BYTES is not waited for: the answer goes at once and the connection closes. The
// server's request timeout bounds a slow body as it bounds any other.
import type { IncomingMessage } from 'node:http';
import { BODY_LIMIT_BYTES } from './body.ts';

/** The most a refused body is read (and dropped) before the answer: 8 times the API's body limit. */
const DRAIN_LIMIT_BYTES = 8 * BODY_LIMIT_BYTES;

/** Resolves once the request's body has ended, its connection closed, or more than `limit` bytes were dropped. */
export function drainBody(req: IncomingMessage, limit = DRAIN_LIMIT_BYTES): Promise<void> {
  if (req.complete || req.destroyed || Number(req.headers['content-length']) > limit) return Promise.resolve();
  return new Promise((resolve) => {
    let dropped = 0;
    const done = () => {
      req.off('data', onData);
      req.off('end', done);
      req.off('close', done);
      req.off('error', done);
      resolve();
    };
    const onData = (chunk: Buffer | string) => {
      dropped += chunk.length;
      if (dropped > limit) done();
    };
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.once('error', done);
    req.resume();
  });
}
