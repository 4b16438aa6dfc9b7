// What an operator reads without credentials: whether the store answers (/healthz), and the delivery metrics in
// the Prometheus text format 0.0.4 (/metrics). Counters live in the store, so they survive restarts and add up
// across processes sharing one database.
import type { Deps } from '../deps.ts';
import { CONNECTOR_STATUSES } from '../domain/connector-status.ts';
import { ApiError, unavailable } from '../domain/errors.ts';
import { DURATION_BUCKETS_SECONDS, series } from '../delivery/metrics.ts';
import type { AttemptReason } from '../delivery/types.ts';

/** 503 unless the store answers (contract §1.1), saying why: the store's own 503 names it (unreachable, reads only, a full disk). */
export async function checkHealth(deps: Pick<Deps, 'store'>): Promise<{ status: 'ok' }> {
  try {
    await deps.store.ping();
  } catch (err) {
    throw err instanceof ApiError && err.status === 503 ? err : unavailable('the database does not answer');
  }
  return { status: 'ok' };
}

const REASONS: AttemptReason[] = ['ack', 'http_status', 'timeout', 'tls', 'connection', 'refused_address'];
const RECOVERY_KINDS = ['resend', 'replay', 'test'] as const;

const num = (v: number) => (Number.isInteger(v) ? String(v) : String(Number(v.toFixed(6))));

export async function renderPrometheus(deps: Pick<Deps, 'store'>): Promise<string> {
  const [counters, depth, byStatus] = await Promise.all([
    deps.store.connectorMetrics.counters(),
    deps.store.deliveries.count(),
    deps.store.dataConnectors.countByStatus(),
  ]);
  const c = (k: string) => num(counters[k] ?? 0);
  const lines: string[] = [];
  lines.push(
    '# HELP delivery_attempts_total Push attempts by outcome (ack = 2xx).',
    '# TYPE delivery_attempts_total counter',
  );
  for (const r of REASONS) lines.push(`${series.attempts(r)} ${c(series.attempts(r))}`);
  lines.push(
    '# HELP deliveries_total Queued events that left the queue: acknowledged, or dropped unacknowledged.',
    '# TYPE deliveries_total counter',
  );
  lines.push(
    `${series.deliveries('acked')} ${c(series.deliveries('acked'))}`,
    `${series.deliveries('dropped')} ${c(series.deliveries('dropped'))}`,
  );
  lines.push(
    '# HELP delivery_duration_seconds Response time of push attempts.',
    '# TYPE delivery_duration_seconds histogram',
  );
  for (const le of [...DURATION_BUCKETS_SECONDS.map(String), '+Inf'])
    lines.push(`${series.durationBucket(le)} ${c(series.durationBucket(le))}`);
  lines.push(`${series.durationSum} ${c(series.durationSum)}`, `${series.durationCount} ${c(series.durationCount)}`);
  lines.push(
    '# HELP delivery_recovery_requests_total Recovery requests carried out: resends, replays, test pushes.',
    '# TYPE delivery_recovery_requests_total counter',
  );
  for (const kind of RECOVERY_KINDS) lines.push(`${series.recoveryRequests(kind)} ${c(series.recoveryRequests(kind))}`);
  lines.push(
    '# HELP delivery_replayed_events_total Events queued again by replays.',
    '# TYPE delivery_replayed_events_total counter',
  );
  lines.push(`${series.replayedEvents} ${c(series.replayedEvents)}`);
  lines.push(
    '# HELP delivery_queue_depth Events waiting in delivery queues (in flight included).',
    '# TYPE delivery_queue_depth gauge',
  );
  lines.push(`delivery_queue_depth ${depth}`);
  lines.push('# HELP data_connectors Data connectors by status.', '# TYPE data_connectors gauge');
  for (const s of CONNECTOR_STATUSES) lines.push(`data_connectors{status="${s}"} ${byStatus[s] ?? 0}`);
  return `${lines.join('\n')}\n`;
}
