// Connector metrics buckets and the delivery counters on SQLite.
import type { ConnectorMetricRepo, MetricBucket } from '../../contract/connector-repos.ts';
import { fromJson, toJson, type SqliteDb } from '../db.ts';

interface Row {
  connector_id: string;
  bucket_start: number;
  success_count: number;
  error_count: number;
  latency_hist: string;
}
const toBucket = (r: Row): MetricBucket => ({
  bucketStart: r.bucket_start,
  successCount: r.success_count,
  errorCount: r.error_count,
  latencyHist: fromJson(r.latency_hist),
});

const MAX_CACHED = 1_000;

export function createConnectorMetricRepo(db: SqliteDb): ConnectorMetricRepo {
  // Each connector's latest bucket histogram as last written. Every batch of outcomes adds to it, and reading the
  // row back and parsing its histogram for each batch was ~10 % of the main thread's allocations under load.
  // Cleared with the read caches when a transaction rolls back. A histogram of a busy minute holds a few hundred
  // keys (~4 KB), so at most MAX_CACHED connectors are kept; beyond that the row is read back as before.
  const latest = db.caches.createMap<string, { bucketStart: number; hist: Record<string, number> }>();
  return {
    async add(connectorId, bucketStart, successDelta, errorDelta, latencyHist) {
      let bucket = latest.get(connectorId);
      latest.delete(connectorId); // back once the row is written: should the write fail, it is not ahead of the row
      if (bucket?.bucketStart !== bucketStart) {
        const existing = db.get<{ latency_hist: string }>(
          'SELECT latency_hist FROM connector_metrics WHERE connector_id = ? AND bucket_start = ?',
          connectorId,
          bucketStart,
        );
        // A parsed histogram keeps its index-like keys sparse, so adding to it is cheap; the {} of a new bucket grows
        // an array up to its first key (metrics.ts, Histogram), once a minute per connector.
        bucket = { bucketStart, hist: existing ? fromJson(existing.latency_hist) : {} };
      }
      const hist = bucket.hist;
      for (const [k, n] of latencyHist) hist[k] = (hist[k] ?? 0) + n;
      db.run(
        `INSERT INTO connector_metrics (connector_id, bucket_start, success_count, error_count, latency_hist) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (connector_id, bucket_start) DO UPDATE SET
           success_count = success_count + excluded.success_count,
           error_count = error_count + excluded.error_count,
           latency_hist = excluded.latency_hist`,
        connectorId,
        bucketStart,
        successDelta,
        errorDelta,
        toJson(hist),
      );
      if (latest.size >= MAX_CACHED) latest.clear();
      latest.set(connectorId, bucket);
    },
    async listSince(connectorId, fromBucketStart) {
      return db
        .all<Row>(
          'SELECT * FROM connector_metrics WHERE connector_id = ? AND bucket_start >= ? ORDER BY bucket_start',
          connectorId,
          fromBucketStart,
        )
        .map(toBucket);
    },
    async deleteByConnector(connectorId) {
      latest.delete(connectorId);
      db.run('DELETE FROM connector_metrics WHERE connector_id = ?', connectorId);
    },
    async deleteBefore(bucketStart, limit) {
      latest.clear();
      return db.run(
        'DELETE FROM connector_metrics WHERE rowid IN (SELECT rowid FROM connector_metrics WHERE bucket_start < ? LIMIT +?)',
        bucketStart,
        limit,
      ).changes;
    },
    async addCounters(deltas) {
      // One statement for all series (~15 after a batch of attempts) instead of one per series.
      db.run(
        `INSERT INTO delivery_counters (series, value) SELECT key, value FROM json_each(?) WHERE value <> 0
         ON CONFLICT (series) DO UPDATE SET value = value + excluded.value`,
        toJson(deltas),
      );
    },
    async counters() {
      const out: Record<string, number> = {};
      for (const r of db.all<{ series: string; value: number }>(
        'SELECT series, value FROM delivery_counters ORDER BY series',
      ))
        out[r.series] = r.value;
      return out;
    },
  };
}
