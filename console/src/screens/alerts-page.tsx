// The project's alerts (extensions §X5): newest first with state chips and the rule and device filters in the URL,
// kept live by the stream's alertChanged events; one alert with its notifications, Acknowledge and Resolve (every
// member may do both).
import { useEffect, useRef, useState } from 'preact/hooks';
import { useAlertChanges } from '../alert-stream.ts';
import { type Alert, ALERT_STATE_NAMES, ALERT_STATES, alertStateInfo, type Rule, valueText } from '../alerts.ts';
import { triggerText } from '../rule-text.ts';
import { api, idOf, query } from '../api.ts';
import { Badge, ErrorText, LoadMore, Loading, Notice, StateChips, Title, useAction, useLoad } from '../components.tsx';
import { formatTime, relativeTime } from '../format.ts';
import { navigate, useLocation } from '../router.ts';
import {
  AlertStateBadge,
  AlertsTable,
  ruleHref,
  ruleTitle,
  TargetLink,
  useRuleBook,
  useTargetNames,
} from './alert-parts.tsx';

const ALERT_PAGE_SIZE = 50;

interface Filters {
  states: string[];
  rule: string;
  device: string;
}

const listUrl = (base: string, f: Filters) => `${base}${query({ state: f.states, rule: f.rule, device: f.device })}`;
const newestFirst = (a: Alert, b: Alert) =>
  a.triggerTime < b.triggerTime ? 1 : a.triggerTime > b.triggerTime ? -1 : 0;

export function Alerts({ projectId }: { projectId: string }) {
  const { params } = useLocation();
  const pageUrl = `/projects/${projectId}/alerts`;
  const filters: Filters = {
    states: params.getAll('state').filter((s) => ALERT_STATE_NAMES.includes(s)),
    rule: params.get('rule') ?? '',
    device: params.get('device') ?? '',
  };
  const filterKey = JSON.stringify(filters);
  const rules = useRuleBook(projectId);
  const [list, setList] = useState<{ key: string; rows: Alert[] } | null>(null);
  const [next, setNext] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [tick, setTick] = useState(0);
  const generation = useRef(0);
  const read = (pageToken: string) =>
    api<{ alerts: Alert[]; nextPageToken: string }>(
      'GET',
      `/projects/${projectId}/alerts${query({ state: filters.states, rule: filters.rule, device: filters.device, pageSize: ALERT_PAGE_SIZE, pageToken })}`,
    );
  const matches = (a: Alert) => filters.states.length === 0 || filters.states.includes(a.state);
  // The first page for the filters; a re-read (a Refresh, an alert changed) keeps the rows loaded beyond it.
  useEffect(() => {
    const mine = ++generation.current;
    setError(null);
    setBusy(true);
    read('').then(
      (page) => {
        if (mine !== generation.current) return;
        setList((old) => {
          if (old?.key !== filterKey) return { key: filterKey, rows: page.alerts };
          const fresh = new Set(page.alerts.map((a) => a.name));
          return {
            key: filterKey,
            rows: [...page.alerts, ...old.rows.filter((a) => !fresh.has(a.name) && matches(a))].sort(newestFirst),
          };
        });
        setNext((old) => (list?.key === filterKey && old !== '' ? old : page.nextPageToken));
        setBusy(false);
      },
      (err) => {
        if (mine !== generation.current) return;
        setError(err);
        setBusy(false);
      },
    );
  }, [projectId, filterKey, tick]);
  const reload = () => setTick((n) => n + 1);
  // Live: a changed alert is updated in place at once, then the first page is read again (a new one appears).
  const pendingReload = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (pendingReload.current && clearTimeout(pendingReload.current)), []);
  useAlertChanges(projectId, (a) => {
    if (a)
      setList((old) =>
        old ? { ...old, rows: old.rows.map((r) => (r.name === a.name ? { ...r, ...a } : r)).filter(matches) } : old,
      );
    if (pendingReload.current) clearTimeout(pendingReload.current);
    pendingReload.current = setTimeout(reload, 150);
  });
  const rows = list?.key === filterKey ? list.rows : null;
  const names = useTargetNames(projectId, [
    ...(rows ?? []).map((a) => a.targetName),
    ...(filters.device ? [`projects/${projectId}/devices/${idOf(filters.device)}`] : []),
  ]);
  const loadMore = async () => {
    const mine = generation.current;
    setBusy(true);
    setError(null);
    try {
      const page = await read(next);
      if (mine !== generation.current) return;
      setList((old) => {
        const seen = new Set((old?.rows ?? []).map((a) => a.name));
        return { key: filterKey, rows: [...(old?.rows ?? []), ...page.alerts.filter((a) => !seen.has(a.name))] };
      });
      setNext(page.nextPageToken);
    } catch (err) {
      if (mine === generation.current) setError(err);
    } finally {
      if (mine === generation.current) setBusy(false);
    }
  };
  const rule = filters.rule ? rules?.get(`projects/${projectId}/rules/${idOf(filters.rule)}`) : undefined;
  const deviceName = `projects/${projectId}/devices/${idOf(filters.device)}`;
  const filtered = filters.states.length > 0 || filters.rule || filters.device;

  return (
    <section>
      <Title
        actions={
          <a class="button" href={`/projects/${projectId}/rules`}>
            Rules
          </a>
        }
      >
        Alerts
      </Title>
      <p class="muted">
        An alert is raised when a rule's condition holds for a device (or a data connector), and runs the rule's
        notifications until someone acknowledges it; it resolves when the condition clears. The list updates as alerts
        change.
      </p>
      <StateChips
        states={ALERT_STATES}
        selected={filters.states}
        onChange={(states) => navigate(listUrl(pageUrl, { ...filters, states }), { replace: true })}
      >
        <span class="spacer" />
        <button type="button" onClick={reload} disabled={busy}>
          Refresh
        </button>
      </StateChips>
      {filters.rule || filters.device ? (
        <p class="filter-note">
          {filters.rule ? (
            <span>
              Rule{' '}
              <a href={ruleHref(`projects/${projectId}/rules/${idOf(filters.rule)}`)}>
                {ruleTitle(rule, filters.rule)}
              </a>
            </span>
          ) : null}
          {filters.device ? (
            <span>
              Device <TargetLink targetName={deviceName} name={names.get(deviceName)} />
            </span>
          ) : null}
          <button
            type="button"
            class="link"
            onClick={() => navigate(listUrl(pageUrl, { ...filters, rule: '', device: '' }), { replace: true })}
          >
            Every rule and device
          </button>
        </p>
      ) : null}
      <ErrorText error={error} />
      {rows === null ? (
        error ? null : (
          <Loading what="Loading alerts" />
        )
      ) : rows.length === 0 ? (
        <p class="empty">
          {filtered ? (
            'No alert matches these filters.'
          ) : (
            <>
              No alerts yet: they appear here when the condition of a <a href={`/projects/${projectId}/rules`}>rule</a>{' '}
              holds.
            </>
          )}
        </p>
      ) : (
        <AlertsTable alerts={rows} rules={rules} names={names} caption="Alerts, newest first" />
      )}
      {rows !== null && next !== '' ? <LoadMore shown={rows.length} busy={busy} onMore={loadMore} /> : null}
    </section>
  );
}

