// Periodic jobs in a cluster (retention, heartbeats, the queue's expiry and vacuum, metrics pruning, the demo): each
// is led by one process at a time, the one holding the job's advisory lock on its cluster connection, and moves to
// another process when that one dies or loses its connection. Two stores on one database stand for two processes;
// a process dying is its sessions ended by the server (what PostgreSQL sees of a SIGKILL or a machine lost).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPostgresStore, type PostgresStore } from '../../src/store/postgres/index.ts';
import { capturedLog } from '../helpers/captured-log.ts';
import { createTestDatabase, runAlone } from '../helpers/postgres.ts';
import { until } from '../helpers/until.ts';

describe('postgres: one leader per periodic job', () => {
  let db: { url: string; drop(): Promise<void> };
  let a: PostgresStore;
  let b: PostgresStore | null;
  const logA = capturedLog(['warn', 'info']);
  before(async () => {
    db = await createTestDatabase();
    a = await createPostgresStore(db.url, { applicationName: 'process-a', logger: logA.logger });
    b = await createPostgresStore(db.url, { applicationName: 'process-b' });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  it('leads each job in one process at a time; the job moves when its leader dies, and the leader that comes back does not take it again', async () => {
    assert.equal(await a.cluster!.tryLead('retention'), true);
    assert.equal(await b!.cluster!.tryLead('retention'), false, 'held by the other process');
    assert.equal(await a.cluster!.tryLead('retention'), true, 'kept by its leader');
    assert.equal(await b!.cluster!.tryLead('heartbeats'), true, 'each job has a leader of its own');
    assert.equal(await a.cluster!.tryLead('heartbeats'), false);

    // Process A's sessions end, as when it is killed: its jobs are free at once for B.
    await runAlone(
      db.url,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'process-a'",
    );
    const lost = 'database: the cluster connection was lost; periodic jobs are given up until it is back';
    await until('A heard that its connection was lost', async () => logA.lines.some((l) => l.message === lost));
    await until('B leads the job A led', () => b!.cluster!.tryLead('retention'));
    assert.equal(await b!.cluster!.tryLead('heartbeats'), true, 'and keeps its own');

    // A (a process that lost its connection and lives on) gives up what it led, and does not lead it again when its
    // connection is back: B holds it. A job no one leads, A can lead once it is back.
    assert.equal(await a.cluster!.tryLead('retention'), false);
    await until('A reconnected', () => a.cluster!.tryLead('expiry'));
    assert.equal(await a.cluster!.tryLead('retention'), false);
    assert.equal(await b!.cluster!.tryLead('expiry'), false);
    assert.ok(logA.lines.some((l) => l.message === 'database: the cluster connection is back; periodic jobs resume'));

    // B closes (a process stopped): A takes its jobs over at the next pass.
    await b!.close();
    b = null;
    await until(
      'A leads the jobs B led',
      async () => (await a.cluster!.tryLead('retention')) && (await a.cluster!.tryLead('heartbeats')),
    );
  });
});
