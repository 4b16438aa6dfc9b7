// The notifications of an alert transition (extensions §X5): for each action of the level concerned, one outbox row
// queued in the transition's own transaction, and its entry on the alert (RETRYING until the notifier, notifier.ts,
// records how it went). An e-mail goes to its recipients and the addresses of its contact groups' contacts in the
// project, subject and body with their placeholders filled; a webhook carries {"alert", "event"} and the
// X-Sensorcloud-Alert-Transition header, signed with the action's secret by the notifier as a push is.
import { ALERT_TRANSITION_HEADER } from '../delivery/push-headers.ts';
import { parseContactGroupName } from '../domain/names.ts';
import type { ActionSpec, RuleSpec } from '../domain/rule-spec.ts';
import { formatTimestamp } from '../domain/time.ts';
import type { AlertRecord } from '../store/contract/alerting.ts';
import type { Repos } from '../store/contract/store.ts';
import type { DeviceEvent } from '../wire/events.ts';
import { presentAlertSummary } from './present.ts';

export type Transition = 'TRIGGERED' | 'ESCALATED' | 'REMINDER' | 'UNACKNOWLEDGED' | 'RESOLVED';

/** What a notification's placeholders are filled from. */
export interface NotifyContext {
  rule: { id: string; displayName: string; spec: RuleSpec };
  projectDisplayName: string;
  /** The device's labels when the alert is a device's (its `name` label names it). */
  deviceLabels: Readonly<Record<string, string>>;
  /** The event that caused the transition, or null (a timer's, an acknowledgement's). */
  event: DeviceEvent | null;
}

/**
 * The placeholders of subjects and bodies (docs/alerts.md lists them): `$value` the last value, `$celsius` and
 * `$fahrenheit` a temperature's, `$name` the device's name label (its id without one), `$deviceId`, `$target` the
 * alert's target name, `$rule` the rule's display name, `$project` the project's, `$state`, `$transition`,
 * `$level` (1-based), `$triggerTime`, `$time` (now). Unknown ones are left as written.
 */
export function fillPlaceholders(
  text: string,
  alert: AlertRecord,
  transition: Transition,
  ctx: NotifyContext,
  now: number,
): string {
  const value = alert.lastValue === '' ? null : (JSON.parse(alert.lastValue) as unknown);
  const isNumber = typeof value === 'number';
  const deviceId = alert.targetName.includes('/devices/') ? alert.targetId : '';
  const values: Record<string, string> = {
    value: value === null ? '' : String(value),
    celsius: isNumber ? String(value) : '',
    fahrenheit: isNumber ? String(Math.round(((value as number) * 1.8 + 32) * 100) / 100) : '',
    name: ctx.deviceLabels.name ?? (deviceId || alert.targetId),
    deviceId,
    target: alert.targetName,
    rule: ctx.rule.displayName,
    project: ctx.projectDisplayName,
    state: alert.state,
    transition,
    level: String(alert.escalationLevel + 1),
    triggerTime: formatTimestamp(alert.triggerTime),
    time: formatTimestamp(now),
  };
  // A placeholder is the longest run of letters after the $: "$celsius°C" reads $celsius.
  return text.replace(/\$([A-Za-z]+)/g, (whole, key: string) => values[key] ?? whole);
}

/**
 * The e-mail addresses an e-mail action's `contactGroups` stand for in a project: the contacts of those groups in
 * the project, lower case, each once, in the order of the groups and then of the contacts. A name that is not a
 * contact group of the project's organization (one deleted since the rule was written, say) stands for no address.
 * `deps.store` may be a transaction's repositories.
 */
export async function contactGroupAddresses(
  deps: { store: Pick<Repos, 'projects' | 'contacts'> },
  projectId: string,
  groupNames: readonly string[],
): Promise<string[]> {
  if (groupNames.length === 0) return [];
  const project = await deps.store.projects.get(projectId);
  if (!project) return [];
  const out = new Set<string>();
  for (const name of groupNames) {
    const parsed = parseContactGroupName(name);
    if (!parsed || parsed.organization !== project.organizationId) continue;
    const group = await deps.store.contacts.getGroup(parsed.group);
    if (!group || group.organizationId !== project.organizationId) continue;
    for (const c of await deps.store.contacts.listInGroup(projectId, group.id))
      if (c.email !== '') out.add(c.email.toLowerCase());
  }
  return [...out];
}

/** The addresses of an e-mail action: its recipients, then its contact groups' contacts in the project, once each. */
async function addressesOf(tx: Repos, projectId: string, action: ActionSpec): Promise<string[]> {
  const groups = await contactGroupAddresses({ store: tx }, projectId, action.email?.contactGroups ?? []);
  return [...new Set([...(action.email?.recipients ?? []), ...groups])];
}

/**
 * Queues the notifications of `transition` by the actions of the alert's current level, and appends their entries
 * to `alert.notifications` (the caller writes the alert). Returns how many were queued.
 */
export async function queueNotifications(
  tx: Repos,
  alert: AlertRecord,
  transition: Transition,
  ctx: NotifyContext,
  now: number,
): Promise<number> {
  const level = ctx.rule.spec.escalationLevels[alert.escalationLevel];
  if (!level) return 0;
  const rows = [];
  for (const action of level.actions) {
    let target: string;
    let payload: string;
    if (action.type === 'EMAIL' && action.email) {
      const to = await addressesOf(tx, alert.projectId, action);
      if (to.length === 0) continue;
      target = to.join(', ');
      payload = JSON.stringify({
        to,
        subject: fillPlaceholders(action.email.subject, alert, transition, ctx, now),
        text: fillPlaceholders(action.email.body, alert, transition, ctx, now),
      });
    } else if (action.type === 'WEBHOOK' && action.webhook) {
      target = action.webhook.url;
      payload = JSON.stringify({
        url: action.webhook.url,
        headers: { ...action.webhook.headers, [ALERT_TRANSITION_HEADER]: transition },
        signatureSecretSealed: action.webhook.signatureSecretSealed,
        body: JSON.stringify({ alert: presentAlertSummary(alert), event: ctx.event }),
      });
    } else continue;
    const entry = alert.notifications.length;
    alert.notifications.push({
      time: now,
      level: alert.escalationLevel,
      type: action.type,
      target,
      transition,
      outcome: 'RETRYING',
      error: '',
    });
    rows.push({ alertId: alert.id, entry, type: action.type, payload, enqueueTime: now, dueTime: now });
  }
  if (rows.length > 0) await tx.outbox.add(rows);
  return rows.length;
}
