// Batch requests (label batches, transfers, member batches) run in one transaction, which holds the store's single
// writer: their size is bounded so that one request cannot hold it for seconds.
import { badRequest } from './errors.ts';

export const MAX_BATCH_ITEMS = 1000;

/** 400 when the list named `field` holds more than MAX_BATCH_ITEMS items. */
export function checkBatchSize(items: readonly unknown[], field: string): void {
  if (items.length > MAX_BATCH_ITEMS)
    throw badRequest(`${field} may hold at most ${MAX_BATCH_ITEMS} items, got ${items.length}`);
}
