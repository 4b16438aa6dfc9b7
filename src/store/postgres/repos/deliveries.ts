// The delivery queue on PostgreSQL, shared by every process. A row is waiting (lease_until NULL, due at due_time)
// or leased (until lease_until; due_time is then the lease end, as on SQLite), so a row whose process died
// mid-attempt becomes due again by itself when its lease ends. Claims read a partial index of the waiting rows and
// the index of the leased ones; claims of one connector, and writes of rows queued leased, take the connector's
// claim lock, so the cluster-wide per-connector limit holds (both in migration 003). The SQL functions called here
// are in ../functions/, one file each (named at each call), with what each does and why.
import {
  DEFERRED_DUE,
  type DeliveryRecord,
  type DeliveryRepo,
  type InFlightCap,
  type NewDelivery,
} from '../../contract/connector-repos.ts';
import { DISCARDED, EXPIRED, RETRYING, triggerCode } from '../../sql/delivery-log-rows.ts';
import { BODY_JSON } from './delivery-log.ts';
import { withDeliveryDefaults } from '../../contract/defaults.ts';
import type { Sql } from '../db.ts';
import { createConnectorMetricRepo } from './connector-metrics.ts';
import { HeldOutcomes } from '../batching/held-outcomes.ts';
import { packedBytes, PackedValues } from '../batching/packed-values.ts';
import { toDelivery, toSync, type DeliveryRow, type SyncRow } from '../../sql/rows.ts';

/**
 * The CTEs that queue rows (ending in `dl`, which returns each new row's id and whether it is leased), their parameters
 * from $p on (queueColumns). ORDER BY ord makes the ids follow the input order (the sequence is drawn row by row as the
 * rows arrive), so the ids sorted ascending are the rows' ids in order. With `capped`, rows queued leased under
 * NewDelivery.leaseIf first take their connectors' claim locks and count what is in flight (sensorcloud_lock_in_flight,
 * ../functions/sensorcloud_lock_in_flight.sql); a row whose lease does not fit, or whose connector has a row due, is
 * queued due at its enqueue time instead. The rank counts the rows of a connector in this statement that ask for a
 * lease under a cap. The bodies are in the packed parameter $packed (packed-values.ts). `after`: a CTE of the statement
 * whose locks must be taken before the connectors' (write-behind.ts).
 */
export function queueRowsSql(p: number, packed: number, capped: boolean, after?: string): string {
  const u = `unnest($${p}::text[], $${p + 1}::text[], $${p + 2}::int[], $${p + 3}::int[], $${p + 4}::bigint[], $${p + 5}::bigint[], $${p + 6}::bigint[], $${p + 7}::int[], $${p + 8}::int[])
      WITH ORDINALITY AS u(connector_id, event_id, body_start, body_length, enqueue_time, due_time, lease_until, cap_max, cap_hanging, ord)`;
  const body = packedBytes(packed, 'body_start', 'body_length');
  if (!capped) {
    return `dl AS (
    INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, lease_until)
    SELECT connector_id, event_id, ${body}, enqueue_time, due_time, lease_until FROM ${u}
    ORDER BY ord
    RETURNING id, lease_until IS NOT NULL AS leased)`;
  }
  return `flight AS (
    SELECT f.* FROM ${after ? `${after}, LATERAL ` : ''}sensorcloud_lock_in_flight($${p + 9}::text[], $${p + 10}::bigint[], $${p + 11}::bigint[], $${p + 12}::bigint[], $${p + 13}::bigint[]) AS f
  ), ranked AS (
    SELECT u.*, count(*) FILTER (WHERE u.cap_max IS NOT NULL AND u.lease_until IS NOT NULL) OVER (PARTITION BY u.connector_id ORDER BY u.ord) AS rank
    FROM ${u}
  ), decided AS (
    SELECT r.*, r.lease_until IS NOT NULL AND (r.cap_max IS NULL
      OR (NOT f.due AND f.n + r.rank <= CASE WHEN f.hanging > 0 THEN r.cap_hanging ELSE r.cap_max END)) AS leased
    FROM ranked r LEFT JOIN flight f ON f.connector_id = r.connector_id
  ), dl AS (
    INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, lease_until)
    SELECT connector_id, event_id, ${body}, enqueue_time, CASE WHEN leased THEN due_time ELSE enqueue_time END, CASE WHEN leased THEN lease_until END
    FROM decided ORDER BY ord
    RETURNING id, lease_until IS NOT NULL AS leased)`;
}

