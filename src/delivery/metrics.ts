// Delivery metrics (contract §6.8): per connector, 1-minute buckets over a sliding 3-hour window, each with
// success/error counts and a log-bucketed histogram of successful response times (relative error ≤ 1 %), so
// the p99 by nearest rank comes from buckets instead of one row per attempt. Also the service-wide Prometheus
// counters, written in the same transaction as the outcomes they count.
import { formatDuration, formatTimestamp } from '../domain/time.ts';
import type { Repos } from '../store/contract/store.ts';
import type { ConnectorMetrics, MetricsHistoryBucket } from '../wire/data-connectors.ts';
import type { AttemptReason } from './types.ts';

export const METRICS_WINDOW_MICROS = 3 * 3600 * 1_000_000;
export const METRICS_BUCKET_MICROS = 60 * 1_000_000;

/** Relative error bound of the latency histogram. */
export const HISTOGRAM_RELATIVE_ERROR = 0.01;
const GAMMA = (1 + HISTOGRAM_RELATIVE_ERROR) / (1 - HISTOGRAM_RELATIVE_ERROR);
const LOG_GAMMA = Math.log(GAMMA);
/** Histogram key of a zero response time (log buckets cannot hold it). */
const ZERO_KEY = 'z';

export const bucketStartOf = (micros: number): number =>
  Math.floor(micros / METRICS_BUCKET_MICROS) * METRICS_BUCKET_MICROS;

/** Histogram key of a latency in microseconds: bucket i holds (γ^(i-1), γ^i]. */
export function histogramKey(latencyMicros: number): string {
  if (!(latencyMicros > 0)) return ZERO_KEY;
  return String(Math.ceil(Math.log(latencyMicros) / LOG_GAMMA));
}

/** The value (micros) a bucket stands for: within HISTOGRAM_RELATIVE_ERROR of every value it holds. */
export function histogramValue(key: string): number {
  if (key === ZERO_KEY) return 0;
  return (2 * GAMMA ** Number(key)) / (GAMMA + 1);
}

/**
 * A latency histogram being added up: bucket key → count. A Map, not a record: to V8 keys like "612" are array
 * indices, and an empty record given one grows an elements array up to that index (~3-8 KB for every batch of
 * outcomes, ~2 % of the main thread's allocations under load). Stored, it is a JSON object.
 */
export type Histogram = Map<string, number>;

/** Adds n to the key's count. */
export function addToHistogram(hist: Histogram, key: string, n: number): void {
  hist.set(key, (hist.get(key) ?? 0) + n);
}

/** Nearest-rank quantile (item at index ⌈q·N⌉−1 in ascending order) of a histogram, in micros; null when empty. */
export function nearestRank(hist: ReadonlyMap<string, number>, q: number): number | null {
  const entries = [...hist]
    .filter(([, n]) => n > 0)
    .map(([k, n]) => ({ value: histogramValue(k), n }))
    .sort((a, b) => a.value - b.value);
  const total = entries.reduce((s, e) => s + e.n, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const e of entries) {
    seen += e.n;
    if (seen >= rank) return e.value;
  }
  return entries[entries.length - 1]!.value;
}

/** The `:metrics` answer: attempts of the buckets overlapping the last 3 hours (so 3 h to 3 h + 1 min back). */
export async function readConnectorMetrics(repos: Repos, connectorId: string, now: number): Promise<ConnectorMetrics> {
  const buckets = await repos.connectorMetrics.listSince(connectorId, bucketStartOf(now - METRICS_WINDOW_MICROS));
  let successCount = 0;
  let errorCount = 0;
  const hist: Histogram = new Map();
  for (const b of buckets) {
    successCount += b.successCount;
    errorCount += b.errorCount;
    for (const k in b.latencyHist) addToHistogram(hist, k, b.latencyHist[k]!);
  }
  const p99 = nearestRank(hist, 0.99);
  return { successCount, errorCount, latency99p: formatDuration(p99 === null ? 0 : p99 / 1_000_000) };
}

/**
 * The `:metricsHistory` answer: the same buckets `:metrics` adds up (the last 3 hours, to the minute), one entry
 * per minute that had attempts, oldest first. Minutes without attempts are left out; at most 181 entries.
 */
