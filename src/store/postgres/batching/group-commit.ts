// Group commit on PostgreSQL, for the transactions that may be run again (TransactionOptions.rerunnable: the event
// pipeline's and the delivery outcomes'). On this machine a round trip's client CPU (mostly the socket write) was
// the largest cost of a published event, and each separate transaction adds a BEGIN, a COMMIT and a WAL flush.
// Transactions requested while a batch is running wait and then run one after another in the next batch, inside
// one BEGIN … COMMIT on one connection, and every caller is answered after that COMMIT (as SQLite's store does,
// index.ts there). The batch reads its devices ahead in one statement and writes what its events wrote in one
// statement (write-behind.ts): four round trips for the batch, however many events it holds.
//
// PostgreSQL aborts a transaction at its first failed statement, and a savepoint per item would cost two more
// round trips each, so a batch has no savepoints:
// - an item that throws without having written anything or run a failing statement (a 404, a bad body) just
//   fails, and the batch goes on;
// - an item that throws after writing, or after a statement of its own failed, fails; the batch is rolled back
//   and each other item that had not failed runs again alone (`alone`);
// - a failure no single item caused (BEGIN, the read ahead, the write of what the items held, a deadlock) rolls
//   the batch back, and every item runs again alone, where its own failure, if it has one, reaches its caller;
// - the devices the items name are locked first, before anything else, waiting, in id order (devices.ts
//   lockDevices); an item that then reads a device it did not name and finds it held by another transaction
//   (BusyRow: the batch's repos never wait for a lock after that) runs alone after the batch, where waiting is
//   safe: a batch waiting for a lock while holding the rows of its earlier items could deadlock with another's.
//
// A batch whose devices this process has all read before runs unlocked (write-behind.ts, device-versions.ts): no
// BEGIN, no locking read, no COMMIT; its one statement is its commit. It runs again the locking way when an item
// needs more than that (NeedsLock), or when that statement finds a device changed since it was read (stale) or
// meets a deadlock. So does a batch of delivery outcomes (no devices) that only acknowledges: its connector read
// and its held writes (held-outcomes.ts) are its two statements.
import type pg from 'pg';
import type { Repos } from '../../contract/store.ts';
import { unreachable, type Watch } from '../db.ts';

/** Thrown by a batch's repos instead of waiting for a row another transaction holds. */
export class BusyRow extends Error {
  constructor() {
    super('a row this transaction must lock is held by another transaction');
  }
}

/** Thrown by an unlocked batch's repos for what needs a transaction: the batch runs again, with its devices locked. */
export class NeedsLock extends Error {
  constructor() {
    super('this batch needs a transaction, with its devices locked');
  }
}

/** An item's result in its batch; `alone`: held up by another transaction's lock, it runs again on its own. */
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown } | { alone: true };

