// Notification rules evaluated per event (extensions §X5), inside the transaction that stores the event: an event is
// stored with every alert transition it causes and the notifications they queue, or none of it. For each enabled
// rule of the project (rules.ts, cached) whose trigger reads the event's type, whose scope holds the device and whose
// schedule holds the event's time:
//
// * an open alert of the rule and device is kept (its last value updated) while the condition holds, and resolved
//   when it clears;
// * otherwise a condition that holds triggers an alert at once, unless the rule has a trigger delay or a trigger
//   count: then it is a pending condition (ConditionRecord) until enough events in a row met it and the delay is over
//   (the timers, timers.ts, trigger it when the delay ends first); an event that does not meet it ends it.
//
// A SENSOR_OFFLINE rule is decided by silence (offline.ts): any event of the device ends its open alert.
import { durationMicros } from '../domain/rule-spec.ts';
import { conditionHolds, deviceInScope, inSchedule, triggerValue } from '../domain/rule-evaluation.ts';
import { deviceName } from '../domain/names.ts';
import type { EventConsumer } from '../events/pipeline.ts';
import type { EmittedEvent } from '../events/types.ts';
import { nowMicros, type Clock } from '../runtime/clock.ts';
import type { IdGenerator } from '../runtime/ids.ts';
import type { AlertRecord } from '../store/contract/alerting.ts';
import type { Repos } from '../store/contract/store.ts';
import { enabledRules } from './rules.ts';
import type { AnnounceAlert } from './stream.ts';
import { resolveAlert, triggerAlert, type RuleView } from './transitions.ts';

export interface EvaluatorDeps {
  clock: Clock;
  ids: IdGenerator;
  /** Tells the streams of each transition, after its commit. */
  announce: AnnounceAlert;
  /** Asks the notifier to send what the commit queued. */
  notify(): void;
}

const PING = 'ping';

/** Whether the rule keeps a pending condition: a trigger delay, or a count above 1. */
export const pendsConditions = (rule: RuleView): boolean =>
  (durationMicros(rule.spec.triggerDelay) ?? 0) > 0 || (rule.spec.trigger.triggerCount ?? 1) > 1;

/** What one event does to one rule; the alerts that changed are pushed to `changed`. */
async function evaluate(
  deps: EvaluatorDeps,
  tx: Repos,
  rule: RuleView,
  emitted: EmittedEvent,
  now: number,
  changed: AlertRecord[],
): Promise<void> {
  const { device, event } = emitted;
  const trigger = rule.spec.trigger;
  if (trigger.field === 'dataConnector' || !deviceInScope(rule.spec, device.id, device.labels)) return;
  if (trigger.connection === 'SENSOR_OFFLINE') {
    const open = await tx.alerts.openFor(rule.id, device.id);
    if (open) changed.push(await resolveAlert(tx, open, rule, event, now));
    return;
  }
  const value = triggerValue(trigger, event.eventType, event.data as Record<string, unknown>);
  if (value === undefined || !inSchedule(rule.spec.schedule, emitted.timestamp)) return;
  const holds = conditionHolds(trigger, value);
  const open = await tx.alerts.openFor(rule.id, device.id);
  if (open) {
    if (!holds) changed.push(await resolveAlert(tx, open, rule, event, now));
    else if (open.lastValue !== JSON.stringify(value)) {
      open.lastValue = JSON.stringify(value);
      open.updateTime = now;
      await tx.alerts.update(open);
    }
    return;
  }
  const target = { id: device.id, name: deviceName(device.projectId, device.id), labels: device.labels };
  if (!pendsConditions(rule)) {
    if (holds) {
      const alert = await triggerAlert(tx, rule, target, value, event, deps.ids.next(), now);
      if (alert) changed.push(alert);
    }
    return;
  }
  const pending = await tx.conditions.get(rule.id, device.id);
  if (!holds) {
    // Cleared before the delay was over or the count was met: it starts again with the next event that meets it.
    if (pending) await tx.conditions.delete(rule.id, device.id);
    return;
  }
  const since = pending?.since ?? now;
  const count = (pending?.count ?? 0) + 1;
  const delay = durationMicros(rule.spec.triggerDelay) ?? 0;
  const counted = count >= Math.max(1, trigger.triggerCount ?? 1);
  if (counted && now - since >= delay) {
    if (pending) await tx.conditions.delete(rule.id, device.id);
    const alert = await triggerAlert(tx, rule, target, value, event, deps.ids.next(), now);
    if (alert) changed.push(alert);
    return;
  }
  await tx.conditions.put({
    ruleId: rule.id,
    targetId: device.id,
    projectId: rule.projectId,
    since,
    count,
    due: counted ? since + delay : null,
    lastValue: JSON.stringify(value),
  });
}

/** The pipeline consumer (composition root: events.addConsumer). */
export function createRuleEvaluator(deps: EvaluatorDeps): EventConsumer {
  return {
    async consume(tx, emitted, outcome) {
      if (emitted.event.eventType === PING) return;
      const rules = await enabledRules(tx, emitted.device.projectId);
      if (rules.length === 0) return;
      const now = nowMicros(deps);
      const changed: AlertRecord[] = [];
      for (const rule of rules) await evaluate(deps, tx, rule, emitted, now, changed);
      if (changed.length === 0) return;
      outcome.onCommit(() => {
        for (const alert of changed) deps.announce(alert, emitted.device);
        deps.notify();
      });
    },
  };
}
