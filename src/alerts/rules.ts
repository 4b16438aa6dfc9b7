// The enabled rules of a project as the alerts engine reads them (RuleView): the store's cached list
// (RuleRepo.listEnabledByProject, kept correct across processes as the active connectors are), each rule's settings
// parsed once per version of the rule, and looked up by the event type its trigger reads (rulesForEvent).
import { eventTypeOfField } from '../domain/rule-evaluation.ts';
import type { RuleSpec } from '../domain/rule-spec.ts';
import type { RuleRecord } from '../store/contract/alerting.ts';
import type { Repos } from '../store/contract/store.ts';
import type { RuleView } from './transitions.ts';

/** Parsed views by rule id and version, so that a store that reads the rows afresh does not parse them again. */
const byVersion = new Map<string, { updateTime: number; view: RuleView }>();

/** The rule's view, parsed at most once per version. */
export function viewOf(r: RuleRecord): RuleView {
  const known = byVersion.get(r.id);
  if (known && known.updateTime === r.updateTime && known.view.enabled === r.enabled) return known.view;
  const view: RuleView = {
    id: r.id,
    projectId: r.projectId,
    displayName: r.displayName,
    enabled: r.enabled,
    spec: JSON.parse(r.spec) as RuleSpec,
  };
  byVersion.set(r.id, { updateTime: r.updateTime, view });
  return view;
}

/** The project's enabled rules. */
export async function enabledRules(tx: Repos, projectId: string): Promise<RuleView[]> {
  const rules = await tx.rules.listEnabledByProject(projectId);
  return rules.length === 0 ? [] : rules.map(viewOf);
}

/** An enabled list's rules by the event type each reads ('*': SENSOR_OFFLINE rules, which every event concerns). */
const byEventType = new WeakMap<readonly RuleRecord[], Map<string, RuleView[]>>();

/** The event type a trigger field reads (relativeHumidity reads humidity events); null for no event (dataConnector). */
function eventTypeOf(view: RuleView): string | null {
  const { field, connection } = view.spec.trigger;
  if (connection === 'SENSOR_OFFLINE') return '*';
  if (field === 'dataConnector') return null;
  return eventTypeOfField(field);
}

/**
 * The project's enabled rules an event of `eventType` concerns: those whose trigger reads that type, and the
 * SENSOR_OFFLINE ones (any event ends a sensor's silence). Grouped once per list the store's cache hands out.
 */
export async function rulesForEvent(tx: Repos, projectId: string, eventType: string): Promise<RuleView[]> {
  const records = await tx.rules.listEnabledByProject(projectId);
  if (records.length === 0) return [];
  let groups = byEventType.get(records);
  if (!groups) {
    groups = new Map();
    for (const view of records.map(viewOf)) {
      const type = eventTypeOf(view);
      if (type !== null) groups.set(type, [...(groups.get(type) ?? []), view]);
    }
    byEventType.set(records, groups);
  }
  const own = groups.get(eventType) ?? [];
  const any = groups.get('*');
  return any ? [...own, ...any] : own;
}

/** A rule by id, enabled or not; null when it is gone. */
export async function ruleById(tx: Repos, id: string): Promise<RuleView | null> {
  const r = await tx.rules.get(id);
  return r ? viewOf(r) : null;
}
