// The parts of the rule form (rule-form.tsx): a duration (a number and its unit), key/value rows, a fieldset read
// with its error, the device picker, and one e-mail or webhook action of an escalation level.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { idOf } from '../api.ts';
import { Field, FieldError, Loading, PairRows } from '../components.tsx';
import { DURATION_UNITS } from '../rule-text.ts';
import { type ActionDraft, type Duration, PLACEHOLDERS } from './rule-draft.ts';

export type FieldErrorOf = (field: string) => string | undefined;

/** A length of time: a number and its unit. `name` is the number's control (the API's errors go to it). */
export function DurationField(props: {
  label: string;
  name: string;
  hint: string;
  value: Duration;
  placeholder?: string;
  error?: string;
  onChange: (d: Duration) => void;
}) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error}>
      {(id, described, invalid) => (
        <div class="duration">
          <input
            id={id}
            name={props.name}
            aria-describedby={described}
            aria-invalid={invalid}
            type="number"
            inputMode="decimal"
            min={0}
            step="any"
            placeholder={props.placeholder ?? 'none'}
            value={props.value.value}
            onInput={(e) => props.onChange({ ...props.value, value: (e.target as HTMLInputElement).value })}
          />
          <select
            aria-label={`${props.label}: unit`}
            value={props.value.unit}
            onChange={(e) => props.onChange({ ...props.value, unit: (e.target as HTMLSelectElement).value })}
          >
            {DURATION_UNITS.map(([u, l]) => (
              <option key={u} value={u}>
                {l}
              </option>
            ))}
          </select>
        </div>
      )}
    </Field>
  );
}

/** A fieldset whose error is read with it (a group of checkboxes or rows). */
export function Group(props: {
  legend: string;
  id: string;
  hint?: ComponentChildren;
  error?: string;
  class?: string;
  children: ComponentChildren;
}) {
  const described = [props.hint ? `${props.id}-hint` : '', props.error ? `${props.id}-error` : '']
    .filter(Boolean)
    .join(' ');
  return (
    <fieldset class={`field ${props.class ?? ''}`} aria-describedby={described || undefined}>
      <legend>{props.legend}</legend>
      {props.hint ? <small id={`${props.id}-hint`}>{props.hint}</small> : null}
      {props.children}
      <FieldError id={`${props.id}-error`} text={props.error} />
    </fieldset>
  );
}

export function DevicePicker({
  devices,
  chosen,
  error,
  onChange,
}: {
  devices: any[] | null;
  chosen: string[];
  error?: string;
  onChange: (ids: string[]) => void;
}) {
  const [filter, setFilter] = useState('');
  const known = new Set((devices ?? []).map((d) => idOf(d.name)));
  const q = filter.trim().toLowerCase();
  const shown = (devices ?? []).filter(
    (d) =>
      q === '' ||
      idOf(d.name).toLowerCase().includes(q) ||
      Object.entries(d.labels ?? {}).some(([k, v]) => `${k}=${v}`.toLowerCase().includes(q)),
  );
  const toggle = (id: string) => onChange(chosen.includes(id) ? chosen.filter((x) => x !== id) : [...chosen, id]);
  return (
    <Group
      legend="Devices"
      id="devices"
      error={error}
      hint={`${chosen.length} chosen. Search by name, label or id.`}
      class="device-picker"
    >
      <label class="visually-hidden" for="device-search">
        Search devices
      </label>
      <input
        id="device-search"
        type="search"
        placeholder="Search devices"
        value={filter}
        onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
      />
      <div class="pick-list">
        {devices === null ? <Loading what="Loading devices" /> : null}
        {chosen
          .filter((id) => !known.has(id))
          .map((id) => (
            <label key={id} class="check-label">
              <input type="checkbox" name="devices" checked onChange={() => toggle(id)} />{' '}
              <span class="mono small">{id}</span>
            </label>
          ))}
        {shown.map((d) => {
          const id = idOf(d.name);
          return (
            <label key={id} class="check-label">
              <input type="checkbox" name="devices" checked={chosen.includes(id)} onChange={() => toggle(id)} />{' '}
              <span>
                {d.labels?.name || id}
                {d.labels?.name ? <span class="muted small mono"> {id}</span> : null}
                <span class="muted small"> · {d.type}</span>
              </span>
            </label>
          );
        })}
        {devices !== null && shown.length === 0 ? <p class="muted small">No device matches.</p> : null}
      </div>
    </Group>
  );
}

