// Periodic jobs in a cluster: run by the one process that leads each (Store.cluster), by this one when it owns the
// store; and the packing of the messages processes send each other (Cluster.publish).
import type { Store } from '../contract/store.ts';

/** Whether this process should run the named periodic job's pass now. */
export function leadsJob(store: Pick<Store, 'cluster'>, job: string): Promise<boolean> {
  return store.cluster === null ? Promise.resolve(true) : store.cluster.tryLead(job);
}

/** The cluster setting that holds a value sealed under the cluster's master key (main.ts checks each start's key). */
export const MASTER_KEY_CHECK_SETTING = 'master-key-check';

/** Bytes of one message on a cluster channel (Cluster.publish); PostgreSQL refuses 8,000 and more. */
const MAX_MESSAGE_BYTES = 7_900;

/** An item of a message, encoded, with its size in UTF-8 bytes. */
export interface MessageItem {
  text: string;
  bytes: number;
}

/** Bytes of UTF-8 left for the items of a message that begins with head and ends with tail. */
export const messageRoom = (head: string, tail: string): number =>
  MAX_MESSAGE_BYTES - Buffer.byteLength(head) - Buffer.byteLength(tail);

/**
 * The fewest messages `head + items joined by commas + tail` of at most MAX_MESSAGE_BYTES each, the items in order;
 * an item too large for a message of its own is left out (the caller sends what it stands for another way).
 */
export function packMessages(head: string, tail: string, items: Iterable<MessageItem>): string[] {
  const room = messageRoom(head, tail);
  const messages: string[] = [];
  let batch: string[] = [];
  let size = 0;
  for (const { text, bytes } of items) {
    if (bytes > room) continue;
    if (batch.length > 0 && size + 1 + bytes > room) {
      messages.push(`${head}${batch.join(',')}${tail}`);
      batch = [];
      size = 0;
    }
    size += (batch.length > 0 ? 1 : 0) + bytes;
    batch.push(text);
  }
  if (batch.length > 0) messages.push(`${head}${batch.join(',')}${tail}`);
  return messages;
}