interface Queued {
  fn: (tx: Repos) => Promise<unknown>;
  devices: readonly string[];
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface GroupCommitDeps {
  pool: pg.Pool;
  /**
   * The repos of a batch's connection: they read rows to lock without waiting (BusyRow), count into watch, and may
   * hold writes until beforeCommit.
   */
  batchRepos(
    client: pg.PoolClient,
    watch: Watch,
    unlocked: boolean,
  ): {
    repos: Repos;
    readAhead(devices: string[]): Promise<void>;
    beforeCommit(): Promise<void>;
    committed(): void;
    /** An unlocked batch found a device changed: forget the versions of its devices. */
    stale(): void;
  };
  /** Whether a batch naming these devices may run unlocked (this process holds a version of each). */
  mayRunUnlocked(devices: readonly string[]): boolean;
  /** The failure of an unlocked batch's statement when a device changed since it was read. */
  isStale(error: unknown): boolean;
  /** Runs fn as a transaction of its own (with the store's reruns). */
  alone<T>(fn: (tx: Repos) => Promise<T>): Promise<T>;
  /** A failure after which a transaction may simply run again (a deadlock, a serialization failure). */
  retryable(error: unknown): boolean;
}

/** At most this many transactions share a commit: the first caller of a batch waits for all of them. */
const MAX_BATCH = 64;

export interface GroupCommitOptions {
  /** The least time between the starts of two batches, ms (0: each starts as soon as the one before ended). */
  gapMs?: number;
  /**
   * A batch that names no devices runs unlocked too (the delivery outcomes': what they hold is one statement,
   * held-outcomes.ts); anything else it needs makes it run again locked, as for the events' batches.
   */
  unlockedWithoutDevices?: boolean;
}

export function createGroupCommit(
  deps: GroupCommitDeps,
  options: GroupCommitOptions = {},
): { run<T>(fn: (tx: Repos) => Promise<T>, devices?: readonly string[]): Promise<T>; idle(): Promise<void> } {
  async function runBatch(batch: Queued[], mayUnlock = true): Promise<void> {
    const devices = batch.flatMap((item) => item.devices);
    const unlocked =
      mayUnlock && (devices.length > 0 ? deps.mayRunUnlocked(devices) : options.unlockedWithoutDevices === true);
    let client: pg.PoolClient;
    try {
      client = await deps.pool.connect();
    } catch (error) {
      for (const item of batch) item.reject(unreachable(error, deps.pool));
      return;
    }
    const outcomes: Outcome[] = [];
    let again = false;
    let relock = false;
    let broken = false;
    let committing = false;
    try {
      if (!unlocked) await client.query('BEGIN');
      const watch: Watch = { writes: 0, failed: false };
      const { repos, readAhead, beforeCommit, committed, stale } = deps.batchRepos(client, watch, unlocked);
      await readAhead(devices);
      for (const item of batch) {
        const writes = watch.writes;
        try {
          outcomes.push({ ok: true, value: await item.fn(repos) });
        } catch (error) {
          // Not this item's failure: the whole batch runs again locked (below).
          if (error instanceof NeedsLock && unlocked) throw error;
          if (watch.failed || watch.writes !== writes) {
            if (!watch.shared && !deps.retryable(error)) outcomes.push({ ok: false, error });
            again = true;
            break;
          }
          outcomes.push(error instanceof BusyRow ? { alone: true } : { ok: false, error });
        }
      }
      if (!again && !relock && unlocked) {
        // The held writes' statement is the commit. When the server answered it with a failure, nothing of it was
        // kept; when the connection was lost, what happened is unknown (as with a COMMIT, below).
        committing = true;
        try {
          await beforeCommit();
        } catch (error) {
          if ((error as { status?: number }).status === 503) throw error;
          committing = false;
          if (deps.isStale(error) || deps.retryable(error)) {
            stale();
            relock = true;
          } else {
            again = true;
          }
        }
        if (committing) committed();
      } else if (!again && !relock) {
        await beforeCommit();
        committing = true;
        await client.query('COMMIT');
        committed();
      }
    } catch (error) {
      // A statement of the batch's own failed (BEGIN, the read ahead, the held writes, COMMIT). A COMMIT whose
      // answer was lost may have committed: its callers hear of the failure and nothing runs again.
      if (error instanceof NeedsLock && unlocked) relock = true;
      else if (!committing) again = true;
      else
        for (let i = 0; i < batch.length; i++)
          if (!(outcomes[i] && 'alone' in outcomes[i]!)) outcomes[i] = { ok: false, error: unreachable(error) };
    } finally {
      if (again && !unlocked) {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true;
        }
      }
      client.release(broken ? true : undefined);
    }
    if (relock) {
      await runBatch(batch, false);
      return;
    }
    batch.forEach((item, i) => {
      const o = outcomes[i];
      // Not reached, undone with the batch, or held up by a lock: it runs again alone. A failure stands.
      if (o === undefined || 'alone' in o || (again && o.ok)) deps.alone(item.fn).then(item.resolve, item.reject);
      else if (o.ok) item.resolve(o.value);
      else item.reject(o.error);
    });
  }

  // One batch at a time, on one connection, one statement after another: batches running side by side (measured:
  // two, by device) shared fewer commits and cost more CPU per event.
  const queued: Queued[] = [];
  let running: Promise<void> | null = null;
  const gapMs = options.gapMs ?? 0;
  let lastStart = -Infinity;

  function drain(): void {
    if (running !== null || queued.length === 0) return;
    running = (async () => {
      while (queued.length > 0) {
        // Real time: the gap is about the database's load, which only the wall can tell.
        const wait = lastStart + gapMs - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        lastStart = performance.now();
        await runBatch(queued.splice(0, MAX_BATCH));
      }
      running = null;
    })();
  }

  return {
    run<T>(fn: (tx: Repos) => Promise<T>, devices: readonly string[] = []): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queued.push({ fn, devices, resolve: resolve as (v: unknown) => void, reject });
        // Start after this turn's I/O callbacks, so the transactions they request share the first commit too.
        if (running === null && queued.length === 1) setImmediate(drain);
      });
    },
    async idle() {
      while (running !== null) await running;
    },
  };
}
