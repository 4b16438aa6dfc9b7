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
import type { AlertRecord, ConditionRecord } from '../store/contract/alerting.ts';
import type { Repos } from '../store/contract/store.ts';
import { rulesForEvent } from './rules.ts';
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

/** What the rules of one event know of its device: its open alerts and pending conditions, by rule, read once. */
interface DeviceState {
  open: Map<string, AlertRecord>;
  pending: Map<string, ConditionRecord> | null;
}

/** What one event does to one rule; the alerts that changed are pushed to `changed`. */
async function evaluate(
  deps: EvaluatorDeps,
  tx: Repos,
  rule: RuleView,
  emitted: EmittedEvent,
  value: number | string | undefined,
  state: DeviceState,
  now: number,
  changed: AlertRecord[],
): Promise<void> {
  const { device, event } = emitted;
  const trigger = rule.spec.trigger;
  const open = state.open.get(rule.id);
  if (trigger.connection === 'SENSOR_OFFLINE') {
    if (open) changed.push(await resolveAlert(tx, open, rule, event, now));
    return;
  }
  if (value === undefined) return;
  const holds = conditionHolds(trigger, value);
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
  const pending = state.pending?.get(rule.id) ?? null;
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
      const { device, event } = emitted;
      if (event.eventType === PING) return;
      // The rules this event concerns: its type's (indexed once per version of the project's rules), in the device's
      // scope, with the event's time in their schedules. Most events of a project with rules stop here, unread.
      const rules = (await rulesForEvent(tx, device.projectId, event.eventType)).filter(
        (r) =>
          deviceInScope(r.spec, device.id, device.labels) &&
          (r.spec.trigger.connection === 'SENSOR_OFFLINE' || inSchedule(r.spec.schedule, emitted.timestamp)),
      );
      if (rules.length === 0) return;
      const now = nowMicros(deps);
      // The device's open alerts and pending conditions, one read each for all its rules.
      const state: DeviceState = {
        open: new Map((await tx.alerts.openForTarget(device.id)).map((a) => [a.ruleId, a])),
        pending: rules.some(pendsConditions)
          ? new Map((await tx.conditions.listForTarget(device.id)).map((c) => [c.ruleId, c]))
          : null,
      };
      const changed: AlertRecord[] = [];
      for (const rule of rules) {
        const value = triggerValue(rule.spec.trigger, event.eventType, event.data as Record<string, unknown>);
        await evaluate(deps, tx, rule, emitted, value, state, now, changed);
      }
      if (changed.length === 0) return;
      outcome.onCommit(() => {
        for (const alert of changed) deps.announce(alert, emitted.device);
        deps.notify();
      });
    },
  };
}
