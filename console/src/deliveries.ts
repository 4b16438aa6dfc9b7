// The delivery log of a data connector (extensions §X1, §X2) as the console reads it: the wire shapes, what each
// state, trigger and attempt outcome means in words, and the reads the connector page and the delivery pages
// share (a page of the log, one delivery, why the connector fails).
import { api, idOf, query } from './api.ts';

export interface Attempt {
  attemptTime: string;
  /** "0.123s" */
  duration: string;
  outcome: string;
  /** 0 when there was no HTTP answer. */
  httpStatus: number;
  responseBody: string;
  responseBodyTruncated: boolean;
  error: string;
}

export interface Delivery {
  name: string;
  eventId: string;
  eventType: string;
  targetName: string;
  trigger: string;
  state: string;
  attemptCount: number;
  createTime: string;
  updateTime: string;
  /** "" when none is due (one in flight, or a final state). */
  nextAttemptTime: string;
  /** Only in the single-delivery read, oldest first. */
  attempts?: Attempt[];
}

export interface DeliveryList {
  deliveries: Delivery[];
  nextPageToken: string;
}

/** The states in the order the filter chips show them, with their words and badge colour. */
export const DELIVERY_STATES: [state: string, kind: string, label: string, meaning: string][] = [
  ['PENDING', 'info', 'Pending', 'queued, or an attempt is in flight'],
  ['RETRYING', 'warn', 'Retrying', 'the last attempt failed; the next one is scheduled'],
  ['DELIVERED', 'ok', 'Delivered', 'the endpoint answered 2xx'],
  ['EXPIRED', 'danger', 'Expired', 'not acknowledged within 12 hours; no more attempts'],
  ['DISCARDED', 'muted', 'Discarded', 'the connector was disabled or deleted before it was delivered'],
  ['FAILED', 'danger', 'Failed', 'a test push whose one attempt failed'],
];
export const STATE_NAMES = DELIVERY_STATES.map((s) => s[0]);

export const TRIGGERS: [trigger: string, label: string][] = [
  ['EVENT', 'Event (published)'],
  ['SYNC', 'Sync'],
  ['RESEND', 'Resend'],
  ['REPLAY', 'Replay'],
  ['TEST', 'Test push'],
];

export const OUTCOME_TEXT: Record<string, string> = {
  SUCCESS: 'Success',
  HTTP_ERROR: 'HTTP error',
  TIMEOUT: 'Timeout',
  CONNECTION_REFUSED: 'Connection refused',
  CONNECTION_RESET: 'Connection reset',
  TLS_ERROR: 'TLS error',
  DNS_ERROR: 'DNS error',
  BLOCKED_ADDRESS: 'Blocked address',
  OTHER: 'Other failure',
};

export const stateInfo = (state: string) => DELIVERY_STATES.find((s) => s[0] === state);
export const triggerText = (trigger: string) => TRIGGERS.find((t) => t[0] === trigger)?.[1] ?? trigger;
export const outcomeText = (outcome: string) => OUTCOME_TEXT[outcome] ?? outcome;