export async function readConnectorMetricsHistory(
  repos: Repos,
  connectorId: string,
  now: number,
): Promise<MetricsHistoryBucket[]> {
  const buckets = await repos.connectorMetrics.listSince(connectorId, bucketStartOf(now - METRICS_WINDOW_MICROS));
  return buckets
    .filter((b) => b.successCount > 0 || b.errorCount > 0)
    .map((b) => ({
      startTime: formatTimestamp(b.bucketStart),
      successCount: b.successCount,
      errorCount: b.errorCount,
    }));
}

/** Deletes buckets that left the window; bounded per call. */
export function pruneMetrics(repos: Repos, now: number, limit = 10_000): Promise<number> {
  return repos.connectorMetrics.deleteBefore(bucketStartOf(now - METRICS_WINDOW_MICROS), limit);
}

/** One finished attempt, as the metrics see it. */
export interface AttemptSample {
  connectorId: string;
  /** When the attempt ended (micros). */
  time: number;
  reason: AttemptReason;
  ok: boolean;
  responseTimeMs: number;
}

/** Upper bounds (seconds) of the delivery_duration_seconds histogram. */
export const DURATION_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const series = {
  attempts: (outcome: AttemptReason) => `delivery_attempts_total{outcome="${outcome}"}`,
  deliveries: (outcome: 'acked' | 'dropped') => `deliveries_total{outcome="${outcome}"}`,
  durationBucket: (le: string) => `delivery_duration_seconds_bucket{le="${le}"}`,
  durationSum: 'delivery_duration_seconds_sum',
  durationCount: 'delivery_duration_seconds_count',
  /** Recovery requests that were carried out (extensions §X2): `:resend`, `:replay`, `:test`. */
  recoveryRequests: (kind: 'resend' | 'replay' | 'test') => `delivery_recovery_requests_total{kind="${kind}"}`,
  /** Events a `:replay` enqueued. */
  replayedEvents: 'delivery_replayed_events_total',
};

/** Adds n to a counter of the record (a missing counter counts as 0). */
export function bump(counters: Record<string, number>, key: string, n = 1): void {
  counters[key] = (counters[key] ?? 0) + n;
}

// The series names, built once: this runs for every attempt, and building ~15 strings per attempt to key a
// record was ~2.5 % of the busy main thread.
const attemptSeries = new Map<AttemptReason, string>();
const bucketSeries = [...DURATION_BUCKETS_SECONDS.map(String), '+Inf'].map(series.durationBucket);

/** Counter increments for a set of attempts (per-reason counts and the cumulative duration histogram). */
export function attemptCounterDeltas(
  samples: AttemptSample[],
  into: Record<string, number> = {},
): Record<string, number> {
  // inBucket[i]: samples whose smallest bucket is i (the last one is +Inf); made cumulative below.
  const inBucket = new Array<number>(bucketSeries.length).fill(0);
  let sum = 0;
  for (const s of samples) {
    const seconds = Math.max(0, s.responseTimeMs) / 1000;
    let name = attemptSeries.get(s.reason);
    if (name === undefined) attemptSeries.set(s.reason, (name = series.attempts(s.reason)));
    bump(into, name);
    let i = 0;
    while (i < DURATION_BUCKETS_SECONDS.length && seconds > DURATION_BUCKETS_SECONDS[i]!) i++;
    inBucket[i]! += 1;
    sum += seconds;
  }
  if (samples.length === 0) return into;
  let cumulative = 0;
  for (let i = 0; i < bucketSeries.length; i++) {
    cumulative += inBucket[i]!;
    if (cumulative > 0) bump(into, bucketSeries[i]!, cumulative);
  }
  bump(into, series.durationSum, sum);
  bump(into, series.durationCount, samples.length);
  return into;
}

/** Adds the attempts to their connectors' buckets (one write per connector and bucket). Call inside a transaction. */
export async function recordAttemptMetrics(tx: Repos, samples: AttemptSample[]): Promise<void> {
  const groups = new Map<
    string,
    { connectorId: string; bucket: number; success: number; error: number; hist: Histogram }
  >();
  for (const s of samples) {
    const bucket = bucketStartOf(s.time);
    const key = `${s.connectorId}/${bucket}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { connectorId: s.connectorId, bucket, success: 0, error: 0, hist: new Map() }));
    if (s.ok) {
      g.success += 1;
      addToHistogram(g.hist, histogramKey(s.responseTimeMs * 1000), 1);
    } else {
      g.error += 1;
    }
  }
  for (const g of groups.values()) await tx.connectorMetrics.add(g.connectorId, g.bucket, g.success, g.error, g.hist);
}
