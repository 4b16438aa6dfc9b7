// WAL checkpoints off the main thread. A checkpoint copies the WAL into the database file and fsyncs it;
// SQLite's automatic checkpoint does that inside whichever COMMIT crosses the threshold, on the event loop
// (measured: ~65 µs of a ~104 µs commit on this machine). With the automatic checkpoint off, a worker thread
// with its own connection checkpoints every interval instead. Commits stay crash-safe: in WAL mode with
// synchronous=NORMAL, a committed transaction is in the WAL before COMMIT returns.
//
// SQLite starts the WAL over from its beginning only when a write begins after every frame was checkpointed.
// Under a steady stream of commits a checkpoint running beside the writer never gets there (the writer appends
// while it copies), and the WAL grew without bound: 2 GB in 30 s of the end-to-end benchmark, every write
// landing on fresh file blocks. So once the WAL holds `restartFrames` frames, one round runs with the store's
// lock held: writers wait (their transactions queue and then share a commit), the checkpoint copies the few
// frames written since the previous round, and the next write starts the WAL over.
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Lock } from '../db.ts';

export interface Checkpointer {
  /** Rounds completed so far. */
  readonly rounds: number;
  stop(): Promise<void>;
}

export interface CheckpointOptions {
  /** Pause between checkpoint rounds. */
  intervalMs?: number;
  /** WAL length (frames of one page each) from which a round holds the writers back to start the WAL over. */
  restartFrames?: number;
}

/** Frames in the WAL, as SQLite's `wal_checkpoint` pragma reports them. */
interface Progress {
  log: number;
}

/** After a restart the WAL file is cut back to this size, so a burst does not keep its disk space. */
const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

export function startCheckpointer(
  db: Database.Database,
  file: string,
  lock: Lock,
  options: CheckpointOptions = {},
): Checkpointer {
  const { intervalMs = 200, restartFrames = 4096 } = options;
  db.pragma('wal_autocheckpoint = 0');
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
  const worker = new Worker(new URL('./checkpoint-worker.mjs', import.meta.url), { workerData: { file } });
  worker.unref();

  let exited = false;
  let answer: ((p: Progress | null) => void) | null = null;
  worker.on('message', (msg: Progress | 'stopped') => {
    if (msg === 'stopped') return;
    const a = answer;
    answer = null;
    a?.(msg);
  });
  const gone = () => {
    exited = true;
    const a = answer;
    answer = null;
    a?.(null);
  };
  worker.once('error', gone);
  worker.once('exit', gone);

  const checkpoint = (): Promise<Progress | null> => {
    if (exited) return Promise.resolve(null);
    return new Promise((resolve) => {
      answer = resolve;
      worker.postMessage('checkpoint');
    });
  };

  let stopping = false;
  let timer: NodeJS.Timeout | null = null;
  let current: Promise<void> = Promise.resolve();
  let rounds = 0;

  async function round(): Promise<void> {
    const p = await checkpoint();
    if (p && p.log >= restartFrames && !stopping) {
      // Writers append while a round copies, so the locked round copies what the free round before it left
      // behind. Two more free rounds first leave it milliseconds' worth, not a round's: at saturation writers
      // waited 7.9 ms per restart on average (up to 16), 2.0 ms with these.
      for (let i = 0; i < 2 && !stopping; i++) await checkpoint();
      await lock.acquire();
      try {
        await checkpoint();
      } finally {
        lock.release();
      }
    }
  }

  const schedule = () => {
    if (stopping || exited) return;
    timer = setTimeout(() => {
      current = round().finally(() => {
        rounds++;
        schedule();
      });
    }, intervalMs);
    timer.unref();
  };
  schedule();

  let stopped: Promise<void> | null = null;
  return {
    get rounds() {
      return rounds;
    },
    /** Ends the rounds and the worker; call it without holding the store's lock (a round may wait for it). */
    stop() {
      stopped ??= (async () => {
        stopping = true;
        if (timer) clearTimeout(timer);
        await current;
        if (exited) return;
        await new Promise<void>((resolve) => {
          const done = () => resolve();
          worker.once('message', () => void worker.terminate().then(done, done));
          worker.once('exit', done);
          worker.postMessage('stop');
        });
      })();
      return stopped;
    },
  };
}
