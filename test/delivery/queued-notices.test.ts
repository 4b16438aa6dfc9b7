// The notices between the engines of a cluster alone (queued-notices.ts), over a scripted channel: announcements
// coalesced while one is sent and spaced ANNOUNCE_EVERY_MS apart, a failed one not stopping the next, and listening
// that ends with stopListening, even when the subscription comes after.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ANNOUNCE_EVERY_MS,
  createQueuedNotices,
  QUEUED_CHANNEL,
  type Later,
} from '../../src/delivery/queued-notices.ts';
import type { Logger } from '../../src/runtime/logger.ts';

/** A channel whose sends and subscriptions settle when the test says. */
function scriptedCluster() {
  const sends: Array<{ channel: string; settle: (err?: Error) => void }> = [];
  const subscriptions: Array<{
    channel: string;
    fn: (payload: string) => void;
    settle: (err?: Error) => void;
    stopped: boolean;
  }> = [];
  return {
    sends,
    subscriptions,
    publish(channel: string): Promise<void> {
      return new Promise((resolve, reject) =>
        sends.push({ channel, settle: (err) => (err ? reject(err) : resolve()) }),
      );
    },
    subscribe(channel: string, fn: (payload: string) => void): Promise<() => void> {
      return new Promise((resolve, reject) => {
        const s = {
          channel,
          fn,
          stopped: false,
          settle: (err?: Error) => (err ? reject(err) : resolve(() => (s.stopped = true))),
        };
        subscriptions.push(s);
      });
    },
  };
}

/** Timers the test runs by hand. */
function handTimers() {
  const due: Array<{ ms: number; fn: () => void }> = [];
  const after: Later = (ms, fn) => void due.push({ ms, fn });
  return { due, after, run: () => due.shift()!.fn() };
}

function loggerKeeping(lines: string[]): Logger {
  const keep = (level: string) => (_fields: object, msg: string) => void lines.push(`${level} ${msg}`);
  return { debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') } as unknown as Logger;
}

/** Lets promise callbacks run. */
const turn = () => new Promise((r) => setImmediate(r));

describe('queued notices', () => {
  it('announcements made while one is sent become one more, sent ANNOUNCE_EVERY_MS after the first ended', async () => {
    const cluster = scriptedCluster();
    const timers = handTimers();
    const notices = createQueuedNotices(cluster, loggerKeeping([]), timers.after);
    notices.announce();
    notices.announce();
    notices.announce();
    assert.deepEqual(
      cluster.sends.map((s) => s.channel),
      [QUEUED_CHANNEL],
      'one message on the way',
    );
    cluster.sends[0]!.settle();
    await turn();
    assert.deepEqual(
      timers.due.map((t) => t.ms),
      [ANNOUNCE_EVERY_MS],
    );
    notices.announce(); // still within the spacing
    assert.equal(cluster.sends.length, 1);
    timers.run();
    assert.equal(cluster.sends.length, 2, 'the announcements made meanwhile, in one message');
    cluster.sends[1]!.settle();
    await turn();
    timers.run();
    assert.equal(cluster.sends.length, 2, 'nothing announced meanwhile: nothing more');
    notices.announce();
    assert.equal(cluster.sends.length, 3, 'idle: sent at once');
  });

  it('a message that fails is logged at debug, and the next announcement is sent all the same', async () => {
    const cluster = scriptedCluster();
    const timers = handTimers();
    const lines: string[] = [];
    const notices = createQueuedNotices(cluster, loggerKeeping(lines), timers.after);
    notices.announce();
    cluster.sends[0]!.settle(new Error('connection lost'));
    await turn();
    assert.deepEqual(lines, ['debug delivery engine: announcing queued rows failed; the others poll']);
    timers.run();
    notices.announce();
    assert.equal(cluster.sends.length, 2);
  });

  it('calls back at every message heard until stopListening', async () => {
    const cluster = scriptedCluster();
    const notices = createQueuedNotices(cluster, loggerKeeping([]));
    let heard = 0;
    notices.listen(() => heard++);
    const sub = cluster.subscriptions[0]!;
    assert.equal(sub.channel, QUEUED_CHANNEL);
    sub.settle();
    await turn();
    sub.fn('');
    sub.fn('');
    assert.equal(heard, 2);
    notices.stopListening();
    assert.equal(sub.stopped, true);
  });

  it('a subscription that comes after stopListening is ended at once', async () => {
    const cluster = scriptedCluster();
    const notices = createQueuedNotices(cluster, loggerKeeping([]));
    notices.listen(() => undefined);
    notices.stopListening();
    cluster.subscriptions[0]!.settle();
    await turn();
    assert.equal(cluster.subscriptions[0]!.stopped, true);
  });

  it('a subscription refused is a warning: the engine polls only', async () => {
    const cluster = scriptedCluster();
    const lines: string[] = [];
    const notices = createQueuedNotices(cluster, loggerKeeping(lines));
    notices.listen(() => undefined);
    cluster.subscriptions[0]!.settle(new Error('no listen connection'));
    await turn();
    assert.deepEqual(lines, ['warn delivery engine: cannot listen for rows queued by other processes; polling only']);
    notices.stopListening();
  });
});
