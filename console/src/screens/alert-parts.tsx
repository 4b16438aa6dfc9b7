// Pieces of the alerts screens that the device page shows too (so they are in the first load): an alert's state
// chip, the rules and target names an alert list needs, and the alert table (newest first, each row linking to the
// alert's page).
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Alert, alertStateInfo, isDeviceTarget, type Rule, valueText } from '../alerts.ts';
import { api, idOf, listAll, query } from '../api.ts';
import { Badge } from '../components.tsx';
import { formatTime, shortTime } from '../format.ts';
import { navigate } from '../router.ts';

export function AlertStateBadge({ state }: { state: string }) {
  const s = alertStateInfo(state);
  return (
    <Badge kind={s?.[1] ?? 'muted'}>
      <span title={s?.[3]}>{s?.[2] ?? state}</span>
    </Badge>
  );
}

export const alertHref = (alertName: string) => `/${alertName}`;
export const ruleHref = (ruleName: string) => `/${ruleName}`;

/** The project's rules by name (a project has at most 100); read again when `key` changes, not at all while it is null. */
export function useRuleBook(projectId: string, key: unknown = 0): Map<string, Rule> | null {
  const [rules, setRules] = useState<Map<string, Rule> | null>(null);
  useEffect(() => {
    if (key === null) return;
    let live = true;
    listAll<Rule>(`/projects/${projectId}/rules`, 'rules', 2).then(
      (list) => live && setRules(new Map(list.map((r) => [r.name, r]))),
      () => live && setRules(new Map()),
    );
    return () => void (live = false);
  }, [projectId, key]);
  return rules;
}

/**
 * What each alert target is called: a device by its `name` label (read 100 ids a request, each once), a data
 * connector by its display name (the project's connectors, read once when an alert names one). Absent while unknown
 * or when it has no name: the id is shown then.
 */
export function useTargetNames(projectId: string, targetNames: string[]): Map<string, string> {
  const [names, setNames] = useState(new Map<string, string>());
  const asked = useRef(new Set<string>());
  const mounted = useRef(true);
  useEffect(() => () => void (mounted.current = false), []);
  const wanted = [...new Set(targetNames)].filter((t) => !asked.current.has(t));
  const key = wanted.join(',');
  useEffect(() => {
    if (wanted.length === 0) return;
    for (const t of wanted) asked.current.add(t);
    const add = (pairs: [string, string][]) => {
      if (!mounted.current) return;
      setNames((old) => {
        const next = new Map(old);
        for (const [k, v] of pairs) if (v) next.set(k, v);
        return next;
      });
    };
    const devices = wanted.filter(isDeviceTarget).map(idOf);
    (async () => {
      for (let i = 0; i < devices.length; i += 100) {
        try {
          const page = await api<{ devices: any[] }>(
            'GET',
            `/projects/${projectId}/devices${query({ device_ids: devices.slice(i, i + 100), pageSize: 100 })}`,
          );
          add(page.devices.map((d) => [d.name, d.labels?.name ?? '']));
        } catch {
          // Shown by id.
        }
      }
      if (wanted.some((t) => t.includes('/dataconnectors/'))) {
        try {
          const list = await listAll<any>(`/projects/${projectId}/dataconnectors`, 'dataConnectors', 2);
          add(list.map((c) => [c.name, c.displayName]));
        } catch {
          // Shown by id.
        }
      }
    })();
  }, [projectId, key]);
  return names;
}

/** A target's link: a device's page or a connector's. */
export function TargetLink({ targetName, name }: { targetName: string; name?: string }) {
  const kind = isDeviceTarget(targetName) ? 'device' : 'data connector';
  return (
    <a href={`/${targetName}`} class={name ? undefined : 'mono small'} title={`${kind} ${idOf(targetName)}`}>
      {name || idOf(targetName)}
    </a>
  );
}

export const ruleTitle = (rule: Rule | undefined, ruleName: string) =>
  rule ? rule.displayName || idOf(rule.name) : idOf(ruleName);

/** Alerts, newest first; each row opens the alert. `showTarget` false on a device's own page. */
export function AlertsTable({
  alerts,
  rules,
  names,
  showTarget = true,
  caption,
}: {
  alerts: Alert[];
  rules: Map<string, Rule> | null;
  names: Map<string, string>;
  showTarget?: boolean;
  caption: string;
}) {
  return (
    <div class="table-wrap">
      <table class="alerts stack-table">
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">Rule</th>
            {showTarget ? <th scope="col">Target</th> : null}
            <th scope="col">Triggered</th>
            <th scope="col">Last value</th>
          </tr>
        </thead>
        <tbody>
          {alerts.map((a) => {
            const rule = rules?.get(a.rule);
            return (
              <tr
                key={a.name}
                class={`clickable alert-row alert-${a.state.toLowerCase()}`}
                data-alert={idOf(a.name)}
                onClick={(e) => {
                  if ((e.target as Element).closest('a, button') || getSelection()?.toString()) return;
                  navigate(alertHref(a.name));
                }}
              >
                <td data-label="State">
                  <AlertStateBadge state={a.state} />
                  <div class="muted small">
                    {a.state === 'RESOLVED'
                      ? `at ${shortTime(a.resolveTime)}`
                      : a.state === 'ACKNOWLEDGED' && a.acknowledgedBy
                        ? `by ${a.acknowledgedBy}`
                        : a.escalationLevel > 0
                          ? `level ${a.escalationLevel + 1}`
                          : null}
                  </div>
                </td>
                <td class="stack-title">
                  <a class="strong" href={alertHref(a.name)}>
                    {ruleTitle(rule, a.rule)}
                  </a>
                </td>
                {showTarget ? (
                  <td data-label="Target">
                    <TargetLink targetName={a.targetName} name={names.get(a.targetName)} />
                  </td>
                ) : null}
                <td data-label="Triggered">
                  <span title={formatTime(a.triggerTime)}>{shortTime(a.triggerTime)}</span>
                </td>
                <td data-label="Last value">{valueText(rule?.trigger.field, a.lastValue)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