const OUTCOMES: Record<string, [kind: string, label: string, meaning: string]> = {
  SENT: ['ok', 'Sent', 'the receiver answered 2xx, or the SMTP relay accepted the message'],
  RETRYING: ['warn', 'Retrying', 'queued and not delivered yet: another attempt follows'],
  FAILED: ['danger', 'Failed', 'given up: 12 hours of failed attempts, or a permanent refusal'],
};

const TYPE_TEXT: Record<string, string> = { EMAIL: 'E-mail', WEBHOOK: 'Webhook' };

/** "Level 2 of 3 · Facilities". */
function levelText(rule: Rule | undefined, level: number): string {
  const l = rule?.escalationLevels[level];
  const of = rule ? ` of ${rule.escalationLevels.length}` : '';
  return `Level ${level + 1}${of}${l?.displayName ? ` · ${l.displayName}` : ''}`;
}

/** While a notification is still being sent, the page reads the alert again this often (ms). */
const RETRYING_POLL_MS = 4000;

export function AlertPage({ projectId, alertId }: { projectId: string; alertId: string }) {
  const base = `/projects/${projectId}/alerts/${alertId}`;
  const { data: alert, error, reload, setData } = useLoad(() => api<Alert>('GET', base), [base]);
  const rules = useRuleBook(projectId);
  const names = useTargetNames(projectId, alert ? [alert.targetName] : []);
  const acknowledge = useAction();
  const resolve = useAction();
  useAlertChanges(projectId, (a) => {
    if (a === null || idOf(a.name) === alertId) reload();
  });
  const retrying = alert?.notifications?.some((n) => n.outcome === 'RETRYING') ?? false;
  useEffect(() => {
    if (!retrying) return;
    const t = setTimeout(reload, RETRYING_POLL_MS);
    return () => clearTimeout(t);
  }, [alert, retrying]);
  if (!alert)
    return (
      <section>
        <Title>Alert</Title>
        {error ? <ErrorText error={error} /> : <Loading />}
      </section>
    );
  const rule = rules?.get(alert.rule);
  const state = alertStateInfo(alert.state);
  const notifications = [...(alert.notifications ?? [])].reverse();
  const act = (which: ':acknowledge' | ':resolve', action: typeof acknowledge, done: string) =>
    action.run(async () => setData(await api<Alert>('POST', `${base}${which}`, {})), done);
  return (
    <section>
      <Title
        sub={
          <>
            <AlertStateBadge state={alert.state} />{' '}
            <TargetLink targetName={alert.targetName} name={names.get(alert.targetName)} />
            <div class="muted small mono">{alert.name}</div>
          </>
        }
      >
        {`Alert: ${ruleTitle(rule, alert.rule)}`}
      </Title>
      <div class="toolbar">
        <a class="button" href={`/projects/${projectId}/alerts`}>
          ← Alerts
        </a>
        {alert.state === 'TRIGGERED' ? (
          <button
            type="button"
            class="primary"
            disabled={acknowledge.busy}
            onClick={() => act(':acknowledge', acknowledge, 'Acknowledged: escalation stops.')}
          >
            Acknowledge
          </button>
        ) : null}
        {alert.state !== 'RESOLVED' ? (
          <button type="button" disabled={resolve.busy} onClick={() => act(':resolve', resolve, 'Resolved.')}>
            Resolve
          </button>
        ) : null}
        <span class="spacer" />
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      <ErrorText error={acknowledge.error ?? resolve.error} />
      {acknowledge.notice || resolve.notice ? <Notice>{acknowledge.notice ?? resolve.notice}</Notice> : null}
      <p class={`alert-state alert-state-${alert.state.toLowerCase()}`} data-testid="alert-state">
        <strong>{state?.[2] ?? alert.state}</strong>: {state?.[3] ?? ''}.
        {alert.state === 'TRIGGERED'
          ? ' Acknowledge it to stop the escalation (it comes back if nobody resolves it in time); it resolves by itself when the condition clears.'
          : alert.state === 'ACKNOWLEDGED'
            ? ' It resolves by itself when the condition clears, or press Resolve.'
            : ''}
      </p>
      <div class="grid-2">
        <section class="card" aria-labelledby="alert-h">
          <h2 id="alert-h">What happened</h2>
          <dl class="props">
            <div>
              <dt>Rule</dt>
              <dd>
                <a href={ruleHref(alert.rule)}>{ruleTitle(rule, alert.rule)}</a>
                {rule ? <div class="muted small">when {triggerText(rule.trigger)}</div> : null}
              </dd>
            </div>
            <div>
              <dt>Target</dt>
              <dd>
                <TargetLink targetName={alert.targetName} name={names.get(alert.targetName)} />
              </dd>
            </div>
            <div>
              <dt>Last value</dt>
              <dd data-testid="last-value">{valueText(rule?.trigger.field, alert.lastValue)}</dd>
            </div>
            <div>
              <dt>Escalation</dt>
              <dd>{levelText(rule, alert.escalationLevel)}</dd>
            </div>
          </dl>
        </section>
        <section class="card" aria-labelledby="times-h">
          <h2 id="times-h">When</h2>
          <dl class="props">
            <div>
              <dt>Triggered</dt>
              <dd>
                {formatTime(alert.triggerTime)} <span class="muted small">{relativeTime(alert.triggerTime)}</span>
              </dd>
            </div>
            <div>
              <dt>Acknowledged</dt>
              <dd>
                {alert.acknowledgeTime ? (
                  <>
                    {formatTime(alert.acknowledgeTime)}
                    {alert.acknowledgedBy ? <div class="muted small">by {alert.acknowledgedBy}</div> : null}
                  </>
                ) : (
                  <span class="muted">not yet</span>
                )}
              </dd>
            </div>
            <div>
              <dt>Resolved</dt>
              <dd>{alert.resolveTime ? formatTime(alert.resolveTime) : <span class="muted">not yet</span>}</dd>
            </div>
          </dl>
        </section>
      </div>
      <section class="card" aria-labelledby="notifications-h">
        <div class="card-head">
          <h2 id="notifications-h">Notifications</h2>
          {retrying ? <span class="muted small">Being sent: this list updates by itself.</span> : null}
        </div>
        {notifications.length === 0 ? (
          <p class="muted">
            None sent: the rule's actions had no one to notify (an e-mail action whose groups have no contacts in this
            project), or none has run yet.
          </p>
        ) : (
          <div class="table-wrap">
            <table class="notifications stack-table">
              <caption class="visually-hidden">Notifications, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Level</th>
                  <th scope="col">Type</th>
                  <th scope="col">Sent to</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {notifications.map((n, i) => {
                  const o = OUTCOMES[n.outcome];
                  return (
                    <tr key={`${n.time}-${i}`}>
                      <td class="stack-title">{formatTime(n.time)}</td>
                      <td data-label="Level">{n.level + 1}</td>
                      <td data-label="Type">{TYPE_TEXT[n.type] ?? n.type}</td>
                      <td data-label="Sent to" class="break">
                        {n.target}
                      </td>
                      <td data-label="Outcome">
                        <Badge kind={o?.[0] ?? 'muted'}>
                          <span title={o?.[2]}>{o?.[1] ?? n.outcome}</span>
                        </Badge>
                      </td>
                      <td data-label="Error" class={n.error ? 'attempt-error' : 'empty-cell'}>
                        {n.error || <span class="muted">—</span>}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </section>
  );
}
