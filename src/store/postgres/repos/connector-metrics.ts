// Connector metrics buckets and the delivery counters on PostgreSQL. Several processes add to the same bucket
// and counters at once, so every add is one INSERT … ON CONFLICT DO UPDATE that does the arithmetic in SQL on
// the row's latest version: no read-modify-write in the process, no increment lost.
import type { ConnectorMetricRepo, MetricBucket } from '../../contract/connector-repos.ts';
import type { Sql } from '../db.ts';

interface Row {
  bucket_start: number;
  success_count: number;
  error_count: number;
  latency_hist: Record<string, number>;
}
const toBucket = (r: Row): MetricBucket => ({
  bucketStart: r.bucket_start,
  successCount: r.success_count,
  errorCount: r.error_count,
  latencyHist: r.latency_hist,
});

// The histograms merge key by key; sums are numeric, so the merged values stay JSON numbers.
// (Also the conflict clause of the batched add, held-outcomes.ts.)
export const MERGE_BUCKET = `ON CONFLICT (connector_id, bucket_start) DO UPDATE SET
    success_count = connector_metrics.success_count + excluded.success_count,
    error_count = connector_metrics.error_count + excluded.error_count,
    latency_hist = CASE WHEN excluded.latency_hist = '{}' THEN connector_metrics.latency_hist ELSE (
      SELECT coalesce(jsonb_object_agg(k, v), '{}') FROM (
        SELECT key AS k, sum(value::numeric) AS v FROM (
          SELECT * FROM jsonb_each_text(connector_metrics.latency_hist) UNION ALL SELECT * FROM jsonb_each_text(excluded.latency_hist)
        ) x GROUP BY key
      ) y) END`;
const ADD = `
  INSERT INTO connector_metrics (connector_id, bucket_start, success_count, error_count, latency_hist) VALUES ($1, $2, $3, $4, $5::jsonb)
  ${MERGE_BUCKET}`;

// One statement for all series (~15 after a batch of attempts). ORDER BY series: concurrent transactions lock
// the counter rows in the same order, so two of them never deadlock on each other's series.
const ADD_COUNTERS = `
  INSERT INTO delivery_counters (series, value)
  SELECT key, value::float8 FROM jsonb_each_text($1::jsonb) WHERE value::float8 <> 0 ORDER BY key
  ON CONFLICT (series) DO UPDATE SET value = delivery_counters.value + excluded.value`;

// The primary key picks the rows (a ctid may move under a concurrent add). Rows another process is adding to
// are skipped rather than waited for: the next pass takes them.
const DELETE_BEFORE = `
  DELETE FROM connector_metrics WHERE (connector_id, bucket_start) IN (
    SELECT connector_id, bucket_start FROM connector_metrics WHERE bucket_start < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`;

export function createConnectorMetricRepo(sql: Sql): ConnectorMetricRepo {
  return {
    async add(connectorId, bucketStart, successDelta, errorDelta, latencyHist) {
      await sql.run(ADD, [
        connectorId,
        bucketStart,
        successDelta,
        errorDelta,
        JSON.stringify(Object.fromEntries(latencyHist)),
      ]);
    },
    async listSince(connectorId, fromBucketStart) {
      const rows = await sql.query<Row>(
        'SELECT bucket_start, success_count, error_count, latency_hist FROM connector_metrics WHERE connector_id = $1 AND bucket_start >= $2 ORDER BY bucket_start',
        [connectorId, fromBucketStart],
      );
      return rows.map(toBucket);
    },
    async deleteByConnector(connectorId) {
      await sql.run('DELETE FROM connector_metrics WHERE connector_id = $1', [connectorId]);
    },
    async deleteBefore(bucketStart, limit) {
      return sql.run(DELETE_BEFORE, [bucketStart, limit]);
    },
    async addCounters(deltas) {
      if (Object.keys(deltas).length === 0) return;
      await sql.run(ADD_COUNTERS, [JSON.stringify(deltas)]);
    },
    async counters() {
      const out: Record<string, number> = {};
      for (const r of await sql.query<{ series: string; value: number }>(
        'SELECT series, value FROM delivery_counters ORDER BY series',
      ))
        out[r.series] = r.value;
      return out;
    },
  };
}
