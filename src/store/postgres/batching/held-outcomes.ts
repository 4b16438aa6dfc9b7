// The writes of a batch of delivery outcomes (delivery/outcomes.ts), held to the end of the batch and made by one
// statement (write-behind.ts): the acknowledged rows' deletion with its count into a counter, the metrics buckets,
// the counters and the attempts' delivery log. Made one by one they were four of an outcome batch's seven round
// trips; with BEGIN and COMMIT gone as well (an outcome batch that only holds these runs unlocked), a batch of
// acknowledgements is two: the connector's read and this statement.
import type { LogOutcome } from '../../contract/delivery-log.ts';
import {
  attemptsJson,
  mergeOutcomes,
  sortedById,
  stateCode,
  triggerCode,
  type MergedOutcome,
} from '../../sql/delivery-log-rows.ts';
import type { Sql } from '../db.ts';
import { MERGE_BUCKET } from '../repos/connector-metrics.ts';

/** A delivery's later outcomes: its state, next attempt and update time replaced, its attempts appended. */
const APPEND_ATTEMPTS = `ON CONFLICT (id) DO UPDATE SET state = excluded.state, update_time = excluded.update_time,
      next_attempt_time = excluded.next_attempt_time, attempt_count = l.attempt_count + excluded.attempt_count,
      attempts = l.attempts || excluded.attempts`;

// The buckets in key order, the counters in series order and the log's rows in id order, as the statements made one
// by one take their row locks, so two batches never wait for each other in a cycle. A bucket, or a delivery's log
// row, appears once (one statement cannot update a row twice): what is held for the same one is merged here first.
// The log's rows are written after the deletion (its count, an InitPlan, runs first): a queue row is locked before
// its log row, as every writer of both does (the removals that log, repos/deliveries.ts), so that a removal and an
// outcome batch never hold one each of the same delivery's two rows.
const WRITE = `
  WITH del AS (
    DELETE FROM deliveries WHERE id = ANY($1::bigint[]) RETURNING 1
  ), lg AS (
    INSERT INTO delivery_log AS l (id, connector_id, event_id, event_type, device_id, trigger, state, attempt_count,
      create_time, update_time, next_attempt_time, attempts)
    SELECT * FROM unnest($9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::smallint[], $15::smallint[],
      $16::int[], $17::bigint[], $18::bigint[], $19::bigint[], $20::jsonb[])
    WHERE (SELECT count(*) FROM del) >= 0
    ORDER BY 1
    ${APPEND_ATTEMPTS}
  ), m AS (
    INSERT INTO connector_metrics (connector_id, bucket_start, success_count, error_count, latency_hist)
    SELECT * FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::jsonb[]) ORDER BY 1, 2
    ${MERGE_BUCKET}
  )
  INSERT INTO delivery_counters (series, value)
  SELECT key, sum(value) FROM (
    SELECT key, value::float8 AS value FROM jsonb_each_text($8::jsonb)
    UNION ALL SELECT $2::text, count(*)::float8 FROM del
  ) x WHERE key IS NOT NULL GROUP BY key HAVING sum(value) <> 0 ORDER BY key
  ON CONFLICT (series) DO UPDATE SET value = delivery_counters.value + excluded.value`;

interface Bucket {
  connectorId: string;
  bucketStart: number;
  success: number;
  error: number;
  hist: Map<string, number>;
}

export class HeldOutcomes {
  private counted: number[] = [];
  private series: string | null = null;
  private buckets = new Map<string, Bucket>();
  private counters: Record<string, number> = {};
  private logged = new Map<number, MergedOutcome>();

  get empty(): boolean {
    return (
      this.series === null &&
      this.buckets.size === 0 &&
      Object.keys(this.counters).length === 0 &&
      this.logged.size === 0
    );
  }

  /** Holds DeliveryLogRepo.record, merged into what is held for the same delivery. */
  record(outcomes: readonly LogOutcome[]): void {
    mergeOutcomes(this.logged, outcomes);
  }

  /** Holds DeliveryRepo.deleteCounted; false when another counter's deletion is held (write that first). */
  deleteCounted(ids: readonly number[], series: string): boolean {
    if (this.series !== null && this.series !== series) return false;
    this.series = series;
    this.counted.push(...ids);
    return true;
  }

  /** Holds ConnectorMetricRepo.add, merged into what is held for the same bucket. */
  add(
    connectorId: string,
    bucketStart: number,
    success: number,
    error: number,
    hist: ReadonlyMap<string, number>,
  ): void {
    const key = `${connectorId}\n${bucketStart}`;
    let b = this.buckets.get(key);
    if (b === undefined) {
      b = { connectorId, bucketStart, success: 0, error: 0, hist: new Map() };
      this.buckets.set(key, b);
    }
    b.success += success;
    b.error += error;
    for (const [k, n] of hist) b.hist.set(k, (b.hist.get(k) ?? 0) + n);
  }

  /** Holds ConnectorMetricRepo.addCounters. */
  addCounters(deltas: Record<string, number>): void {
    for (const [series, n] of Object.entries(deltas)) this.counters[series] = (this.counters[series] ?? 0) + n;
  }

  /** Writes what is held, in one statement, and holds nothing after. */
  async write(sql: Sql): Promise<void> {
    if (this.empty) return;
    const [counted, series, buckets, counters] = [this.counted, this.series, [...this.buckets.values()], this.counters];
    const logged = sortedById(this.logged);
    this.counted = [];
    this.series = null;
    this.buckets = new Map();
    this.counters = {};
    this.logged = new Map();
    await sql.run(WRITE, [
      counted,
      series,
      buckets.map((b) => b.connectorId),
      buckets.map((b) => b.bucketStart),
      buckets.map((b) => b.success),
      buckets.map((b) => b.error),
      buckets.map((b) => JSON.stringify(Object.fromEntries(b.hist))),
      JSON.stringify(counters),
      ...logColumns(logged),
    ]);
  }
}

/** The parameters of the log's rows in WRITE ($9-$20), one entry per delivery, in id order. */
function logColumns(logged: readonly MergedOutcome[]): unknown[] {
  return [
    logged.map((m) => m.last.id),
    logged.map((m) => m.last.connectorId),
    logged.map((m) => m.last.eventId),
    logged.map((m) => m.last.eventType),
    logged.map((m) => m.last.deviceId),
    logged.map((m) => triggerCode(m.last.trigger)),
    logged.map((m) => stateCode(m.last.state)),
    logged.map((m) => m.attempts.length),
    logged.map((m) => m.last.createTime),
    logged.map((m) => m.last.updateTime),
    logged.map((m) => m.last.nextAttemptTime),
    logged.map((m) => attemptsJson(m.attempts)),
  ];
}
