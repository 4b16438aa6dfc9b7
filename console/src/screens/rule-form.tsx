// Create or edit a notification rule (extensions §X5) in one form that makes the common cases quick: what to watch
// (a range on a reading, a state, a sensor offline, a data connector failing), which devices (all, chosen ones, or
// by labels), how long the condition must hold, an optional weekly schedule (folded away), and escalation levels of
// e-mail and webhook actions. The API decides; its 400s are shown at the field they name (form-errors.ts).
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { Rule, RuleTrigger } from '../alerts.ts';
import { api, idOf, listAll } from '../api.ts';
import { ErrorText, Field, FieldError, Loading, PairRows, Switch, Title, useAction, useLoad } from '../components.tsx';
import { reasonFor, usePermissions, useProject } from '../permissions.ts';
import { navigate } from '../router.ts';
import { apiValue, DURATION_UNITS, RANGE_FIELDS, STATE_FIELDS, scopeText, triggerText } from '../rule-text.ts';
import {
  changedFields,
  DAYS,
  type Draft,
  draftOf,
  emptyDraft,
  fieldsOf,
  isRange,
  type LevelDraft,
  newAction,
  newLevel,
  newSlot,
  readDraft,
  stateFieldOf,
} from './rule-draft.ts';
import { ActionFields, DevicePicker, DurationField, Group } from './rule-form-parts.tsx';

function ruleBasePath(projectId: string) {
  return `/projects/${projectId}/rules`;
}

