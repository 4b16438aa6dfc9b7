// The notifier (extensions §X5): sends the notifications that alert transitions queue in the outbox, at least once,
// and records how each went on its alert. It leases due rows in bounded batches (on a store several processes share,
// a row is sent by the process whose claim leased it), sends a WEBHOOK through the delivery `Dispatcher` (the SSRF
// guard, trust store, 10 s timeout and `X-Service-Signature` of a data connector's push) and an EMAIL through the
// `Mailer` (email.ts), then in one transaction sets the alert's entry (SENT, RETRYING with the error, or FAILED) and
// deletes the row or reschedules it by the push retry schedule (delivery/retry.ts: 8 s doubling to 1 h, given up
// 12 h after it was queued; an SMTP 5xx refusal at once). Both writes are fenced by the lease the row was claimed
// under, so a late outcome never overwrites another process's. Tests drive it with a fake clock through runOnce();
// the service runs it with start()/stop(), woken by the transitions after their commit and polling every 250 ms.
import type { SecretBox } from '../auth/secret-box.ts';
import { leaseHalfOver } from '../delivery/claim.ts';
import { createOpenedSecrets } from '../delivery/opened-secrets.ts';
import { isExpired, nextAttemptTime } from '../delivery/retry.ts';
import { ALERT_TRANSITION_HEADER } from '../delivery/push-headers.ts';
import type { Dispatcher } from '../delivery/types.ts';
import { type Clock, nowMicros } from '../runtime/clock.ts';
import { createFailureLog } from '../runtime/failure-log.ts';
import type { Logger } from '../runtime/logger.ts';
import type { AlertNotificationRecord, OutboxRecord } from '../store/contract/alerting.ts';
import type { Store } from '../store/contract/store.ts';
import type { Mailer, MailMessage } from './email.ts';

/** What the notifier uses of the service. */
export interface NotifierDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Sends webhooks: the service's push dispatcher (the same guard, trust store, timeout and signing as a push). */
  dispatcher: Dispatcher;
  /** Sends e-mail; null when SENSORCLOUD_SMTP_URL is not set (an e-mail notification then fails and is retried). */
  mailer: Mailer | null;
  /** Opens a webhook's sealed signature secret. */
  secretBox: Pick<SecretBox, 'open'>;
}

export interface NotifierOptions {
  /** Fallback poll for due rows (retries, rows queued by another process), ms. Default 250. */
  pollIntervalMs?: number;
  /** How long a claimed row stays leased, ms; must exceed a send's longest time (30 s for e-mail). Default 60 000. */
  leaseMs?: number;
  /** Rows leased per claim. Default 16. */
  batchSize?: number;
  /** Sends in flight at once while running. Default 32. */
  maxInFlight?: number;
}

/** What runOnce() did. */
export interface NotifierReport {
  /** Rows leased. */
  claimed: number;
  sent: number;
  /** Failed attempts to be tried again. */
  retrying: number;
  /** Given up: 12 hours of failures, a permanent refusal, or a row that cannot be sent. */
  failed: number;
  /** Not recorded: the lease ran out (another process may have it) or the outcome's transaction failed. */
  lost: number;
}

export interface Notifier {
  /** Starts the background loop: polls every pollIntervalMs, and claims at once when woken. */
  start(): void;
  /** Stops claiming and waits for the sends in flight and their outcomes. */
  stop(): Promise<void>;
  /** Claims and sends everything due now, waiting for every outcome to be recorded (tests, tools). */
  runOnce(): Promise<NotifierReport>;
  /** Asks the running loop to claim now (a transition queued notifications and committed). */
  wake(): void;
}

/** The result of one attempt, whatever the channel. */
export type SendResult =
  | { ok: true }
  | {
      ok: false;
      /** For the alert's entry and the log: never a secret. */
      error: string;
      /** Retrying would get the same answer (an SMTP 5xx, a row that cannot be read): give up now. */
      permanent: boolean;
      /** Lengthens the next interval for slow endpoints (retry.ts); 0 when unknown. */
      responseTimeMs: number;
      retryAfterSeconds?: number;
    };

/** What an attempt's result does to its row and entry. Micros, as the store keeps time. */
export type Effect =
  | { kind: 'sent' }
  | { kind: 'retry'; attempts: number; dueTime: number; error: string }
  | { kind: 'failed'; error: string };

const ENTRY_OUTCOME = { sent: 'SENT', retry: 'RETRYING', failed: 'FAILED' } as const;

/** An attempt's effect (pure): the push retry schedule after failed attempt `row.attempts + 1`, or give up. */
export function effectOf(
  row: Pick<OutboxRecord, 'attempts' | 'enqueueTime'>,
  result: SendResult,
  nowMs: number,
): Effect {
  if (result.ok) return { kind: 'sent' };
  if (result.permanent) return { kind: 'failed', error: result.error };
  const n = row.attempts + 1;
  const due = nextAttemptTime(n, nowMs, row.enqueueTime / 1000, result.responseTimeMs, result.retryAfterSeconds);
  if (due === null) return { kind: 'failed', error: result.error };
  return { kind: 'retry', attempts: n, dueTime: Math.ceil(due * 1000), error: result.error };
}

