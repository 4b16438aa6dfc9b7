// The enabled rules of a project as the alerts engine reads them (RuleView): the store's cached list
// (RuleRepo.listEnabledByProject, kept correct across processes as the active connectors are), each rule's settings
// parsed once per version of the rule, and looked up by the event type its trigger reads.
import type { RuleSpec } from '../domain/rule-spec.ts';
import type { RuleRecord } from '../store/contract/alerting.ts';
import type { Repos } from '../store/contract/store.ts';
import type { RuleView } from './transitions.ts';

const parsed = new WeakMap<RuleRecord, RuleView>();
/** Parsed views by rule id and version, so that a store that reads the rows afresh does not parse them again. */
const byVersion = new Map<string, { updateTime: number; view: RuleView }>();

/** The rule's view, parsed at most once per version. */
export function viewOf(r: RuleRecord): RuleView {
  let view = parsed.get(r);
  if (view) return view;
  const known = byVersion.get(r.id);
  if (known && known.updateTime === r.updateTime && known.view.enabled === r.enabled) view = known.view;
  else {
    view = {
      id: r.id,
      projectId: r.projectId,
      displayName: r.displayName,
      enabled: r.enabled,
      spec: JSON.parse(r.spec) as RuleSpec,
    };
    byVersion.set(r.id, { updateTime: r.updateTime, view });
  }
  parsed.set(r, view);
  return view;
}

/** The project's enabled rules. */
export async function enabledRules(tx: Repos, projectId: string): Promise<RuleView[]> {
  const rules = await tx.rules.listEnabledByProject(projectId);
  return rules.length === 0 ? [] : rules.map(viewOf);
}

/** A rule by id, enabled or not; null when it is gone. */
export async function ruleById(tx: Repos, id: string): Promise<RuleView | null> {
  const r = await tx.rules.get(id);
  return r ? viewOf(r) : null;
}