/**
 * The rows these caps name as ended (InFlightCap.ended), ascending: an event batch's count searches them
 * (../functions/sensorcloud_lock_in_flight.sql).
 */
const endedIds = (caps: ReadonlyArray<InFlightCap | undefined>): number[] =>
  caps.flatMap((cap) => (cap?.ended ? [...cap.ended] : [])).sort((a, b) => a - b);

/** Whether queueRowsSql must take locks for these rows: some ask for a lease under a cap. */
export const capped = (rows: readonly NewDelivery[]): boolean =>
  rows.some((r) => r.leaseUntil != null && r.leaseIf !== undefined);

/**
 * The parameters of queueRowsSql: the rows' columns (their bodies added to `packed`), then (capped) one entry per
 * connector, in id order, and the ids of those connectors' rows whose attempts have ended, ascending
 * (InFlightCap.ended; ids are unique across connectors).
 */
export function queueColumns(rows: readonly NewDelivery[], withLocks: boolean, packed: PackedValues): unknown[] {
  const leased = (r: NewDelivery) => (r.leaseUntil != null ? r.leaseIf?.cap : undefined);
  const bodies = rows.map((r) => packed.add(r.body));
  const columns: unknown[] = [
    rows.map((r) => r.connectorId),
    rows.map((r) => r.eventId),
    bodies.map(([start]) => start),
    bodies.map(([, length]) => length),
    rows.map((r) => r.enqueueTime),
    rows.map((r) => r.dueTime),
    rows.map((r) => r.leaseUntil ?? null),
    rows.map((r) => leased(r)?.max ?? null),
    rows.map((r) => leased(r)?.whileHanging ?? null),
  ];
  if (!withLocks) return columns;
  const first = new Map<string, NewDelivery>();
  for (const r of rows) if (leased(r) && !first.has(r.connectorId)) first.set(r.connectorId, r);
  // Sorted byte-wise, as every process sorts them: locks taken in one order never deadlock.
  const ids = [...first.keys()].sort();
  const of = ids.map((id) => first.get(id)!);
  return [
    ...columns,
    ids,
    of.map((r) => r.enqueueTime),
    of.map((r) => r.leaseIf!.cap.hangingIfLeasedBefore),
    of.map((r) => r.leaseIf!.enqueuedAfter),
    endedIds(of.map((r) => r.leaseIf!.cap)),
  ];
}

/** Sets each row's `queued` from what queueRowsSql's `dl` returned (rows follow their ids' order). */
export function markQueued(rows: readonly NewDelivery[], written: Array<{ id: number; leased: boolean }>): number[] {
  written.sort((a, b) => a.id - b.id);
  rows.forEach((r, i) => {
    r.queued = written[i]!;
  });
  return written.map((w) => w.id);
}

// Which connectors have rows due: a function (../functions/sensorcloud_connectors_with_due.sql), planned with index
// scans only, whatever the table's statistics say.
const CONNECTORS_WITH_DUE = 'SELECT c AS id FROM sensorcloud_connectors_with_due($1, $2) AS c';

// Lock, count and claim in one statement (../functions/sensorcloud_claim.sql), waiting for the connector's lock,
// which writes of rows queued leased take too: the cluster-wide per-connector limit (DeliveryRepo.claim's cap).
// Without a cap, the same statement with no limit but `limit`.
const CLAIM = 'SELECT * FROM sensorcloud_claim($1, $2, $3, $4, $5, $6, $7, $8, $9)';
const NO_CAP = 2 ** 31 - 1;
// The claims of several connectors in one statement (../functions/sensorcloud_claim_many.sql).
const CLAIM_MANY = 'SELECT * FROM sensorcloud_claim_many($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)';