export function RuleForm({ projectId, ruleId }: { projectId: string; ruleId?: string }) {
  const editing = ruleId !== undefined;
  const base = ruleBasePath(projectId);
  const [draft, setDraft] = useState<Draft | null>(editing ? null : emptyDraft());
  /** The body the rule as loaded reads as (changedFields); null while loading or when it does not read. */
  const [loaded, setLoaded] = useState<Record<string, unknown> | null>(null);
  const project = useProject(projectId);
  const perms = usePermissions(`projects/${projectId}`);
  /** Whether the schedule section is unfolded: as the user left it, else open when the rule has a schedule. */
  const [scheduleOpen, setScheduleOpen] = useState<boolean | null>(null);
  const fields = useMemo(() => (draft ? fieldsOf(draft) : {}), [draft]);
  const action = useAction(fields);
  useEffect(() => {
    if (!editing) return;
    api<Rule>('GET', `${base}/${ruleId}`).then((r) => {
      const d = draftOf(r);
      const read = readDraft(d, null);
      setLoaded('body' in read ? read.body : null);
      setDraft(d);
    }, action.setError);
  }, [ruleId]);
  const devices = useLoad(
    () => listAll<any>(`/projects/${projectId}/devices`, 'devices', 2).catch(() => []),
    [projectId],
  ).data;
  const organization = project?.organization;
  const groups = useLoad(
    async () =>
      organization ? listAll<any>(`/${organization}/contactGroups`, 'contactGroups', 2).catch(() => []) : null,
    [organization],
  ).data;
  const zones = useMemo(() => {
    let list: string[] = [];
    try {
      list = Intl.supportedValuesOf('timeZone');
    } catch {
      list = [];
    }
    return list.includes('UTC') ? list : ['UTC', ...list];
  }, []);

  if (!draft)
    return (
      <section>
        <Title>Edit rule</Title>
        {action.error ? <ErrorText error={action.error} /> : <Loading />}
      </section>
    );
  const set = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });
  const setLevel = (i: number, patch: Partial<LevelDraft>) =>
    set({ levels: draft.levels.map((l, j) => (j === i ? { ...l, ...patch } : l)) });
  const fe = action.fieldError;
  const range = isRange(draft.field);
  const stateField = stateFieldOf(draft.field);
  const unit = RANGE_FIELDS.find((r) => r[0] === draft.field)?.[2] ?? '';
  const deviceRule = draft.field !== 'dataConnector';

  const submit = async (e: Event) => {
    e.preventDefault();
    const read = readDraft(draft, action.form.current);
    if ('field' in read) return action.fail(read.field, read.text);
    await action.run(async () => {
      if (!editing) {
        const saved = await api<Rule>('POST', base, read.body);
        return navigate(`${base}/${idOf(saved.name)}`);
      }
      const changed = changedFields(loaded, read.body);
      if (changed.length > 0) {
        const body = Object.fromEntries(changed.map((k) => [k, read.body[k]]));
        await api<Rule>('PATCH', `${base}/${ruleId}?update_mask=${changed.join(',')}`, body);
      }
      navigate(`${base}/${ruleId}`);
    });
  };

  // What the rule does, in one line, as it is filled in (once its condition is complete).
  const preview = (() => {
    const trigger: RuleTrigger = {
      field: draft.field,
      range: null,
      presence: null,
      motion: null,
      occupancy: null,
      contact: null,
      connection: null,
      triggerCount: 0,
    };
    if (range) {
      const bound = (t: string) =>
        t.trim() === '' || !Number.isFinite(Number(t)) ? null : apiValue(draft.field, Number(t));
      trigger.range = { lower: bound(draft.lower), upper: bound(draft.upper), type: draft.rangeType };
      if (trigger.range.lower === null && trigger.range.upper === null) return null;
    } else if (stateField)
      (trigger as unknown as Record<string, string>)[stateField[2]] = draft.state || stateField[3][0]![0];
    const labels = Object.fromEntries(draft.labels.filter(([k]) => k.trim() !== '').map(([k, v]) => [k.trim(), v]));
    const scope = scopeText({
      devices: draft.scope === 'devices' ? draft.devices : [],
      deviceLabels: draft.scope === 'all' ? {} : labels,
      trigger,
    });
    const delay = draft.triggerDelay.value.trim();
    const unitWords = DURATION_UNITS.find((u) => u[0] === draft.triggerDelay.unit)?.[1] ?? '';
    return `Alert on ${scope} when ${triggerText(trigger)}${delay && Number(delay) > 0 ? ` for ${delay} ${unitWords}` : ''}${draft.useSchedule ? ', on the schedule' : ''}.`;
  })();

  if (perms.loaded && !perms.has('device.update'))
    return (
      <section>
        <Title>{editing ? 'Edit rule' : 'New rule'}</Title>
        <p class="muted">{reasonFor('device.update')} Creating and changing rules is not offered.</p>
      </section>
    );

  return (
    <section>
      <Title>{editing ? 'Edit rule' : 'New rule'}</Title>
      <form class="card form-card rule-form" onSubmit={submit} onInput={action.onInput} ref={action.form} noValidate>
        <ErrorText error={action.error} />
        <Field label="Name" error={fe('name')} hint="For example: Freezer 4 too warm.">
          {(id, described, invalid) => (
            <input
              id={id}
              name="name"
              aria-describedby={described}
              aria-invalid={invalid}
              maxLength={256}
              value={draft.displayName}
              onInput={(e) => set({ displayName: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>

        <fieldset class="field wide form-section">
          <legend>Condition</legend>
          <div class="field-pair">
            <Field label="Watch" error={fe('field')}>
              {(id, described, invalid) => (
                <select
                  id={id}
                  name="field"
                  aria-describedby={described}
                  aria-invalid={invalid}
                  value={draft.field}
                  onChange={(e) => {
                    const field = (e.target as HTMLSelectElement).value;
                    action.edited('field');
                    set({ field, state: stateFieldOf(field)?.[3][0]?.[0] ?? '' });
                  }}
                >
                  <optgroup label="Readings">
                    {RANGE_FIELDS.map(([f, label]) => (
                      <option key={f} value={f}>
                        {label}
                      </option>
                    ))}
                  </optgroup>
                  <optgroup label="States">
                    {STATE_FIELDS.filter((s) => s[0] !== 'connectionStatus').map(([f, label]) => (
                      <option key={f} value={f}>
                        {label}
                      </option>
                    ))}
                    <option value="touch">Touch</option>
                  </optgroup>
                  <optgroup label="Connectivity">
                    <option value="connectionStatus">Sensor or Cloud Connector offline</option>
                    <option value="dataConnector">A data connector failing</option>
                  </optgroup>
                </select>
              )}
            </Field>
            {range ? (
              <Field label="Alert when the value is" error={fe('rangeType')}>
                {(id, described, invalid) => (
                  <select
                    id={id}
                    name="rangeType"
                    aria-describedby={described}
                    aria-invalid={invalid}
                    value={draft.rangeType}
                    onChange={(e) =>
                      set({ rangeType: (e.target as HTMLSelectElement).value === 'WITHIN' ? 'WITHIN' : 'OUTSIDE' })
                    }
                  >
                    <option value="OUTSIDE">outside the range</option>
                    <option value="WITHIN">within the range</option>
                  </select>
                )}
              </Field>
            ) : stateField ? (
              <Field label="Alert on" error={fe('state')}>
                {(id, described, invalid) => (
                  <select
                    id={id}
                    name="state"
                    aria-describedby={described}
                    aria-invalid={invalid}
                    value={draft.state || stateField[3][0]![0]}
                    onChange={(e) => set({ state: (e.target as HTMLSelectElement).value })}
                  >
                    {stateField[3].map(([v, words]) => (
                      <option key={v} value={v}>
                        {words}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
            ) : null}
          </div>
          {range ? (
            <div class="field-pair">
              {(['lower', 'upper'] as const).map((b) => (
                <Field
                  key={b}
                  label={`${b === 'lower' ? 'Lower' : 'Upper'} limit (${unit})`}
                  error={fe(b)}
                  hint={b === 'lower' ? 'Inclusive. Empty: no lower limit.' : 'Inclusive. Empty: no upper limit.'}
                >
                  {(id, described, invalid) => (
                    <input
                      id={id}
                      name={b}
                      aria-describedby={described}
                      aria-invalid={invalid}
                      type="number"
                      inputMode="decimal"
                      step="any"
                      value={draft[b]}
                      onInput={(e) => {
                        const v = (e.target as HTMLInputElement).value;
                        set(b === 'lower' ? { lower: v } : { upper: v });
                      }}
                    />
                  )}
                </Field>
              ))}
            </div>
          ) : null}
          {draft.field === 'dataConnector' ? (
            <p class="muted small">
              Watches every data connector of this project: an alert triggers while one has had only failed pushes for
              the time below (15 minutes when empty), or was disabled by the system, and resolves at its next success or
              when it is enabled again.
            </p>
          ) : null}
          {draft.field === 'connectionStatus' && draft.state !== 'CLOUD_CONNECTOR_OFFLINE' ? (
            <p class="muted small">A sensor is offline when it has not been heard from for a while.</p>
          ) : null}
          <div class="field-pair">
            <DurationField
              label="For at least"
              name="triggerDelay"
              hint={
                draft.field === 'dataConnector'
                  ? 'How long a connector must fail first. Empty: 15 minutes.'
                  : 'How long the condition must hold before an alert triggers. Empty: at once.'
              }
              value={draft.triggerDelay}
              error={fe('triggerDelay')}
              onChange={(triggerDelay) => {
                action.edited('triggerDelay');
                set({ triggerDelay });
              }}
            />
            {deviceRule ? (
              <Field
                label="Events in a row"
                hint="How many events in a row must meet the condition. Empty or 1: the first."
                error={fe('triggerCount')}
              >
                {(id, described, invalid) => (
                  <input
                    id={id}
                    name="triggerCount"
                    aria-describedby={described}
                    aria-invalid={invalid}
                    type="number"
                    inputMode="numeric"
                    min={0}
                    max={100}
                    step={1}
                    placeholder="1"
                    value={draft.triggerCount}
                    onInput={(e) => set({ triggerCount: (e.target as HTMLInputElement).value })}
                  />
                )}
              </Field>
            ) : null}
          </div>
        </fieldset>

        {deviceRule ? (
          <fieldset class="field wide form-section">
            <legend>Devices</legend>
            <div class="inline scope-choice" role="radiogroup" aria-label="Which devices">
              {(
                [
                  ['all', 'All devices'],
                  ['devices', 'Chosen devices'],
                  ['labels', 'Devices with labels'],
                ] as const
              ).map(([v, label]) => (
                <label key={v} class="check-label">
                  <input
                    type="radio"
                    name="scope"
                    checked={draft.scope === v}
                    onChange={() => {
                      action.edited('devices');
                      action.edited('labels');
                      set({
                        scope: v,
                        labels: v === 'labels' && draft.labels.length === 0 ? [['', '']] : draft.labels,
                      });
                    }}
                  />{' '}
                  {label}
                </label>
              ))}
            </div>
            {draft.scope === 'all' ? (
              <p class="muted small">Every device of the project, those added later too.</p>
            ) : null}
            {draft.scope === 'devices' ? (
              <DevicePicker
                devices={devices}
                chosen={draft.devices}
                error={fe('devices')}
                onChange={(ids) => {
                  action.edited('devices');
                  set({ devices: ids });
                }}
              />
            ) : null}
            {draft.scope === 'labels' || (draft.scope === 'devices' && draft.labels.length > 0) ? (
              <Group
                legend={draft.scope === 'devices' ? 'And with these labels' : 'Labels'}
                id="labels"
                error={fe('labels')}
                hint="A device must carry every label listed, decided at each event. An empty value matches any value."
              >
                <PairRows
                  name="labels"
                  what="Label"
                  keyPlaceholder="key, e.g. fridge"
                  valuePlaceholder="any value"
                  rows={draft.labels}
                  invalid={fe('labels') !== undefined}
                  onChange={(labels) => set({ labels })}
                />
                <button type="button" onClick={() => set({ labels: [...draft.labels, ['', '']] })}>
                  Add label
                </button>
              </Group>
            ) : null}
          </fieldset>
        ) : null}

        <details
          class="field wide form-section schedule"
          open={scheduleOpen ?? draft.useSchedule}
          onToggle={(e) => setScheduleOpen((e.currentTarget as HTMLDetailsElement).open)}
        >
          <summary>
            <span class="section-title">Schedule</span>{' '}
            <span class="muted small">{draft.useSchedule ? `on, in ${draft.timezone}` : 'always evaluated'}</span>
          </summary>
          <Switch
            name="useSchedule"
            checked={draft.useSchedule}
            onChange={() => set({ useSchedule: !draft.useSchedule })}
          >
            Only evaluate events at these times
          </Switch>
          {draft.useSchedule ? (
            <>
              <Field label="Time zone" error={fe('timezone')}>
                {(id, described, invalid) => (
                  <select
                    id={id}
                    name="timezone"
                    aria-describedby={described}
                    aria-invalid={invalid}
                    value={draft.timezone}
                    onChange={(e) => set({ timezone: (e.target as HTMLSelectElement).value })}
                  >
                    {(zones.includes(draft.timezone) ? zones : [draft.timezone, ...zones]).map((z) => (
                      <option key={z} value={z}>
                        {z}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              {draft.slots.map((s, i) => (
                <div class="slot" key={s.key} role="group" aria-label={`Time ${i + 1}`}>
                  <Group legend="Days" id={`slot${i}-days`} error={fe(`slot${i}-days`)} class="days">
                    <div class="inline">
                      {DAYS.map((day) => (
                        <label key={day} class="check-label day">
                          <input
                            type="checkbox"
                            name={`slot${i}-days`}
                            checked={s.days.includes(day)}
                            onChange={() => {
                              action.edited(`slot${i}-days`);
                              set({
                                slots: draft.slots.map((x, j) =>
                                  j === i
                                    ? {
                                        ...x,
                                        days: x.days.includes(day) ? x.days.filter((d) => d !== day) : [...x.days, day],
                                      }
                                    : x,
                                ),
                              });
                            }}
                          />{' '}
                          <abbr title={day}>{day.slice(0, 3)}</abbr>
                        </label>
                      ))}
                    </div>
                  </Group>
                  <div class="slot-times">
                    {(['start', 'end'] as const).map((which) => (
                      <Field key={which} label={which === 'start' ? 'From' : 'To'} error={fe(`slot${i}-${which}`)}>
                        {(id, described, invalid) => (
                          <input
                            id={id}
                            name={`slot${i}-${which}`}
                            aria-describedby={described}
                            aria-invalid={invalid}
                            type="time"
                            required
                            value={s[which]}
                            onInput={(e) => {
                              const v = (e.target as HTMLInputElement).value || '00:00';
                              set({
                                slots: draft.slots.map((x, j) =>
                                  j !== i ? x : which === 'start' ? { ...x, start: v } : { ...x, end: v },
                                ),
                              });
                            }}
                          />
                        )}
                      </Field>
                    ))}
                    <button
                      type="button"
                      aria-label={`Remove time ${i + 1}`}
                      onClick={() => set({ slots: draft.slots.filter((_, j) => j !== i) })}
                    >
                      Remove
                    </button>
                  </div>
                </div>
              ))}
              <FieldError text={fe('schedule-add')} />
              <div class="inline">
                <button type="button" name="schedule-add" onClick={() => set({ slots: [...draft.slots, newSlot()] })}>
                  Add a time
                </button>
              </div>
              <small class="muted">
                A time whose end is at or before its start runs past midnight; 00:00 to 00:00 is the whole day.
              </small>
              <label class="check-label">
                <input type="checkbox" checked={draft.inverse} onChange={() => set({ inverse: !draft.inverse })} />{' '}
                Evaluate outside these times instead
              </label>
            </>
          ) : null}
        </details>

        <fieldset class="field wide form-section">
          <legend>Notifications</legend>
          <p class="muted small">
            Level 1 runs when the alert triggers. If nobody acknowledges the alert in time, the next level runs.
          </p>
          {draft.levels.map((l, i) => {
            const last = i === draft.levels.length - 1;
            return (
              <fieldset class="level-box" key={l.key}>
                <legend>Level {i + 1}</legend>
                <Field label={`Level ${i + 1} name`} hint="Optional, e.g. Kitchen staff." error={fe(`l${i}-name`)}>
                  {(id, described, invalid) => (
                    <input
                      id={id}
                      name={`l${i}-name`}
                      aria-describedby={described}
                      aria-invalid={invalid}
                      maxLength={256}
                      value={l.displayName}
                      onInput={(e) => setLevel(i, { displayName: (e.target as HTMLInputElement).value })}
                    />
                  )}
                </Field>
                {l.actions.map((a, j) => (
                  <ActionFields
                    key={a.key}
                    action={a}
                    at={`l${i}a${j}`}
                    index={`${i + 1}.${j + 1}`}
                    groups={groups}
                    projectId={projectId}
                    fieldError={fe}
                    onChange={(next) => setLevel(i, { actions: l.actions.map((x, k) => (k === j ? next : x)) })}
                    onRemove={() => setLevel(i, { actions: l.actions.filter((_, k) => k !== j) })}
                  />
                ))}
                <FieldError text={fe(`l${i}-add`)} />
                <div class="inline">
                  <button
                    type="button"
                    name={`l${i}-add`}
                    onClick={() => {
                      action.edited(`l${i}-add`);
                      setLevel(i, { actions: [...l.actions, newAction('EMAIL')] });
                    }}
                  >
                    Add e-mail
                  </button>
                  <button
                    type="button"
                    onClick={() => {
                      action.edited(`l${i}-add`);
                      setLevel(i, { actions: [...l.actions, newAction('WEBHOOK')] });
                    }}
                  >
                    Add webhook
                  </button>
                  {draft.levels.length > 1 ? (
                    <button
                      type="button"
                      class="danger"
                      onClick={() => set({ levels: draft.levels.filter((_, k) => k !== i) })}
                    >
                      Remove level {i + 1}
                    </button>
                  ) : null}
                </div>
                {/* The last level escalates nowhere: its time is the reminders' interval, asked for when they are on. */}
                {!last || draft.reminderNotifications || l.escalateAfter.value !== '' ? (
                  <DurationField
                    label={
                      last
                        ? draft.reminderNotifications
                          ? 'Remind every'
                          : 'Escalate after'
                        : `Escalate to level ${i + 2} after`
                    }
                    name={`l${i}-after`}
                    hint={
                      last
                        ? draft.reminderNotifications
                          ? 'While nobody acknowledges the alert, this level runs again at this interval.'
                          : 'There is no level after this one: add one, or turn reminders on below.'
                        : 'If nobody acknowledges the alert by then. Empty: never.'
                    }
                    value={l.escalateAfter}
                    error={fe(`l${i}-after`)}
                    onChange={(escalateAfter) => {
                      action.edited(`l${i}-after`);
                      setLevel(i, { escalateAfter });
                    }}
                  />
                ) : null}
              </fieldset>
            );
          })}
          {draft.levels.length < 10 ? (
            <div class="inline">
              <button
                type="button"
                onClick={() =>
                  set({
                    levels: [
                      ...draft.levels.map((l, i) =>
                        i === draft.levels.length - 1 && l.escalateAfter.value === ''
                          ? { ...l, escalateAfter: { value: '1', unit: 'h' } }
                          : l,
                      ),
                      newLevel([newAction('WEBHOOK')]),
                    ],
                  })
                }
              >
                Add escalation level
              </button>
            </div>
          ) : null}
          <div class="switches">
            <Switch
              name="resolvedNotifications"
              checked={draft.resolvedNotifications}
              onChange={() => set({ resolvedNotifications: !draft.resolvedNotifications })}
            >
              Notify when the alert resolves
            </Switch>
            <Switch
              name="reminderNotifications"
              checked={draft.reminderNotifications}
              onChange={() => set({ reminderNotifications: !draft.reminderNotifications })}
            >
              Remind while nobody acknowledges
            </Switch>
          </div>
          <DurationField
            label="An acknowledgement lasts"
            name="unacknowledgesAfter"
            placeholder="4"
            hint="Then the alert is unacknowledged and its level runs again, unless it resolved. Empty: 4 hours; 0: until it resolves."
            value={draft.unacknowledgesAfter}
            error={fe('unacknowledgesAfter')}
            onChange={(unacknowledgesAfter) => {
              action.edited('unacknowledgesAfter');
              set({ unacknowledgesAfter });
            }}
          />
        </fieldset>

        <Switch name="enabled" checked={draft.enabled} onChange={() => set({ enabled: !draft.enabled })}>
          Enabled
        </Switch>
        {preview ? (
          <p class="rule-preview" data-testid="rule-preview">
            {preview}
          </p>
        ) : null}
        <div class="form-actions">
          <button type="submit" class="primary" disabled={action.busy}>
            {editing ? 'Save changes' : 'Create rule'}
          </button>
          <a class="button" href={editing ? `${base}/${ruleId}` : base}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}
