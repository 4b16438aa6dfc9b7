// Runs WAL checkpoints on a thread of its own (see checkpointer.ts). Plain JavaScript: workers do not inherit
// the TypeScript loader.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

const db = new Database(workerData.file);
db.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  try {
    // PASSIVE never waits for the writer or readers; it copies what it can and fsyncs the database file.
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or locked: the next round catches up.
  }
}, workerData.intervalMs);

parentPort.on('message', (msg) => {
  if (msg !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.postMessage('stopped');
});