/** The error of a row given up before an attempt. */
const EXPIRED_ERROR = 'not sent within 12 hours of being queued';

interface WebhookPayload {
  url: string;
  headers: Record<string, string>;
  signatureSecretSealed: string;
  body: string;
}

/** A row's payload as written by alerts/notify.ts; null when it is not what that writes. */
export function webhookPayloadOf(payload: string): WebhookPayload | null {
  const p = parseObject(payload);
  if (p === null || typeof p.url !== 'string' || typeof p.body !== 'string') return null;
  const headers: Record<string, string> = {};
  if (p.headers !== undefined) {
    if (typeof p.headers !== 'object' || p.headers === null || Array.isArray(p.headers)) return null;
    for (const [name, value] of Object.entries(p.headers)) {
      if (typeof value !== 'string') return null;
      headers[name] = value;
    }
  }
  const sealed = p.signatureSecretSealed ?? '';
  if (typeof sealed !== 'string') return null;
  return { url: p.url, headers, signatureSecretSealed: sealed, body: p.body };
}

export function mailPayloadOf(payload: string): MailMessage | null {
  const p = parseObject(payload);
  if (p === null || !Array.isArray(p.to) || !p.to.every((a) => typeof a === 'string')) return null;
  if (typeof p.subject !== 'string' || typeof p.text !== 'string') return null;
  return { to: p.to as string[], subject: p.subject, text: p.text };
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** Where a notification went, for the log: a webhook's origin only (a path or query may be a credential). */
function logTargetOf(row: OutboxRecord): string {
  if (row.type === 'WEBHOOK') {
    const url = webhookPayloadOf(row.payload)?.url;
    try {
      return url === undefined ? '(unreadable)' : new URL(url).origin;
    } catch {
      return '(not a URL)';
    }
  }
  const to = mailPayloadOf(row.payload)?.to.length;
  return to === undefined ? '(unreadable)' : `${to} recipient${to === 1 ? '' : 's'}`;
}

export function createNotifier(deps: NotifierDeps, options: NotifierOptions = {}): Notifier {
  const { store, clock, logger, dispatcher, mailer } = deps;
  const pollIntervalMs = options.pollIntervalMs ?? 250;
  const leaseMicros = (options.leaseMs ?? 60_000) * 1000;
  const batchSize = options.batchSize ?? 16;
  const maxInFlight = options.maxInFlight ?? 32;
  const openSecret = createOpenedSecrets(deps.secretBox);
  const claimFailures = createFailureLog(
    logger,
    'error',
    {
      failing: 'notifier: claiming due notifications failed',
      recovered: 'notifier: claiming due notifications works again',
    },
    () => clock.now(),
  );

  async function send(row: OutboxRecord): Promise<SendResult> {
    const unreadable = (): SendResult => ({
      ok: false,
      error: `the queued ${row.type} notification cannot be read`,
      permanent: true,
      responseTimeMs: 0,
    });
    if (row.type === 'WEBHOOK') {
      const payload = webhookPayloadOf(row.payload);
      if (payload === null) return unreadable();
      let signatureSecret: string;
      try {
        signatureSecret = openSecret(payload.signatureSecretSealed);
      } catch {
        // Sealed under another master key: no later attempt opens it either.
        return { ok: false, error: 'the signature secret cannot be opened', permanent: true, responseTimeMs: 0 };
      }
      try {
        const outcome = await dispatcher.send(
          {
            url: payload.url,
            headers: payload.headers,
            signatureSecret,
            probe: false,
            // A reserved header: the dispatcher sets it from here, never from the custom headers.
            alertTransition: payload.headers[ALERT_TRANSITION_HEADER],
          },
          Buffer.from(payload.body, 'utf8'),
        );
        if (outcome.ok) return { ok: true };
        return {
          ok: false,
          error: outcome.message,
          permanent: false,
          responseTimeMs: outcome.responseTimeMs,
          retryAfterSeconds: outcome.retryAfterSeconds,
        };
      } catch (err) {
        // A Dispatcher never throws; if one does, the attempt failed like a dropped connection.
        logger.error({ err, alertId: row.alertId }, 'notifier: the dispatcher threw');
        return { ok: false, error: 'the webhook could not be sent', permanent: false, responseTimeMs: 0 };
      }
    }
    if (row.type === 'EMAIL') {
      const message = mailPayloadOf(row.payload);
      if (message === null) return unreadable();
      if (mailer === null)
        return {
          ok: false,
          error: 'e-mail is not configured (SENSORCLOUD_SMTP_URL)',
          permanent: false,
          responseTimeMs: 0,
        };
      const started = clock.now();
      try {
        const result = await mailer.send(message);
        if (result.ok) return { ok: true };
        return { ...result, responseTimeMs: Math.max(0, clock.now() - started) };
      } catch (err) {
        logger.error({ err, alertId: row.alertId }, 'notifier: the mailer threw');
        return { ok: false, error: 'the e-mail could not be sent', permanent: false, responseTimeMs: 0 };
      }
    }
    return unreadable();
  }

  /**
   * Writes the effect: the alert's entry and the row, in one transaction, only while the row holds the lease it was
   * claimed under. The alert is locked first, as a transition does before it queues rows. False when fenced out.
   */
  async function record(row: OutboxRecord, effect: Effect): Promise<boolean> {
    const leaseUntil = row.leaseUntil!;
    return store.transaction(async (tx) => {
      const alert = await tx.alerts.getForUpdate(row.alertId);
      const fenced =
        effect.kind === 'retry'
          ? await tx.outbox.reschedule(row.id, effect.attempts, effect.dueTime, leaseUntil)
          : await tx.outbox.delete(row.id, leaseUntil);
      if (!fenced) return false;
      const entry: AlertNotificationRecord | undefined = alert?.notifications[row.entry];
      if (alert && entry) {
        alert.notifications[row.entry] = {
          ...entry,
          outcome: ENTRY_OUTCOME[effect.kind],
          error: effect.kind === 'sent' ? '' : effect.error,
        };
        await tx.alerts.update(alert);
      }
      return true;
    });
  }

  /** One row: send it (unless expired or its lease is half gone), then record what happened. */
  async function attempt(row: OutboxRecord): Promise<keyof Omit<NotifierReport, 'claimed'>> {
    // A lease half over is not begun (as a push): the row comes due again when it ends.
    if (leaseHalfOver(row.leaseUntil ?? 0, nowMicros(deps), leaseMicros)) return 'lost';
    // Queued 12 hours ago or more (the process was down, say): given up without an attempt, as a push is dropped.
    const expired = isExpired(row.enqueueTime / 1000, clock.now());
    const effect: Effect = expired
      ? { kind: 'failed', error: EXPIRED_ERROR }
      : effectOf(row, await send(row), clock.now());
    let recorded: boolean;
    try {
      recorded = await record(row, effect);
    } catch (err) {
      // The row stays leased and comes due when its lease ends: sent again if this attempt was a success.
      logger.error({ err, alertId: row.alertId, entry: row.entry }, 'notifier: recording an outcome failed');
      return 'lost';
    }
    if (!recorded) return 'lost';
    if (effect.kind === 'failed')
      logger.warn(
        {
          alertId: row.alertId,
          entry: row.entry,
          type: row.type,
          target: logTargetOf(row),
          attempts: row.attempts + (expired ? 0 : 1),
          error: effect.error,
        },
        'alert notification given up',
      );
    return effect.kind === 'retry' ? 'retrying' : effect.kind;
  }

  async function claim(limit: number): Promise<OutboxRecord[]> {
    const now = nowMicros(deps);
    return store.outbox.claim(now, now + leaseMicros, limit);
  }

  // The background loop: one claiming pass at a time; sends run beside it, up to maxInFlight.
  let started = false;
  let stopping = false;
  let timer: NodeJS.Timeout | null = null;
  let passing: Promise<void> | null = null;
  let passAgain = false;
  const inFlight = new Set<Promise<unknown>>();
  const taking = (): boolean => started && !stopping;

  function launch(row: OutboxRecord): void {
    const running: Promise<unknown> = attempt(row)
      .catch((err: unknown) => logger.error({ err, alertId: row.alertId }, 'notifier: an attempt failed'))
      .finally(() => {
        inFlight.delete(running);
        if (taking()) pass();
      });
    inFlight.add(running);
  }

  function pass(): void {
    if (passing) {
      passAgain = true;
      return;
    }
    passing = (async () => {
      do {
        passAgain = false;
        const limit = Math.min(batchSize, maxInFlight - inFlight.size);
        if (limit <= 0 || !taking()) break;
        let rows: OutboxRecord[];
        try {
          rows = await claim(limit);
          claimFailures.succeeded();
        } catch (err) {
          claimFailures.failed(err);
          break;
        }
        for (const row of rows) launch(row);
        // A full batch: more may be due.
        if (rows.length === limit) passAgain = true;
      } while (passAgain && taking());
    })().finally(() => {
      passing = null;
    });
  }

  function schedulePoll(): void {
    timer = setTimeout(() => {
      if (!taking()) return;
      pass();
      schedulePoll();
    }, pollIntervalMs);
    timer.unref();
  }

  return {
    start() {
      if (started) return;
      started = true;
      stopping = false;
      pass();
      schedulePoll();
    },
    async stop() {
      if (!started) return;
      stopping = true;
      if (timer) clearTimeout(timer);
      timer = null;
      while (passing || inFlight.size > 0) await Promise.allSettled([passing, ...inFlight]);
      started = false;
      stopping = false;
    },
    async runOnce() {
      const report: NotifierReport = { claimed: 0, sent: 0, retrying: 0, failed: 0, lost: 0 };
      for (;;) {
        const rows = await claim(batchSize);
        if (rows.length === 0) return report;
        report.claimed += rows.length;
        for (const result of await Promise.all(rows.map(attempt))) report[result]++;
      }
    },
    wake() {
      if (taking()) pass();
    },
  };
}
