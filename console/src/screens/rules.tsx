// The project's notification rules (extensions §X5): the list (name, what triggers it, which devices, its actions,
// an enabled switch) and one rule in words with its alerts. Project developers and up create, edit, switch and
// delete rules; other members read them.
import { useAlertChanges } from '../alert-stream.ts';
import type { Alert, Rule, Schedule } from '../alerts.ts';
import { durationText, scopeText, triggerText } from '../rule-text.ts';
import { api, idOf, listAll, query } from '../api.ts';
import { Badge, ConfirmButton, ErrorText, Loading, Title, useAction, useLoad } from '../components.tsx';
import { labelText } from '../format.ts';
import { reasonFor, usePermissions } from '../permissions.ts';
import { navigate } from '../router.ts';
import { AlertsTable, useTargetNames } from './alert-parts.tsx';
import { DAYS, hhmm } from './rule-draft.ts';

const TYPE_WORDS: Record<string, string> = { EMAIL: 'e-mail', WEBHOOK: 'webhook' };

/** "e-mail, webhook · 2 levels". */
function actionsText(rule: Rule): string {
  const types = [...new Set(rule.escalationLevels.flatMap((l) => l.actions.map((a) => TYPE_WORDS[a.type] ?? a.type)))];
  const levels = rule.escalationLevels.length;
  return `${types.join(', ') || 'nothing'}${levels > 1 ? ` · ${levels}\u00a0levels` : ''}`;
}

/** "Mon–Fri 08:00–17:00 (Europe/Oslo)"; "always" without a schedule. */
function scheduleText(s: Schedule | null): string {
  if (!s || s.slots.length === 0) return 'always';
  const short = (d: string) => d.slice(0, 3);
  const week = DAYS;
  const days = (list: string[]) => {
    if (list.length === 0 || list.length === 7) return 'every day';
    const idx = week.filter((d) => list.includes(d)).map((d) => week.indexOf(d));
    const run = idx.every((v, i) => i === 0 || v === idx[i - 1]! + 1);
    return run && idx.length > 2
      ? `${short(week[idx[0]!]!)}–${short(week[idx[idx.length - 1]!]!)}`
      : idx.map((i) => short(week[i]!)).join(', ');
  };
  const slots = s.slots
    .map((slot) => `${days(slot.days)} ${slot.times.map((t) => `${hhmm(t.start)}–${hhmm(t.end)}`).join(', ')}`)
    .join('; ');
  return `${s.inverse ? 'outside ' : ''}${slots} (${s.timezone})`;
}

/** The enabled switch: PATCH …?update_mask=enabled. */
function EnabledSwitch({ rule, canEdit, onChanged }: { rule: Rule; canEdit: boolean; onChanged: (r: Rule) => void }) {
  const action = useAction();
  const name = rule.displayName || idOf(rule.name);
  if (!canEdit) return <Badge kind={rule.enabled ? 'ok' : 'muted'}>{rule.enabled ? 'Enabled' : 'Disabled'}</Badge>;
  return (
    <span class="enabled-switch">
      <label class="check-label switch-label">
        <input
          type="checkbox"
          role="switch"
          aria-checked={rule.enabled}
          aria-label={`${name} enabled`}
          checked={rule.enabled}
          disabled={action.busy}
          onChange={() =>
            action.run(async () =>
              onChanged(await api<Rule>('PATCH', `/${rule.name}?update_mask=enabled`, { enabled: !rule.enabled })),
            )
          }
        />
        <span aria-hidden="true">{rule.enabled ? 'On' : 'Off'}</span>
      </label>
      <ErrorText error={action.error} />
    </span>
  );
}