export function ActionFields({
  action,
  at,
  index,
  groups,
  projectId,
  fieldError,
  onChange,
  onRemove,
}: {
  action: ActionDraft;
  at: string;
  index: string;
  groups: any[] | null;
  projectId: string;
  fieldError: FieldErrorOf;
  onChange: (a: ActionDraft) => void;
  onRemove: () => void;
}) {
  const set = (patch: Partial<ActionDraft>) => onChange({ ...action, ...patch });
  const kind = action.type === 'EMAIL' ? 'E-mail' : 'Webhook';
  const groupsError = fieldError(`${at}-groups`);
  return (
    <div class="action-box" role="group" aria-label={`Action ${index}: ${kind}`}>
      <div class="action-head">
        <strong>{kind}</strong>
        <span class="spacer" />
        <button type="button" onClick={onRemove} aria-label={`Remove action ${index} (${kind.toLowerCase()})`}>
          Remove
        </button>
      </div>
      {action.type === 'EMAIL' ? (
        <>
          <Field
            label="Recipients"
            hint="E-mail addresses, separated by commas. The service needs an SMTP server (SENSORCLOUD_SMTP_URL) to send e-mail."
            error={fieldError(`${at}-recipients`)}
          >
            {(id, described, invalid) => (
              <input
                id={id}
                name={`${at}-recipients`}
                aria-describedby={described}
                aria-invalid={invalid}
                type="text"
                inputMode="email"
                autocomplete="off"
                placeholder="kitchen@example.org, facilities@example.org"
                value={action.recipients}
                onInput={(e) => set({ recipients: (e.target as HTMLInputElement).value })}
              />
            )}
          </Field>
          <Group
            legend="Contact groups"
            id={`${at}-groups`}
            error={groupsError}
            hint={
              <>
                Their contacts in this project are mailed too (<a href={`/projects/${projectId}/contacts`}>contacts</a>
                ).
              </>
            }
          >
            {groups === null ? (
              <Loading what="Loading contact groups" />
            ) : groups.length === 0 && action.groups.length === 0 ? (
              <p class="muted small">No contact groups yet: create them on the Contacts page.</p>
            ) : (
              <div class="check-grid">
                {[
                  ...groups,
                  ...action.groups.filter((g) => !groups.some((x) => x.name === g)).map((g) => ({ name: g })),
                ].map((g) => (
                  <label key={g.name} class="check-label">
                    <input
                      type="checkbox"
                      name={`${at}-groups`}
                      aria-invalid={groupsError ? true : undefined}
                      checked={action.groups.includes(g.name)}
                      onChange={() =>
                        set({
                          groups: action.groups.includes(g.name)
                            ? action.groups.filter((x) => x !== g.name)
                            : [...action.groups, g.name],
                        })
                      }
                    />{' '}
                    {g.displayName ?? idOf(g.name)}
                    {g.contactCount !== undefined ? <span class="muted small"> ({g.contactCount})</span> : null}
                  </label>
                ))}
              </div>
            )}
          </Group>
          <Field label="Subject" error={fieldError(`${at}-subject`)}>
            {(id, described, invalid) => (
              <input
                id={id}
                name={`${at}-subject`}
                aria-describedby={described}
                aria-invalid={invalid}
                maxLength={256}
                value={action.subject}
                onInput={(e) => set({ subject: (e.target as HTMLInputElement).value })}
              />
            )}
          </Field>
          <Field label="Message" error={fieldError(`${at}-body`)}>
            {(id, described, invalid) => (
              <textarea
                id={id}
                name={`${at}-body`}
                aria-describedby={described}
                aria-invalid={invalid}
                rows={3}
                maxLength={10_000}
                value={action.body}
                onInput={(e) => set({ body: (e.target as HTMLTextAreaElement).value })}
              />
            )}
          </Field>
          <details class="placeholders">
            <summary>Placeholders for the subject and message</summary>
            <dl>
              {PLACEHOLDERS.map(([p, what]) => (
                <div key={p}>
                  <dt>
                    <code>{p}</code>
                  </dt>
                  <dd>{what}</dd>
                </div>
              ))}
            </dl>
          </details>
        </>
      ) : (
        <>
          <Field
            label="Webhook URL"
            hint='An https:// address. It gets a POST of {"alert", "event"} with X-Sensorcloud-Alert-Transition, retried for up to 12 hours.'
            error={fieldError(`${at}-url`)}
          >
            {(id, described, invalid) => (
              <input
                id={id}
                name={`${at}-url`}
                aria-describedby={described}
                aria-invalid={invalid}
                type="url"
                maxLength={2048}
                value={action.url}
                onInput={(e) => set({ url: (e.target as HTMLInputElement).value })}
              />
            )}
          </Field>
          <Field
            label="Webhook secret"
            hint="Optional: requests carry an X-Service-Signature made with it, as a data connector's pushes."
            error={fieldError(`${at}-secret`)}
          >
            {(id, described, invalid) => (
              <input
                id={id}
                name={`${at}-secret`}
                aria-describedby={described}
                aria-invalid={invalid}
                type="password"
                autocomplete="new-password"
                maxLength={256}
                value={action.secret}
                onInput={(e) => set({ secret: (e.target as HTMLInputElement).value })}
              />
            )}
          </Field>
          <Group legend="Headers" id={`${at}-headers`} error={fieldError(`${at}-headers`)}>
            <PairRows
              name={`${at}-headers`}
              what={`Action ${index} header`}
              keyPlaceholder="X-Api-Key"
              valuePlaceholder="value"
              rows={action.headers}
              invalid={fieldError(`${at}-headers`) !== undefined}
              onChange={(headers) => set({ headers })}
            />
            <button type="button" onClick={() => set({ headers: [...action.headers, ['', '']] })}>
              Add header
            </button>
          </Group>
        </>
      )}
    </div>
  );
}
