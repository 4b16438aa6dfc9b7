// Growing the delivery queue of a stopped service inside its PostgreSQL database, for the backlog figures: the
// rows queued through the real path are made due now with no lease, then copied (INSERT … SELECT, doubling) until
// the queue holds `target` rows. The planner's statistics are refreshed afterwards, as autovacuum would.
import pg from 'pg';
import { Skip } from './api.ts';

export interface PostgresQueueSeed {
  realRows: number;
  copiedRows: number;
  /** Bytes of the deliveries table with its indexes and TOAST. */
  queueBytes: number;
}

export async function growPostgresQueue(url: string, target: number, nowMicros: number): Promise<PostgresQueueSeed> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const count = async () =>
      Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM deliveries')).rows[0]!.n);
    const realRows = await count();
    if (realRows === 0) throw new Skip('the service queued nothing while the receiver was down');
    await client.query('UPDATE deliveries SET due_time = $1, lease_until = NULL', [nowMicros]);
    let rows = realRows;
    while (rows < target) {
      const add = Math.min(rows, target - rows);
      await client.query(
        `INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, attempts, lease_until)
         SELECT connector_id, event_id, body, enqueue_time, due_time, attempts, NULL FROM deliveries LIMIT $1`,
        [add],
      );
      rows += add;
    }
    await client.query('VACUUM ANALYZE deliveries');
    const queueBytes = Number(
      (await client.query<{ n: string }>("SELECT pg_total_relation_size('deliveries') AS n")).rows[0]!.n,
    );
    return { realRows, copiedRows: (await count()) - realRows, queueBytes };
  } finally {
    await client.end();
  }
}