/** claim()'s cap as the statements take it: the most in flight, the most while one hangs, and the hanging cutoff. */
const capColumns = (cap: InFlightCap | undefined): [number, number, number] =>
  cap === undefined ? [NO_CAP, NO_CAP, 0] : [cap.max, cap.whileHanging, cap.hangingIfLeasedBefore];

// A loose scan of the waiting rows' connectors, each probed for a deferred row (a scalar probe, not EXISTS: see
// ../functions/sensorcloud_connectors_with_due.sql on semi joins that hash every row they might find).
const CONNECTORS_WITH_DEFERRED = `
  WITH RECURSIVE w(id) AS (
    (SELECT connector_id FROM deliveries WHERE lease_until IS NULL ORDER BY connector_id LIMIT 1)
    UNION ALL
    SELECT (SELECT connector_id FROM deliveries WHERE lease_until IS NULL AND connector_id > w.id ORDER BY connector_id LIMIT 1)
    FROM w WHERE w.id IS NOT NULL
  )
  SELECT w.id FROM w WHERE w.id IS NOT NULL
    AND (SELECT true FROM deliveries d WHERE d.connector_id = w.id AND d.lease_until IS NULL AND d.due_time >= ${DEFERRED_DUE}
      ORDER BY d.due_time LIMIT 1)`;

// A piece of deferred rows made due: as many as the connector's waiting due rows (counted up to keepDue) leave of
// keepDue. Rows another process is settling or making due are skipped: a piece made twice is only a larger piece.
const RELEASE_DEFERRED = `
  UPDATE deliveries SET due_time = $2 WHERE id IN (
    SELECT id FROM deliveries WHERE connector_id = $1 AND lease_until IS NULL AND due_time >= ${DEFERRED_DUE}
    ORDER BY due_time, id
    LIMIT greatest(0, $3 - (SELECT count(*) FROM (
      SELECT 1 FROM deliveries WHERE connector_id = $1 AND lease_until IS NULL AND due_time <= $2 LIMIT $3) x))
    FOR UPDATE SKIP LOCKED)`;

// Ids follow enqueue order (the interface's promise), so the oldest rows are the lowest ids. Rows another process
// holds locked (being claimed or settled) are skipped: the next pass takes them.
const DELETE_EXPIRED = `
  DELETE FROM deliveries WHERE id IN (
    SELECT id FROM deliveries WHERE enqueue_time <= $1 AND (lease_until IS NULL OR lease_until <= $2)
    ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)`;

// A piece of one connector's queue, found through the two partial indexes that hold it (waiting rows, then leased
// ones; `connector_id = $1` alone matches neither index's predicate and would read the whole table), and deleted by
// the rows' addresses: a piece of 10,000 rows took 5.8 ms so, 12 ms by id, 20 ms by `id IN (…)`. A row updated
// meanwhile (an outcome recorded) has moved and is left for the next piece.
const DELETE_BY_CONNECTOR = `
  DELETE FROM deliveries WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM (
      (SELECT ctid FROM deliveries WHERE connector_id = $1 AND lease_until IS NULL LIMIT $2)
      UNION ALL
      (SELECT ctid FROM deliveries WHERE connector_id = $1 AND lease_until IS NOT NULL LIMIT $2)
    ) piece LIMIT $2))`;

const INSERT = `WITH ${queueRowsSql(2, 1, false)} SELECT id, leased FROM dl`;
const INSERT_CAPPED = `WITH ${queueRowsSql(2, 1, true)} SELECT id, leased FROM dl`;

