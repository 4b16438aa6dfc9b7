// Runs WAL checkpoints on a thread of its own, one per request of checkpointer.ts. Plain JavaScript: workers
// do not inherit the TypeScript loader.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

const db = new Database(workerData.file);
db.pragma('busy_timeout = 1000');

parentPort.on('message', (msg) => {
  if (msg === 'stop') {
    db.close();
    parentPort.postMessage('stopped');
    return;
  }
  try {
    // PASSIVE never waits for the writer or readers; it copies what it can and fsyncs the database file.
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ log: row.log });
  } catch {
    // Busy or locked: the next round catches up.
    parentPort.postMessage({ log: 0 });
  }
});
