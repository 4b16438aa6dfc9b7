// The alerts' timers (extensions §X5), durable rows in the store driven by a periodic pass: pending conditions whose
// trigger delay is over trigger their alert, and open alerts whose timerDue has come escalate, remind or become
// unacknowledged (transitions.ts). A restart loses none (the rows are in the store) and, with several processes on
// PostgreSQL, one process leads the pass; should two run it at once, a condition is taken by the one that deletes it
// and an alert's timer by the one that holds its row lock and still finds it due, so a timer fires once.
import { dataConnectorName, deviceName } from '../domain/names.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { IdGenerator } from '../runtime/ids.ts';
import type { Logger } from '../runtime/logger.ts';
import { createPeriodic } from '../runtime/periodic.ts';
import type { AlertRecord, ConditionRecord } from '../store/contract/alerting.ts';
import { leadsJob } from '../store/jobs/cluster.ts';
import type { DeviceRecord } from '../store/contract/records.ts';
import type { Repos, Store } from '../store/contract/store.ts';
import { checkOffline } from './offline.ts';
import { ruleById } from './rules.ts';
import type { AnnounceAlert } from './stream.ts';
import { fireTimer, triggerAlert, type Target } from './transitions.ts';

/** Timers taken per pass, of each kind: a backlog (after an outage) is worked through a bounded piece at a time. */
const PIECE = 200;
/** The silent-sensor check (offline.ts) runs at most this often (micros). */
const OFFLINE_CHECK_EVERY = 60_000_000;

export interface TimerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  ids: IdGenerator;
  announce: AnnounceAlert;
  notify(): void;
}

export interface AlertTimers {
  /** Fires every timer due now; returns how many transitions it made. */
  runOnce(): Promise<number>;
  start(periodMs?: number): void;
  stop(): Promise<void>;
}

/** The condition's target: its device, or its data connector (a dataConnector rule's). */
async function targetOf(
  tx: Repos,
  c: ConditionRecord,
): Promise<{ target: Target; device: DeviceRecord | null } | null> {
  const device = await tx.devices.get(c.targetId);
  if (device) {
    if (device.projectId !== c.projectId) return null;
    return { target: { id: device.id, name: deviceName(device.projectId, device.id), labels: device.labels }, device };
  }
  const connector = await tx.dataConnectors.get(c.targetId);
  if (!connector || connector.projectId !== c.projectId) return null;
  return { target: { id: connector.id, name: dataConnectorName(c.projectId, connector.id), labels: {} }, device: null };
}

export function createAlertTimers(deps: TimerDeps): AlertTimers {
  const { store } = deps;

  async function fireCondition(c: ConditionRecord, now: number): Promise<boolean> {
    const result = await store.transaction(async (tx) => {
      // Taken by whoever deletes it: another process, or an event that cleared it, may have been first.
      if (!(await tx.conditions.delete(c.ruleId, c.targetId))) return null;
      const rule = await ruleById(tx, c.ruleId);
      if (!rule?.enabled) return null;
      const found = await targetOf(tx, c);
      if (!found) return null;
      const value = c.lastValue === '' ? undefined : (JSON.parse(c.lastValue) as unknown);
      const alert = await triggerAlert(tx, rule, found.target, value, null, deps.ids.next(), now);
      return alert ? { alert, device: found.device } : null;
    });
    if (result) deps.announce(result.alert, result.device);
    return result !== null;
  }

  async function fireAlert(id: string, now: number): Promise<boolean> {
    const result = await store.transaction(async (tx) => {
      const a = await tx.alerts.getForUpdate(id);
      if (!a || a.state === 'RESOLVED' || a.timerDue === null || a.timerDue > now) return null;
      const rule = await ruleById(tx, a.ruleId);
      if (!rule) return null;
      if (!rule.enabled) {
        // A disabled rule neither escalates, reminds nor un-acknowledges: its open alerts wait to be resolved by hand
        // (or by an event once it is enabled again).
        a.timerDue = null;
        await tx.alerts.update(a);
        return null;
      }
      const alert: AlertRecord = await fireTimer(tx, a, rule, now);
      const device = alert.targetName.includes('/devices/') ? await tx.devices.get(alert.targetId) : null;
      return { alert, device };
    });
    if (result) deps.announce(result.alert, result.device);
    return result !== null;
  }

  let lastOfflineCheck = -Infinity;

  async function runOnce(): Promise<number> {
    const now = nowMicros(deps);
    let fired = 0;
    if (now - lastOfflineCheck >= OFFLINE_CHECK_EVERY) {
      lastOfflineCheck = now;
      for (const { alert, device } of await checkOffline(store, deps.ids, now)) {
        deps.announce(alert, device);
        fired++;
      }
    }
    for (const c of await store.conditions.due(now, PIECE)) if (await fireCondition(c, now)) fired++;
    for (const id of await store.alerts.due(now, PIECE)) if (await fireAlert(id, now)) fired++;
    if (fired > 0) deps.notify();
    return fired;
  }

  const periodic = createPeriodic(
    async () => {
      if (await leadsJob(store, 'alert-timers')) await runOnce();
    },
    deps.logger,
    {
      failing: 'alerts: firing due timers failed; they are tried again at the next pass',
      recovered: 'alerts: firing due timers works again',
    },
    () => deps.clock.now(),
  );

  return {
    runOnce,
    start: (periodMs = 1000) => periodic.start(periodMs),
    stop: () => periodic.stop(),
  };
}