// Rows of a :sync, :resend or :replay, with their trigger: a plain statement of its own, so that the live path's
// (queueRowsSql, also the flush of a publish batch, write-behind.ts) sends not one parameter more. Such rows are queued
// due, never leased under a cap (a lease asked for under NewDelivery.leaseIf is not taken: the row is queued due).
const INSERT_TRIGGERED = `
  INSERT INTO deliveries (connector_id, event_id, body, enqueue_time, due_time, lease_until, trigger)
  SELECT connector_id, event_id, ${packedBytes(1, 'body_start', 'body_length')}, enqueue_time, due_time, lease_until, trigger
  FROM unnest($2::text[], $3::text[], $4::int[], $5::int[], $6::bigint[], $7::bigint[], $8::bigint[], $9::smallint[])
    WITH ORDINALITY AS u(connector_id, event_id, body_start, body_length, enqueue_time, due_time, lease_until, trigger, ord)
  ORDER BY ord
  RETURNING id, lease_until IS NOT NULL AS leased`;

/** Whether the row carries a trigger to write (anything but a published event's). */
const triggered = (r: NewDelivery): boolean => triggerCode(r.trigger) !== 0;

// What a removal logs of each row it removes (DeliveryRepo.deleteByConnector's logAt, deleteExpired's log), in the
// removal's statement: `gone` (the DELETE … RETURNING of the removal) is logged in state $s at $t. A removed row with
// a log row ends in that state, unless its log already holds an end (an acknowledgement recorded late, while another
// process had the row: it was delivered); one without gets a row with its attempt count and no attempts. Rows locked
// in id order, each after its queue row (the DELETE), as the outcome batches lock them (held-outcomes.ts).
const logRemoved = (gone: string, s: number, t: number) => `
  WITH gone AS (${gone} RETURNING id, connector_id, event_id, body, enqueue_time, attempts, trigger),
  logged AS (
    INSERT INTO delivery_log AS l (id, connector_id, event_id, event_type, device_id, trigger, state, attempt_count,
      create_time, update_time, next_attempt_time, attempts)
    SELECT g.id, g.connector_id, g.event_id, coalesce(b.j -> 'event' ->> 'eventType', ''),
      coalesce(b.j -> 'metadata' ->> 'deviceId', ''), g.trigger, $${s}::smallint, g.attempts, g.enqueue_time, $${t}::bigint, NULL, '[]'
    FROM gone g CROSS JOIN LATERAL (SELECT ${BODY_JSON('g.body')} AS j) b
    ORDER BY g.id
    ON CONFLICT (id) DO UPDATE SET state = excluded.state, update_time = excluded.update_time, next_attempt_time = NULL
      WHERE l.state = ${RETRYING}
  )
  SELECT count(*)::int AS n FROM gone`;

const DELETE_BY_CONNECTOR_LOGGED = logRemoved(DELETE_BY_CONNECTOR, 3, 4);
const DELETE_EXPIRED_LOGGED = logRemoved(DELETE_EXPIRED, 4, 2);

/**
 * add is the default (insert; a group-commit batch holds it to the batch's end instead: write-behind.ts); deleteMany,
 * deleteCounted and claimMany are overrides of the defaults, one statement each instead of one per row or claim.
 */
