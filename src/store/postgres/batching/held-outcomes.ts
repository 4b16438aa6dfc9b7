// The writes of a batch of delivery outcomes (delivery/outcomes.ts), held to the end of the batch and made by one
// statement (write-behind.ts): the acknowledged rows' deletion with its count into a counter, the metrics buckets
// and the counters. Made one by one they were three of an outcome batch's six round trips; with BEGIN and COMMIT
// gone as well (an outcome batch that only holds these runs unlocked), a batch of acknowledgements is two: the
// connector's read and this statement.
import type { Sql } from '../db.ts';
import { MERGE_BUCKET } from '../repos/connector-metrics.ts';

// The buckets in key order and the counters in series order, as the statements made one by one take their row
// locks, so two batches never wait for each other in a cycle. A bucket appears once (one statement cannot update a
// row twice): adds to the same bucket are merged here first.
const WRITE = `
  WITH del AS (
    DELETE FROM deliveries WHERE id = ANY($1::bigint[]) RETURNING 1
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

  get empty(): boolean {
    return this.series === null && this.buckets.size === 0 && Object.keys(this.counters).length === 0;
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
    this.counted = [];
    this.series = null;
    this.buckets = new Map();
    this.counters = {};
    await sql.run(WRITE, [
      counted,
      series,
      buckets.map((b) => b.connectorId),
      buckets.map((b) => b.bucketStart),
      buckets.map((b) => b.success),
      buckets.map((b) => b.error),
      buckets.map((b) => JSON.stringify(Object.fromEntries(b.hist))),
      JSON.stringify(counters),
    ]);
  }
}
