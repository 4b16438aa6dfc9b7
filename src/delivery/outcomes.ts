// What an attempt's outcome does (contract §6.4-6.6), and recording it. `effectOf` is the rule, pure: an ack
// deletes the row; a failure reschedules it (the retry schedule), drops it (12 hours from enqueue) or, after 5 days
// of failures without a success, disables the connector and drops its queue. The recorder applies the effects of
// the outcomes that arrive together in one transaction (group commit), each outcome's effects all-or-nothing,
// with the attempt metrics and counters and the delivery log's attempts (extensions §X1: one record() per batch, no
// round trip per attempt); a success is recorded in the same loop turn it arrives.
import { afterFailure, afterSuccess, type ConnectorState } from '../domain/connector-status.ts';
import { dataConnectorName } from '../domain/names.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import { createFailureLog } from '../runtime/failure-log.ts';
import type { Logger } from '../runtime/logger.ts';
import type { DataConnectorRecord, DeliveryRecord } from '../store/contract/connector-repos.ts';
import type { LogOutcome } from '../store/contract/delivery-log.ts';
import type { Repos, Store } from '../store/contract/store.ts';
import type { ClaimedDelivery } from './claim.ts';
import { dropQueue, leaseHalfOver } from './claim.ts';
import { loggedState, logOutcomeOf } from './delivery-log.ts';
import { attemptCounterDeltas, bump, recordAttemptMetrics, series, type AttemptSample } from './metrics.ts';
import { nextAttemptTime } from './retry.ts';
import type { AttemptOutcome } from './types.ts';

/** An attempt that ended: the row and connector it was made for, how it went, and when it started and ended (ms). */
export interface Finished {
  item: ClaimedDelivery;
  outcome: AttemptOutcome;
  /** The attempt's start: its time in the delivery log. */
  startMs: number;
  endMs: number;
}

export interface RunReport {
  attempted: number;
  acked: number;
  failed: number;
  /** Rows removed without acknowledgement: 12-hour expiry, or the queue dropped by an auto-disable. */
  dropped: number;
}

/** What one outcome changes. `state`: the connector's new status and failingSince, or null when unchanged. */
export type Effect =
  | { kind: 'ack'; state: ConnectorState | null }
  /** Disabled (or disabled and re-enabled, its queue dropped) while the attempt was in flight: counted, not retried. */
  | { kind: 'discard' }
  | { kind: 'retry'; attempts: number; dueMs: number; state: ConnectorState | null }
  /** The next attempt would fall at or after 12 h from enqueue: the row goes now, without it. */
  | { kind: 'expire'; state: ConnectorState | null }
  /** 5 days of failures without a success: SYSTEM_DISABLED, the whole queue dropped. */
  | { kind: 'disable'; state: ConnectorState };

const changed = (before: ConnectorState, after: ConnectorState): ConnectorState | null =>
  after.status !== before.status || after.failingSince !== before.failingSince
    ? { status: after.status, failingSince: after.failingSince }
    : null;

/** The effect of an attempt on `row` that ended at `endMs` (ms) with `outcome`, for the connector as it is now. */
export function effectOf(
  connector: ConnectorState,
  row: Pick<DeliveryRecord, 'attempts' | 'enqueueTime'>,
  outcome: AttemptOutcome,
  endMs: number,
): Effect {
  if (outcome.ok) return { kind: 'ack', state: changed(connector, afterSuccess(connector)) };
  if (connector.status !== 'ACTIVE') return { kind: 'discard' };
  const next = afterFailure(connector, Math.floor(endMs * 1000));
  if (next.dropQueue) return { kind: 'disable', state: { status: next.status, failingSince: next.failingSince } };
  const attempts = row.attempts + 1;
  const dueMs = nextAttemptTime(
    attempts,
    endMs,
    row.enqueueTime / 1000,
    outcome.responseTimeMs,
    outcome.retryAfterSeconds,
  );
  const state = changed(connector, next);
  return dueMs === null ? { kind: 'expire', state } : { kind: 'retry', attempts, dueMs, state };
}