/** "0.123s" → "123 ms", "12.5s" → "12.5 s". */
export function durationText(duration: string): string {
  const s = Number.parseFloat(duration);
  if (!Number.isFinite(s)) return duration;
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${Number(s.toFixed(2))} s`;
}

/** The first line of an answer's body (for summaries), at most `max` characters. */
export function firstLine(text: string, max = 160): string {
  const line = (text.split(/\r?\n/).find((l) => l.trim() !== '') ?? '').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** `/projects/{p}/dataconnectors/{dc}` — the API path and the console path of a connector alike. */
export const connectorPath = (projectId: string, connectorId: string) =>
  `/projects/${projectId}/dataconnectors/${connectorId}`;

/** The console page of a delivery, from its resource name. */
export function deliveryHref(name: string): string {
  return `/${name}`;
}

export interface DeliveryFilters {
  states: string[];
  trigger: string;
  eventId: string;
  device: string;
  /** RFC 3339, on createTime, half-open. */
  startTime: string;
  endTime: string;
}

export function listDeliveries(
  projectId: string,
  connectorId: string,
  filters: Partial<DeliveryFilters>,
  pageSize: number,
  pageToken = '',
): Promise<DeliveryList> {
  return api<DeliveryList>(
    'GET',
    `${connectorPath(projectId, connectorId)}/deliveries${query({
      state: filters.states,
      trigger: filters.trigger,
      eventId: filters.eventId,
      device: filters.device,
      startTime: filters.startTime,
      endTime: filters.endTime,
      pageSize,
      pageToken,
    })}`,
  );
}

export function getDelivery(projectId: string, connectorId: string, deliveryId: string): Promise<Delivery> {
  return api<Delivery>('GET', `${connectorPath(projectId, connectorId)}/deliveries/${deliveryId}`);
}

/** Why a connector fails, read from its log: its newest failed attempt, and since when no push has succeeded. */
export interface FailureSummary {
  /** The delivery whose attempt failed last (newest RETRYING or EXPIRED), with its attempts. */
  delivery: Delivery;
  attempt: Attempt;
  /** The newest DELIVERED delivery's last change (its success), or null when the log has none. */
  lastSuccessTime: string | null;
  /**
   * When the failures began: the first failed attempt after the last success, as near as can be told; null when
   * too many failing deliveries follow the last success to find the first (then only lastSuccessTime is known).
   */
  failingSince: string | null;
}

/**
 * The connector's failure, or null when its newest attempt on record succeeded (or it has no failed delivery in
 * the log). `buckets` (from :metricsHistory, per minute, oldest first) place the start of the failures to the
 * minute when it lies in the last 3 hours (and to the second by the failing deliveries created in that minute);
 * otherwise the oldest of the failing deliveries created after the last success does, when they are few.
 */
export async function readFailure(
  projectId: string,
  connectorId: string,
  buckets: { startTime: string; successCount: number; errorCount: number }[],
  failingSinceField?: string,
): Promise<FailureSummary | null> {
  const [failing, delivered] = await Promise.all([
    listDeliveries(projectId, connectorId, { states: ['RETRYING', 'EXPIRED'] }, 1),
    listDeliveries(projectId, connectorId, { states: ['DELIVERED'] }, 1),
  ]);
  const newest = failing.deliveries[0];
  if (!newest) return null;
  const delivery = await getDelivery(projectId, connectorId, idOf(newest.name));
  const attempt = delivery.attempts?.[delivery.attempts.length - 1];
  if (!attempt || attempt.outcome === 'SUCCESS') return null;
  const lastSuccessTime = delivered.deliveries[0]?.updateTime ?? null;
  if (lastSuccessTime !== null && Date.parse(lastSuccessTime) > Date.parse(attempt.attemptTime)) return null;

  let failingSince: string | null = failingSinceField || null;
  if (!failingSince) {
    // The minute after the newest one that had a success, if failures followed it within the window.
    let lastOk = -1;
    buckets.forEach((b, i) => {
      if (b.successCount > 0) lastOk = i;
    });
    const firstBad = buckets.findIndex((b, i) => i > lastOk && b.errorCount > 0);
    // A failing delivery is retried at least hourly for 12 hours, so an hour without attempts before the first
    // failed minute means nothing was failing before it.
    const windowStart = Date.now() - 3 * 3600 * 1000;
    const bad = buckets[firstBad];
    if (bad && (lastOk >= 0 || Date.parse(bad.startTime) > windowStart + 65 * 60_000)) {
      // To the second: the oldest failing delivery created in that minute, if one was.
      const minute = Date.parse(bad.startTime);
      const inMinute = await listDeliveries(
        projectId,
        connectorId,
        {
          states: ['RETRYING', 'EXPIRED'],
          startTime: new Date(minute).toISOString(),
          endTime: new Date(minute + 60_000).toISOString(),
        },
        100,
      );
      failingSince = inMinute.deliveries[inMinute.deliveries.length - 1]?.createTime ?? bad.startTime;
    } else {
      const since = await listDeliveries(
        projectId,
        connectorId,
        { states: ['RETRYING', 'EXPIRED'], startTime: lastSuccessTime ?? undefined },
        100,
      );
      const oldest = since.deliveries[since.deliveries.length - 1];
      failingSince = since.nextPageToken === '' && oldest ? oldest.createTime : null;
    }
  }
  return { delivery, attempt, lastSuccessTime, failingSince };
}
