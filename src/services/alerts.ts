// Alerts (extensions §X5): list (newest first, filtered by state, rule and device), get, :acknowledge and :resolve.
// Every member of the project reads them and may acknowledge or resolve one (`project.read`); a transition made here
// queues its notifications and reaches the event streams as the engine's own do (alerts/transitions.ts).
import { acknowledgeAlert, resolveAlert } from '../alerts/transitions.ts';
import { presentAlert } from '../alerts/present.ts';
import { ruleById } from '../alerts/rules.ts';
import type { Principal } from '../auth/principal.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../domain/errors.ts';
import { afterId, pageRequest, toPage } from '../domain/paging.ts';
import { nowMicros } from '../runtime/clock.ts';
import type { AlertRecord, AlertState } from '../store/contract/alerting.ts';
import type { Repos } from '../store/contract/store.ts';
import type { Alert, AlertList, AlertListQuery } from '../wire/alerts.ts';
import { requireProject } from './access.ts';

const STATES: readonly AlertState[] = ['TRIGGERED', 'ACKNOWLEDGED', 'RESOLVED'];

/** An id, or a name ending in /{collection}/{id} of the project. */
function idOf(value: string, projectId: string, collection: 'rules' | 'devices', field: string): string {
  if (!value.includes('/')) return value;
  const m = new RegExp(`^projects/([^/]+)/${collection}/([^/]+)$`).exec(value);
  if (!m || (m[1] !== projectId && m[1] !== '-'))
    throw badRequest(`${field}: expected an id or projects/${projectId}/${collection}/{id}`);
  return m[2]!;
}

function statesOf(raw: string | string[] | undefined): AlertState[] | undefined {
  if (raw === undefined) return undefined;
  const out: AlertState[] = [];
  for (const s of (Array.isArray(raw) ? raw : [raw]).flatMap((v) => v.split(','))) {
    if (s === '') continue;
    if (!STATES.includes(s as AlertState))
      throw badRequest(`state: unknown state "${s}" (valid: ${STATES.join(', ')})`);
    if (!out.includes(s as AlertState)) out.push(s as AlertState);
  }
  return out.length > 0 ? out : undefined;
}

export async function listAlerts(
  deps: Deps,
  principal: Principal,
  projectId: string,
  query: AlertListQuery,
): Promise<AlertList> {
  const { project } = await requireProject(deps, principal, projectId, 'project.read');
  const states = statesOf(query.state);
  const ruleId = query.rule ? idOf(query.rule, project.id, 'rules', 'rule') : undefined;
  const targetId = query.device ? idOf(query.device, project.id, 'devices', 'device') : undefined;
  const filters = `alerts:${project.id}:${states?.join(',') ?? ''}:${ruleId ?? ''}:${targetId ?? ''}`;
  const page = pageRequest(query, filters);
  const rows = await deps.store.alerts.list(
    { projectId: project.id, states, ruleId, targetId },
    { after: afterId(page.after), limit: page.pageSize + 1 },
  );
  const { items, nextPageToken } = toPage(rows, page, (a) => [a.id], filters);
  return { alerts: items.map(presentAlert), nextPageToken };
}

async function requireAlert(deps: Deps, principal: Principal, projectId: string, alertId: string) {
  const { project } = await requireProject(deps, principal, projectId, 'project.read');
  const alert = await deps.store.alerts.get(alertId);
  if (!alert || alert.projectId !== project.id) throw notFound('alert not found');
  return alert;
}

export async function getAlert(deps: Deps, principal: Principal, projectId: string, alertId: string): Promise<Alert> {
  return presentAlert(await requireAlert(deps, principal, projectId, alertId));
}

/**
 * Runs a user's transition on the alert under its row lock; the alert as it is after it. `change` answers null when
 * there is nothing to do (acknowledged again, resolved again): then nothing is written or told to the streams.
 */
async function transition(
  deps: Deps,
  principal: Principal,
  projectId: string,
  alertId: string,
  change: (tx: Repos, alert: AlertRecord, now: number) => Promise<AlertRecord | null>,
): Promise<Alert> {
  const found = await requireAlert(deps, principal, projectId, alertId);
  const now = nowMicros(deps);
  const { alert, changed } = await deps.store.transaction(async (tx) => {
    const a = await tx.alerts.getForUpdate(found.id);
    if (!a) throw notFound('alert not found');
    const after = await change(tx, a, now);
    return { alert: after ?? a, changed: after !== null };
  });
  if (changed) {
    const device = alert.targetName.includes('/devices/') ? await deps.store.devices.get(alert.targetId) : null;
    deps.alerts.announce(alert, device);
    deps.alerts.notify();
  }
  return presentAlert(alert);
}

/** :acknowledge: TRIGGERED → ACKNOWLEDGED by the caller; again on an acknowledged one changes nothing. */
export function acknowledgeAlertAsUser(deps: Deps, principal: Principal, projectId: string, alertId: string) {
  return transition(deps, principal, projectId, alertId, async (tx, a, now) => {
    if (a.state === 'RESOLVED') throw badRequest('the alert is RESOLVED: there is nothing to acknowledge');
    if (a.state === 'ACKNOWLEDGED') return null;
    const rule = await ruleById(tx, a.ruleId);
    if (!rule) throw notFound('the alert’s rule is gone');
    return acknowledgeAlert(tx, a, rule, principal.email, now);
  });
}

/** :resolve: an open alert resolved by the caller (the resolved notification when the rule asks for it). */
export function resolveAlertAsUser(deps: Deps, principal: Principal, projectId: string, alertId: string) {
  return transition(deps, principal, projectId, alertId, async (tx, a, now) => {
    if (a.state === 'RESOLVED') return null;
    const rule = await ruleById(tx, a.ruleId);
    if (!rule) throw notFound('the alert’s rule is gone');
    // The condition may still hold: a pending one is forgotten, so that only a new event that meets it triggers again.
    await tx.conditions.delete(a.ruleId, a.targetId);
    return resolveAlert(tx, a, rule, null, now);
  });
}