/** Whether the effect writes the connector's state (status, failingSince). */
const writesState = (effect: Effect): effect is Effect & { state: ConnectorState } =>
  effect.kind !== 'discard' && effect.state !== null;

/** A connector the recorder disabled (5 days of failures), after its transaction committed. */
export interface Disabled {
  connector: Pick<DataConnectorRecord, 'id' | 'projectId'>;
  failingSince: number | null;
  dropped: number;
}

/** What the recorder tells after a commit: the changes of a connector's state it recorded. */
export interface OutcomeNotices {
  /** 5 days of failures: disabled, queue dropped. */
  disabled(d: Disabled): void;
  /** The first failure since the last success (failingSince set). */
  failing(connector: Pick<DataConnectorRecord, 'id' | 'projectId'>, outcome: AttemptOutcome): void;
  /** A success after failures (failingSince cleared). */
  recovered(connector: Pick<DataConnectorRecord, 'id' | 'projectId'>): void;
}

export interface OutcomeRecorder {
  /** Records the outcome with the others that arrive in this loop turn; resolves once committed (or failed). */
  record(done: Finished): Promise<RunReport>;
  /** Resolves when every outcome handed in so far is recorded. */
  settled(): Promise<void>;
}

/** What one group transaction gathers besides the row and connector writes. */
interface Batch {
  samples: AttemptSample[];
  counters: Record<string, number>;
  /** Told once the transaction has committed. */
  notices: Array<(n: OutcomeNotices) => void>;
  /**
   * Each connector as this transaction sees it: read once per batch, then kept up to date with the batch's own state
   * changes. Null: deleted.
   */
  connectors: Map<string, DataConnectorRecord | null>;
  /** Of those, the ones read with getForUpdate (on PostgreSQL: row locked until the commit), to write their state. */
  locked: Set<string>;
  /** Rows to delete at the end of the batch, in one statement: acknowledged, and discarded. */
  acked: number[];
  discarded: number[];
  /** Whether an attempt under a lease ending then is recorded late (less than half of it left: leaseHalfOver). */
  late: (leaseUntil: number) => boolean;
  /** Connectors this batch disabled: their queues are dropped after the commit, and counted in `report`. */
  disabled: Array<Omit<Disabled, 'dropped'> & { report: RunReport }>;
  /** The delivery log's record of each outcome, written once at the end of the batch; null: the log is off. */
  log: LogOutcome[] | null;
}

/** Deletes the batch's acknowledged and discarded rows; counts the acknowledged ones still there. */
async function deleteFinished(tx: Repos, batch: Batch): Promise<void> {
  if (batch.acked.length > 0) await tx.deliveries.deleteCounted(batch.acked, series.deliveries('acked'));
  if (batch.discarded.length > 0) await tx.deliveries.deleteMany(batch.discarded);
}

function attemptedReports(n: number): RunReport[] {
  const reports: RunReport[] = [];
  for (let i = 0; i < n; i++) reports.push({ attempted: 1, acked: 0, failed: 0, dropped: 0 });
  return reports;
}

/** A retry's due time (ms) as the queue row and the log keep it (micros, never before the computed time). */
const dueMicros = (dueMs: number): number => Math.ceil(dueMs * 1000);

