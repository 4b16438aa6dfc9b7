// An alert's lifecycle (extensions §X5), inside the caller's transaction: trigger, escalate, remind, acknowledge,
// un-acknowledge and resolve, each writing the alert with its next timer (timerDue) and queueing the notifications it
// causes (notify.ts) in the same transaction, so a crash leaves a transition with its notifications or neither.
//
// Timers: a TRIGGERED alert at a level with `escalateAfter` escalates then to the next level (its actions run), or,
// at the last level with reminderNotifications, reminds (the level's actions run again, every escalateAfter). An
// ACKNOWLEDGED alert becomes TRIGGERED again after unacknowledgesAfter ("0s": never): its level's actions run again
// and the escalation timer restarts. A resolved alert has no timer.
import { DEFAULT_UNACKNOWLEDGES_AFTER, durationMicros, type RuleSpec } from '../domain/rule-spec.ts';
import type { AlertRecord } from '../store/contract/alerting.ts';
import type { Repos } from '../store/contract/store.ts';
import type { DeviceEvent } from '../wire/events.ts';
import { queueNotifications, type NotifyContext, type Transition } from './notify.ts';

/** A rule as the alerts engine reads it: its record's fields and its parsed settings. */
export interface RuleView {
  id: string;
  projectId: string;
  displayName: string;
  enabled: boolean;
  spec: RuleSpec;
}

/** What a transition is about: a device (with its labels) or a data connector. */
export interface Target {
  id: string;
  name: string;
  labels: Readonly<Record<string, string>>;
}

/** When the alert's next timed transition is due (micros), from `now`; null when none. */
export function nextTimer(
  alert: Pick<AlertRecord, 'state' | 'escalationLevel'>,
  spec: RuleSpec,
  now: number,
): number | null {
  if (alert.state === 'RESOLVED') return null;
  if (alert.state === 'ACKNOWLEDGED') {
    const after = durationMicros(spec.unacknowledgesAfter ?? DEFAULT_UNACKNOWLEDGES_AFTER);
    return after === null || after === 0 ? null : now + after;
  }
  const after = durationMicros(spec.escalationLevels[alert.escalationLevel]?.escalateAfter);
  if (after === null) return null;
  const more = alert.escalationLevel + 1 < spec.escalationLevels.length;
  return more || spec.reminderNotifications ? now + Math.max(after, 1_000_000) : null;
}

async function contextOf(
  tx: Repos,
  rule: RuleView,
  target: Pick<Target, 'labels'>,
  event: DeviceEvent | null,
): Promise<NotifyContext> {
  const project = await tx.projects.get(rule.projectId);
  return {
    rule: { id: rule.id, displayName: rule.displayName, spec: rule.spec },
    projectDisplayName: project?.displayName ?? rule.projectId,
    deviceLabels: target.labels,
    event,
  };
}

/** The labels of the alert's target when it is a device (its placeholders read them). */
async function labelsOf(tx: Repos, alert: AlertRecord): Promise<Record<string, string>> {
  if (!alert.targetName.includes('/devices/')) return {};
  return (await tx.devices.get(alert.targetId))?.labels ?? {};
}

/**
 * Writes the alert with its next timer, and queues the notifications of `transition` (none: null). The context its
 * messages read (the project, the device's labels) is read only then.
 */
async function write(
  tx: Repos,
  alert: AlertRecord,
  rule: RuleView,
  transition: Transition | null,
  context: () => Promise<NotifyContext>,
  now: number,
): Promise<AlertRecord> {
  if (transition !== null) await queueNotifications(tx, alert, transition, await context(), now);
  alert.timerDue = nextTimer(alert, rule.spec, now);
  alert.updateTime = now;
  await tx.alerts.update(alert);
  return alert;
}

/**
 * A new TRIGGERED alert at the first level, its actions run; null when the rule already has an open alert for the
 * target (another event or process triggered it first).
 */
export async function triggerAlert(
  tx: Repos,
  rule: RuleView,
  target: Target,
  lastValue: unknown,
  event: DeviceEvent | null,
  id: string,
  now: number,
): Promise<AlertRecord | null> {
  const alert: AlertRecord = {
    id,
    projectId: rule.projectId,
    ruleId: rule.id,
    targetId: target.id,
    targetName: target.name,
    state: 'TRIGGERED',
    escalationLevel: 0,
    triggerTime: now,
    acknowledgeTime: null,
    acknowledgedBy: '',
    resolveTime: null,
    lastValue: lastValue === undefined ? '' : JSON.stringify(lastValue),
    notifications: [],
    timerDue: null,
    createTime: now,
    updateTime: now,
  };
  alert.timerDue = nextTimer(alert, rule.spec, now);
  if (!(await tx.alerts.createIfNone(alert))) return null;
  return write(tx, alert, rule, 'TRIGGERED', () => contextOf(tx, rule, target, event), now);
}

/** RESOLVED: the condition cleared (or a user resolved it); the resolved notification when the rule asks for it. */
export async function resolveAlert(
  tx: Repos,
  alert: AlertRecord,
  rule: RuleView,
  event: DeviceEvent | null,
  now: number,
): Promise<AlertRecord> {
  alert.state = 'RESOLVED';
  alert.resolveTime = now;
  const transition = rule.spec.resolvedNotifications ? 'RESOLVED' : null;
  const ctx = async () => contextOf(tx, rule, { labels: await labelsOf(tx, alert) }, event);
  return write(tx, alert, rule, transition, ctx, now);
}

/** ACKNOWLEDGED by `by` (an e-mail): escalation stops until unacknowledgesAfter. */
export async function acknowledgeAlert(
  tx: Repos,
  alert: AlertRecord,
  rule: RuleView,
  by: string,
  now: number,
): Promise<AlertRecord> {
  alert.state = 'ACKNOWLEDGED';
  alert.acknowledgeTime = now;
  alert.acknowledgedBy = by;
  return write(tx, alert, rule, null, () => contextOf(tx, rule, { labels: {} }, null), now);
}

/** The alert's timer came due: escalate, remind or un-acknowledge. */
export async function fireTimer(tx: Repos, alert: AlertRecord, rule: RuleView, now: number): Promise<AlertRecord> {
  const ctx = async () => contextOf(tx, rule, { labels: await labelsOf(tx, alert) }, null);
  if (alert.state === 'ACKNOWLEDGED') {
    alert.state = 'TRIGGERED';
    alert.acknowledgeTime = null;
    alert.acknowledgedBy = '';
    return write(tx, alert, rule, 'UNACKNOWLEDGED', ctx, now);
  }
  if (alert.escalationLevel + 1 < rule.spec.escalationLevels.length) {
    alert.escalationLevel += 1;
    return write(tx, alert, rule, 'ESCALATED', ctx, now);
  }
  return write(tx, alert, rule, rule.spec.reminderNotifications ? 'REMINDER' : null, ctx, now);
}
