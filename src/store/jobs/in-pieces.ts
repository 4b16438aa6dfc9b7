// A long deletion (a connector's queue, a device's history) as a run of short transactions instead of one long one.
import type { Repos, Store } from '../contract/store.ts';

/**
 * Runs `piece` in a transaction of its own until one removes nothing, and returns how many rows they removed. The
 * event loop gets a turn between two pieces, so the writes waiting for the writer (on SQLite: everything, since the
 * writer runs on the event loop) go between them: one statement for a million rows held SQLite 0.7-1 s.
 */
export async function inPieces(store: Store, piece: (tx: Repos) => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await store.transaction(piece);
    // Until a piece finds nothing, not until one comes short: a row that moved meanwhile may be left for the next.
    if (n === 0) return total;
    total += n;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