/** Applies one outcome's effect inside the group transaction. */
async function apply(tx: Repos, done: Finished, report: RunReport, batch: Batch, log: Logger): Promise<void> {
  const { item, outcome, endMs } = done;
  const row = item.delivery;
  const id = item.connector.id;
  let connector = batch.connectors.get(id) ?? null;
  // Deleted meanwhile: its queue and metrics are gone with it.
  if (!connector) return;
  let effect = effectOf(connector, row, outcome, endMs);
  if (writesState(effect) && !batch.locked.has(id)) {
    batch.locked.add(id);
    connector = await tx.dataConnectors.getForUpdate(id);
    batch.connectors.set(id, connector);
    if (!connector) return;
    effect = effectOf(connector, row, outcome, endMs);
  }
  const end = Math.floor(endMs * 1000);
  // Every attempt of a connector that is still there is logged, whatever became of its row (a late acknowledgement
  // too: the receiver has the event).
  batch.log?.push(
    logOutcomeOf(row, outcome, done.startMs, {
      time: end,
      state: loggedState(effect.kind),
      nextAttemptTime: effect.kind === 'retry' ? dueMicros(effect.dueMs) : null,
    }),
  );
  batch.samples.push({
    connectorId: connector.id,
    time: end,
    reason: outcome.reason,
    ok: outcome.ok,
    responseTimeMs: outcome.responseTimeMs,
  });
  if (outcome.ok) report.acked = 1;
  else {
    report.failed = 1;
    log.debug(
      {
        connector: dataConnectorName(connector.projectId, connector.id),
        eventId: row.eventId,
        attempt: row.attempts + 1,
        reason: outcome.reason,
        status: outcome.status,
        message: outcome.message,
      },
      'push attempt failed',
    );
  }

  if (writesState(effect)) {
    await tx.dataConnectors.updateState(connector.id, effect.state.status, effect.state.failingSince, end);
    batch.connectors.set(connector.id, {
      ...connector,
      status: effect.state.status,
      failingSince: effect.state.failingSince,
      updateTime: end,
    });
    if (connector.failingSince === null && effect.state.failingSince !== null)
      batch.notices.push((n) => n.failing(connector, outcome));
    if (connector.failingSince !== null && effect.state.failingSince === null)
      batch.notices.push((n) => n.recovered(connector));
  }
  switch (effect.kind) {
    case 'ack':
      // Recorded with less than half its lease left (the process was paused): the row may be another process's now,
      // its attempt open at the endpoint. Deleted only under this attempt's lease, so that one stays counted in the
      // cluster's per-connector limit (as a failure, below); the other attempt's outcome settles the row.
      if (row.leaseUntil !== null && batch.late(row.leaseUntil)) {
        if (await tx.deliveries.delete(row.id, row.leaseUntil)) bump(batch.counters, series.deliveries('acked'));
      } else {
        batch.acked.push(row.id);
      }
      return;
    case 'discard':
      batch.discarded.push(row.id);
      return;
    case 'retry':
      // Under the attempt's lease only (as the drop below): a row another process claimed after that lease ended is
      // its attempt's now.
      await tx.deliveries.reschedule(row.id, effect.attempts, dueMicros(effect.dueMs), row.leaseUntil);
      return;
    case 'expire':
      if (await tx.deliveries.delete(row.id, row.leaseUntil)) {
        bump(batch.counters, series.deliveries('dropped'));
        report.dropped += 1;
      }
      return;
    case 'disable':
      // The queue, this row included, is dropped after the commit, a piece at a time (dropQueue).
      batch.disabled.push({ connector, failingSince: effect.state.failingSince, report });
  }
}

/**
 * The group commit of outcomes. `notices` hears, after the commit, of the connectors whose state the batch changed.
 * A batch that fails to record leaves its rows leased: they come due again when the lease ends.
 */