export function createDeliveryRepo(sql: Sql): DeliveryRepo {
  async function insertTriggered(rows: readonly NewDelivery[]): Promise<number[]> {
    const packed = new PackedValues();
    const bodies = rows.map((r) => packed.add(r.body));
    const written = await sql.query<{ id: number; leased: boolean }>(INSERT_TRIGGERED, [
      packed.bytes(),
      rows.map((r) => r.connectorId),
      rows.map((r) => r.eventId),
      bodies.map(([start]) => start),
      bodies.map(([, length]) => length),
      rows.map((r) => r.enqueueTime),
      rows.map((r) => (r.leaseUntil != null && r.leaseIf !== undefined ? r.enqueueTime : r.dueTime)),
      rows.map((r) => (r.leaseIf === undefined ? (r.leaseUntil ?? null) : null)),
      rows.map((r) => triggerCode(r.trigger)),
    ]);
    return markQueued(rows, written);
  }
  const repo: DeliveryRepo = withDeliveryDefaults(
    {
      async insert(rows) {
        if (rows.length === 0) return [];
        if (rows.some(triggered)) {
          // A run of rows with triggers and a run without in one call (not made today) each go their own way, in order.
          const ids: number[] = [];
          for (let i = 0; i < rows.length; ) {
            let j = i + 1;
            while (j < rows.length && triggered(rows[j]!) === triggered(rows[i]!)) j++;
            const run = rows.slice(i, j);
            ids.push(...(triggered(run[0]!) ? await insertTriggered(run) : await repo.insert(run)));
            i = j;
          }
          return ids;
        }
        const locks = capped(rows);
        const packed = new PackedValues();
        const columns = queueColumns(rows, locks, packed);
        return markQueued(
          rows,
          await sql.query<{ id: number; leased: boolean }>(locks ? INSERT_CAPPED : INSERT, [
            packed.bytes(),
            ...columns,
          ]),
        );
      },
      async connectorsWithDeferred() {
        return (await sql.query<{ id: string }>(CONNECTORS_WITH_DEFERRED)).map((r) => r.id);
      },
      async releaseDeferred(connectorId, now, keepDue) {
        return sql.run(RELEASE_DEFERRED, [connectorId, now, keepDue]);
      },
      async connectorsWithDue(now, enqueuedAfter) {
        return (await sql.query<{ id: string }>(CONNECTORS_WITH_DUE, [now, enqueuedAfter])).map((r) => r.id);
      },
      async claim(connectorId, now, enqueuedAfter, leaseUntil, limit, cap) {
        const rows = await sql.query<DeliveryRow>(CLAIM, [
          connectorId,
          now,
          enqueuedAfter,
          leaseUntil,
          limit,
          ...capColumns(cap),
          endedIds([cap]),
        ]);
        return rows.map(toDelivery).sort((a, b) => a.id - b.id);
      },
      async pacingForUpdate(connectorId) {
        // An upsert that changes nothing: it locks the row (made on first use) until the transaction ends, in one
        // round trip; -1 marks a row it just made.
        const [r] = await sql.query<{ next_start: string | number }>(
          `INSERT INTO connector_pacing (connector_id, next_start) VALUES ($1, -1)
           ON CONFLICT (connector_id) DO UPDATE SET next_start = connector_pacing.next_start RETURNING next_start`,
          [connectorId],
        );
        const next = Number(r!.next_start);
        return next < 0 ? null : next;
      },
      async setPacing(connectorId, nextStart) {
        await sql.run(
          `INSERT INTO connector_pacing (connector_id, next_start) VALUES ($1, $2)
           ON CONFLICT (connector_id) DO UPDATE SET next_start = excluded.next_start`,
          [connectorId, nextStart],
        );
      },
      async get(id) {
        const [r] = await sql.query<DeliveryRow>('SELECT * FROM deliveries WHERE id = $1', [id]);
        return r ? toDelivery(r) : null;
      },
      async delete(id, leaseUntil) {
        if (leaseUntil === undefined) return (await sql.run('DELETE FROM deliveries WHERE id = $1', [id])) > 0;
        return (
          (await sql.run('DELETE FROM deliveries WHERE id = $1 AND lease_until IS NOT DISTINCT FROM $2', [
            id,
            leaseUntil,
          ])) > 0
        );
      },
      async reschedule(id, attempts, dueTime, leaseUntil) {
        return (
          (await sql.run(
            'UPDATE deliveries SET attempts = $1, due_time = $2, lease_until = NULL WHERE id = $3 AND lease_until IS NOT DISTINCT FROM $4',
            [attempts, dueTime, id, leaseUntil],
          )) > 0
        );
      },
      async deleteByConnector(connectorId, limit, logAt) {
        if (logAt === undefined) return sql.run(DELETE_BY_CONNECTOR, [connectorId, limit]);
        const [r] = await sql.query<{ n: number }>(DELETE_BY_CONNECTOR_LOGGED, [connectorId, limit, DISCARDED, logAt]);
        return r!.n;
      },
      async deleteExpired(enqueuedAtOrBefore, now, limit, log) {
        if (log !== true) return sql.run(DELETE_EXPIRED, [enqueuedAtOrBefore, now, limit]);
        const [r] = await sql.query<{ n: number }>(DELETE_EXPIRED_LOGGED, [enqueuedAtOrBefore, now, limit, EXPIRED]);
        return r!.n;
      },
      async releaseLeases(now, ids) {
        if (ids === undefined)
          return sql.run('UPDATE deliveries SET lease_until = NULL, due_time = $1 WHERE lease_until IS NOT NULL', [
            now,
          ]);
        if (ids.length === 0) return 0;
        return sql.run(
          'UPDATE deliveries SET lease_until = NULL, due_time = $1 WHERE id = ANY($2::bigint[]) AND lease_until IS NOT NULL',
          [now, ids],
        );
      },
      async count() {
        const [r] = await sql.query<{ n: number }>('SELECT count(*) AS n FROM deliveries');
        return r!.n;
      },
      async lastSync(connectorId) {
        const [r] = await sql.query<SyncRow>('SELECT * FROM connector_syncs WHERE connector_id = $1', [connectorId]);
        return r ? toSync(r) : null;
      },
      async recordSync(s) {
        await sql.run(
          `INSERT INTO connector_syncs (connector_id, first_id, last_id, enqueue_time, scope) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (connector_id) DO UPDATE SET first_id = excluded.first_id, last_id = excluded.last_id,
           enqueue_time = excluded.enqueue_time, scope = excluded.scope`,
          [s.connectorId, s.firstId, s.lastId, s.enqueueTime, s.scope],
        );
      },
      async syncQueued(s) {
        // Along the primary key: the sync's rows and whatever other transactions queued between them, never the backlog.
        const rows = await sql.query(
          'SELECT 1 FROM deliveries WHERE id BETWEEN $1 AND $2 AND connector_id = $3 AND enqueue_time = $4 LIMIT 1',
          [s.firstId, s.lastId, s.connectorId, s.enqueueTime],
        );
        return rows.length > 0;
      },
    },
    () => createConnectorMetricRepo(sql),
    {
      async claimMany(asks, total, now, enqueuedAfter, leaseUntil) {
        if (asks.length === 0 || total <= 0) return asks.map(() => []);
        const caps = asks.map((a) => capColumns(a.cap));
        const ended = asks.flatMap((a) => [...(a.cap?.ended ?? [])].map((id) => [id, a.connectorId] as const));
        const ids = asks.map((a) => a.connectorId);
        const rows = await sql.query<DeliveryRow>(CLAIM_MANY, [
          // Sorted byte-wise, as every process sorts the connector locks it takes (queueColumns).
          ids,
          [...ids].sort(),
          asks.map((a) => a.limit),
          caps.map((c) => c[0]),
          caps.map((c) => c[1]),
          caps.map((c) => c[2]),
          total,
          now,
          enqueuedAfter,
          leaseUntil,
          ended.map(([id]) => id),
          ended.map(([, c]) => c),
        ]);
        const byConnector = new Map<string, DeliveryRecord[]>(ids.map((id) => [id, []]));
        for (const r of rows) byConnector.get(r.connector_id)!.push(toDelivery(r));
        return ids.map((id) => byConnector.get(id)!.sort((a, b) => a.id - b.id));
      },
      async deleteMany(ids) {
        if (ids.length === 0) return 0;
        return sql.run('DELETE FROM deliveries WHERE id = ANY($1::bigint[])', [ids]);
      },
      async deleteCounted(ids, series) {
        // The statement a batch of outcomes writes what it holds with: the count goes into the counter in SQL.
        const held = new HeldOutcomes();
        held.deleteCounted(ids, series);
        if (ids.length > 0) await held.write(sql);
      },
    },
  );
  return repo;
}
