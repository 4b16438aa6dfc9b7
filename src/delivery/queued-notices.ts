// How the engines of a cluster hear that rows were queued due (behind a backlog, or refused a lease by the cluster's
// limit): one message on the store's channel for many rows, so an engine with free slots claims them without waiting
// for its poll. At most one message per ANNOUNCE_EVERY_MS per process: a NOTIFY takes a database-wide lock through
// its commit.
import type { Logger } from '../runtime/logger.ts';
import type { Cluster } from '../store/contract/store.ts';

export const QUEUED_CHANNEL = 'queued';
export const ANNOUNCE_EVERY_MS = 5;

export interface QueuedNotices {
  /** Tells every engine of the cluster (this one too) that rows were queued; coalesced while a message is sent. */
  announce(): void;
  /** Calls `onQueued` at each message until stopListening(); without messages (none can be heard) the poll remains. */
  listen(onQueued: () => void): void;
  stopListening(): void;
}

/** Runs `fn` after `ms` without holding the process open. Tests pass their own to run it when they choose. */
export type Later = (ms: number, fn: () => void) => void;

const later: Later = (ms, fn) => void setTimeout(fn, ms).unref();

export function createQueuedNotices(
  cluster: Pick<Cluster, 'publish' | 'subscribe'>,
  log: Logger,
  after: Later = later,
): QueuedNotices {
  let pending = false;
  let sending = false;
  let listening = false;
  let unlisten: (() => void) | null = null;

  const send = (): void => {
    sending = true;
    pending = false;
    cluster
      .publish(QUEUED_CHANNEL, [''])
      .catch((err: unknown) => log.debug({ err }, 'delivery engine: announcing queued rows failed; the others poll'))
      .finally(() =>
        after(ANNOUNCE_EVERY_MS, () => {
          sending = false;
          if (pending) send();
        }),
      );
  };

  return {
    announce() {
      if (sending) pending = true;
      else send();
    },
    listen(onQueued) {
      listening = true;
      void cluster
        .subscribe(QUEUED_CHANNEL, () => onQueued())
        .then(
          (stop) => {
            if (listening) unlisten = stop;
            else stop();
          },
          (err: unknown) =>
            log.warn({ err }, 'delivery engine: cannot listen for rows queued by other processes; polling only'),
        );
    },
    stopListening() {
      listening = false;
      unlisten?.();
      unlisten = null;
    },
  };
}