export function Rules({ projectId }: { projectId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const canEdit = perms.has('device.update');
  const { data, error, setData } = useLoad(
    () => listAll<Rule>(`/projects/${projectId}/rules`, 'rules', 2),
    [projectId],
  );
  const replace = (r: Rule) => setData((data ?? []).map((x) => (x.name === r.name ? r : x)));
  return (
    <section>
      <Title
        actions={
          <>
            <a class="button" href={`/projects/${projectId}/alerts`}>
              Alerts
            </a>
            {canEdit ? (
              <a class="button primary" href={`/projects/${projectId}/rules/new`}>
                New rule
              </a>
            ) : null}
          </>
        }
      >
        Rules
      </Title>
      <p class="muted">
        A rule watches the events of this project's devices (or its data connectors) and raises an alert when its
        condition holds, then notifies by e-mail or webhook until someone acknowledges it.
      </p>
      {perms.loaded && !canEdit ? (
        <p class="muted small">{reasonFor('device.update')} Creating and changing rules is not offered.</p>
      ) : null}
      <ErrorText error={error} />
      {!data ? (
        error ? null : (
          <Loading />
        )
      ) : data.length === 0 ? (
        <p class="empty">
          No rules yet.
          {canEdit ? (
            <>
              {' '}
              <a href={`/projects/${projectId}/rules/new`}>Create one</a>: a freezer that must stay below −18 °C, a
              water leak, a door left open.
            </>
          ) : null}
        </p>
      ) : (
        <div class="table-wrap">
          <table class="rules stack-table">
            <thead>
              <tr>
                <th scope="col">Rule</th>
                <th scope="col">When</th>
                <th scope="col">Devices</th>
                <th scope="col">Notifies by</th>
                <th scope="col">Enabled</th>
              </tr>
            </thead>
            <tbody>
              {data.map((r) => (
                <tr key={r.name} class={r.enabled ? undefined : 'row-muted'}>
                  <td class="stack-title">
                    <a class="strong" href={`/${r.name}`}>
                      {r.displayName || idOf(r.name)}
                    </a>
                  </td>
                  <td data-label="When">
                    {triggerText(r.trigger)}
                    {r.triggerDelay && durationText(r.triggerDelay) !== 'none' ? (
                      <span class="muted small"> for {durationText(r.triggerDelay)}</span>
                    ) : null}
                    {r.schedule ? <div class="muted small">{scheduleText(r.schedule)}</div> : null}
                  </td>
                  <td data-label="Devices">{scopeText(r)}</td>
                  <td data-label="Notifies by">{actionsText(r)}</td>
                  <td data-label="Enabled">
                    <EnabledSwitch rule={r} canEdit={canEdit} onChanged={replace} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** One escalation level in words: its actions, one a line, and when it escalates. */
function LevelView({ rule, index, groups }: { rule: Rule; index: number; groups: Map<string, string> }) {
  const level = rule.escalationLevels[index]!;
  const last = index === rule.escalationLevels.length - 1;
  return (
    <li class="level-view">
      <strong>
        Level {index + 1}
        {level.displayName ? `: ${level.displayName}` : ''}
      </strong>
      <ul>
        {level.actions.map((a, i) => (
          <li key={i}>
            {a.type === 'EMAIL' && a.email ? (
              <>
                E-mail to{' '}
                {[...a.email.recipients, ...a.email.contactGroups.map((g) => `group ${groups.get(g) ?? idOf(g)}`)].join(
                  ', ',
                )}
                {a.email.subject ? <div class="muted small">Subject: {a.email.subject}</div> : null}
              </>
            ) : a.type === 'WEBHOOK' && a.webhook ? (
              <>
                Webhook <span class="mono small break">{a.webhook.url}</span>
                <span class="muted small">
                  {a.webhook.signatureSecret ? ' · signed' : ''}
                  {Object.keys(a.webhook.headers).length > 0
                    ? ` · headers ${Object.keys(a.webhook.headers).join(', ')}`
                    : ''}
                </span>
              </>
            ) : (
              a.type
            )}
          </li>
        ))}
      </ul>
      {level.escalateAfter ? (
        <div class="muted small">
          {last
            ? rule.reminderNotifications
              ? `Runs again every ${durationText(level.escalateAfter)} while nobody acknowledges.`
              : `Escalate after ${durationText(level.escalateAfter)}: there is no next level.`
            : `Escalates to level ${index + 2} after ${durationText(level.escalateAfter)} without an acknowledgement.`}
        </div>
      ) : null}
    </li>
  );
}

export function RulePage({ projectId, ruleId }: { projectId: string; ruleId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const canEdit = perms.has('device.update');
  const base = `/projects/${projectId}/rules/${ruleId}`;
  const { data: rule, error, setData } = useLoad(() => api<Rule>('GET', base), [base]);
  const alerts = useLoad(
    () =>
      api<{ alerts: Alert[]; nextPageToken: string }>(
        'GET',
        `/projects/${projectId}/alerts${query({ rule: ruleId, pageSize: 20 })}`,
      ),
    [projectId, ruleId],
  );
  useAlertChanges(projectId, (a) => {
    if (a === null || idOf(a.rule) === ruleId) alerts.reload();
  });
  const groups = useLoad(async () => {
    const names = rule?.escalationLevels.flatMap((l) => l.actions.flatMap((a) => a.email?.contactGroups ?? [])) ?? [];
    if (names.length === 0) return new Map<string, string>();
    const org = names[0]!.split('/contactGroups/')[0]!;
    const list = await listAll<any>(`/${org}/contactGroups`, 'contactGroups', 2).catch(() => []);
    return new Map(list.map((g: any) => [g.name as string, g.displayName as string]));
  }, [rule?.name, rule?.updateTime]);
  const names = useTargetNames(
    projectId,
    (alerts.data?.alerts ?? []).map((a) => a.targetName),
  );
  const action = useAction();
  if (!rule)
    return (
      <section>
        <Title>Rule</Title>
        {error ? <ErrorText error={error} /> : <Loading />}
      </section>
    );
  const rules = new Map([[rule.name, rule]]);
  const labels = Object.entries(rule.deviceLabels);
  return (
    <section>
      <Title
        sub={
          <>
            <EnabledSwitch rule={rule} canEdit={canEdit} onChanged={setData} />
            <div class="muted small mono">{rule.name}</div>
          </>
        }
      >
        {rule.displayName || ruleId}
      </Title>
      <div class="toolbar">
        <a class="button" href={`/projects/${projectId}/rules`}>
          ← Rules
        </a>
        {canEdit ? (
          <a class="button primary" href={`${base}/edit`}>
            Edit
          </a>
        ) : null}
        <span class="spacer" />
        {canEdit ? (
          <ConfirmButton
            label="Delete"
            confirm="Delete this rule and its alerts?"
            onConfirm={async () => {
              if (await action.run(() => api('DELETE', base))) navigate(`/projects/${projectId}/rules`);
            }}
          />
        ) : null}
      </div>
      {perms.loaded && !canEdit ? (
        <p class="muted small">{reasonFor('device.update')} Editing and deleting rules is not offered.</p>
      ) : null}
      <ErrorText error={action.error} />
      <div class="grid-2">
        <section class="card" aria-labelledby="when-h">
          <h2 id="when-h">Condition</h2>
          <dl class="props">
            <div>
              <dt>When</dt>
              <dd data-testid="rule-trigger">{triggerText(rule.trigger)}</dd>
            </div>
            {rule.trigger.triggerCount > 1 ? (
              <div>
                <dt>Events in a row</dt>
                <dd>{rule.trigger.triggerCount}</dd>
              </div>
            ) : null}
            <div>
              <dt>For at least</dt>
              <dd>
                {rule.triggerDelay && durationText(rule.triggerDelay) !== 'none'
                  ? durationText(rule.triggerDelay)
                  : rule.trigger.field === 'dataConnector'
                    ? '15 min'
                    : 'at once'}
              </dd>
            </div>
            <div>
              <dt>Devices</dt>
              <dd>
                {rule.devices.length > 0 ? (
                  <ul class="plain">
                    {rule.devices.map((d) => (
                      <li key={d}>
                        <a href={`/${d}`} class="mono small">
                          {idOf(d)}
                        </a>
                      </li>
                    ))}
                  </ul>
                ) : null}
                {labels.length > 0 ? (
                  <div>
                    {rule.devices.length > 0 ? 'labelled' : 'devices labelled'}{' '}
                    {labels.map(([k, v]) => labelText(k, v)).join(', ')}
                  </div>
                ) : null}
                {rule.devices.length === 0 && labels.length === 0 ? scopeText(rule) : null}
              </dd>
            </div>
            <div>
              <dt>Schedule</dt>
              <dd>{scheduleText(rule.schedule)}</dd>
            </div>
          </dl>
        </section>
        <section class="card" aria-labelledby="notify-h">
          <h2 id="notify-h">Notifications</h2>
          <ol class="levels">
            {rule.escalationLevels.map((_, i) => (
              <LevelView key={i} rule={rule} index={i} groups={groups.data ?? new Map()} />
            ))}
          </ol>
          <p class="muted small">
            {rule.resolvedNotifications ? 'Notifies when the alert resolves. ' : 'No notification when it resolves. '}
            {rule.reminderNotifications ? 'Reminds while nobody acknowledges. ' : ''}
            An acknowledgement lasts{' '}
            {rule.unacknowledgesAfter === '0s'
              ? 'until the alert resolves'
              : durationText(rule.unacknowledgesAfter ?? '14400s')}
            .
          </p>
        </section>
      </div>
      <section class="card" aria-labelledby="rule-alerts-h">
        <div class="card-head">
          <h2 id="rule-alerts-h">Alerts</h2>
          <span class="spacer" />
          <a href={`/projects/${projectId}/alerts?rule=${ruleId}`}>All alerts of this rule</a>
        </div>
        <ErrorText error={alerts.error} />
        {!alerts.data ? (
          alerts.error ? null : (
            <Loading />
          )
        ) : alerts.data.alerts.length === 0 ? (
          <p class="muted">None yet.</p>
        ) : (
          <AlertsTable alerts={alerts.data.alerts} rules={rules} names={names} caption="Alerts of this rule" />
        )}
      </section>
    </section>
  );
}