export function createOutcomeRecorder(
  deps: {
    store: Store;
    logger: Logger;
    clock: Clock;
    leaseMicros: number;
    /** Whether attempts (and the rows a disable drops) go to the delivery log. Default true. */
    deliveryLog?: boolean;
  },
  notices: OutcomeNotices,
): OutcomeRecorder {
  const logging = deps.deliveryLog ?? true;
  const log = deps.logger;
  // While the database is unreachable every batch fails: logged when that starts and when it ends.
  const failures = createFailureLog(
    log,
    'error',
    {
      failing: 'delivery engine: recording attempt outcomes failed',
      recovered: 'delivery engine: recording attempt outcomes works again',
    },
    () => deps.clock.now(),
  );
  let pending: Array<{ done: Finished; resolve: (r: RunReport) => void }> = [];
  let flushing: Promise<void> | null = null;
  const takeBatch = () => {
    const b = pending;
    pending = [];
    return b;
  };

  async function flush(): Promise<void> {
    while (pending.length > 0) {
      // Taken when the transaction runs, not when it is asked for: the store starts a transaction one loop turn
      // after it is requested, so the outcomes that arrive in this turn join it, and it shares the commit of
      // whatever else this turn asked for (no extra turn of its own before it, which widened the window in
      // which a crash sends an acknowledged event again).
      let taken: typeof pending | null = null;
      // Set by the transaction below, or by its failure.
      let reports: RunReport[] = [];
      let told: Batch['notices'] = [];
      let disabled: Batch['disabled'] = [];
      try {
        // Re-runnable: each call starts its reports over.
        await deps.store.transaction(
          async (tx) => {
            taken ??= takeBatch();
            reports = attemptedReports(taken.length);
            const now = nowMicros(deps);
            const batch: Batch = {
              samples: [],
              counters: {},
              notices: [],
              connectors: new Map(),
              locked: new Set(),
              acked: [],
              discarded: [],
              disabled: [],
              late: (leaseUntil) => leaseHalfOver(leaseUntil, now, deps.leaseMicros),
              log: logging ? [] : null,
            };
            // Every connector of the batch in one read, without a lock: most outcomes change nothing of the connector (an
            // acknowledgement to a healthy one), and on PostgreSQL a row lock taken by every batch made the outcome
            // batches of all processes wait for each other (the largest wait with two processes). An outcome that
            // changes its state reads it again locked (apply). One read for all: a batch of outcomes for 32 connectors
            // made 32 round trips.
            const ids = [...new Set(taken.map((t) => t.done.item.connector.id))];
            const read = await tx.dataConnectors.getMany(ids);
            for (const id of ids) batch.connectors.set(id, read.get(id) ?? null);
            for (let i = 0; i < taken.length; i++) await apply(tx, taken[i]!.done, reports[i]!, batch, log);
            await deleteFinished(tx, batch);
            if (batch.log !== null && batch.log.length > 0) await tx.deliveryLog.record(batch.log);
            await recordAttemptMetrics(tx, batch.samples);
            attemptCounterDeltas(batch.samples, batch.counters);
            await tx.connectorMetrics.addCounters(batch.counters);
            told = batch.notices;
            disabled = batch.disabled;
          },
          { rerunnable: true, background: true },
        );
        failures.succeeded();
      } catch (err) {
        taken ??= takeBatch();
        reports = attemptedReports(taken.length);
        told = [];
        disabled = [];
        failures.failed(err);
      }
      for (const tell of told) tell(notices);
      for (const d of disabled) {
        // Outcomes wait meanwhile (rows stay leased; pushes go on). Should the database fail, the rest of the queue
        // is dropped as it comes due (claimDue), and never sent: the connector is disabled already.
        const logAt = logging ? nowMicros(deps) : undefined;
        const dropped = await dropQueue(deps.store, d.connector.id, logAt).catch((err: unknown) => {
          log.warn(
            { err, connector: dataConnectorName(d.connector.projectId, d.connector.id) },
            "delivery engine: dropping a disabled connector's queue failed; the rest is dropped as it comes due",
          );
          return 0;
        });
        d.report.dropped += dropped;
        notices.disabled({ connector: d.connector, failingSince: d.failingSince, dropped });
      }
      // (The transaction took the batch unless it failed before running at all.)
      (taken ?? takeBatch()).forEach((b, i) => b.resolve(reports[i]!));
    }
    flushing = null;
  }

  return {
    record(done) {
      return new Promise((resolve) => {
        pending.push({ done, resolve });
        if (!flushing) flushing = flush();
      });
    },
    async settled() {
      while (flushing) await flushing;
    },
  };
}
