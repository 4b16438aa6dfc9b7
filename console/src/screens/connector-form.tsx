// Screen 6c: create or edit a data connector: name, HTTPS URL, signature secret (write-only: never shown back),
// custom headers, label keys, the event-type filter ("all events" or a chosen list) and the delivery controls
// (extensions §X4, delivery-controls.tsx).
import { useEffect, useState } from 'preact/hooks';
import { api, idOf } from '../api.ts';
import { ErrorText, Field, FieldError, Loading, Title, useAction } from '../components.tsx';
import { urlProblem, type FieldMap } from '../form-errors.ts';
import { EVENT_TYPES, formatTime } from '../format.ts';
import { navigate } from '../router.ts';
import {
  DEFAULT_DELIVERY_CONFIG,
  DELIVERY_FIELDS,
  DeliveryControlsFields,
  type DeliveryDraft,
  deliveryConfigOf,
  deliveryDraftOf,
  readDeliveryDraft,
} from './delivery-controls.tsx';
import { rotationEnd } from './rotation.tsx';

interface Draft {
  displayName: string;
  url: string;
  secret: string;
  removeSecret: boolean;
  headers: [string, string][];
  labels: string;
  allEvents: boolean;
  events: string[];
  enabled: boolean;
  delivery: DeliveryDraft;
}

/** The API's field paths → the form's fields (the `name` of their controls). */
const FIELDS: FieldMap = {
  displayName: 'name',
  'httpConfig.url': 'url',
  'httpConfig.signatureSecret': 'secret',
  'httpConfig.headers': 'headers',
  labels: 'labels',
  events: 'events',
  ...DELIVERY_FIELDS,
};

const EMPTY: Draft = {
  displayName: '',
  url: 'https://',
  secret: '',
  removeSecret: false,
  headers: [],
  labels: 'name',
  allEvents: true,
  events: [],
  enabled: true,
  delivery: deliveryDraftOf(DEFAULT_DELIVERY_CONFIG),
};

export function ConnectorForm({ projectId, connectorId }: { projectId: string; connectorId?: string }) {
  const editing = connectorId !== undefined;
  const base = `/projects/${projectId}/dataconnectors`;
  const [draft, setDraft] = useState<Draft | null>(editing ? null : EMPTY);
  const [hadSecret, setHadSecret] = useState(false);
  /** The end of a secret rotation's overlap under way (extensions §X3), which a new secret here ends. */
  const [overlapEnd, setOverlapEnd] = useState<string | null>(null);
  const action = useAction(FIELDS);
  useEffect(() => {
    if (!editing) return;
    api('GET', `${base}/${connectorId}`).then((c) => {
      setHadSecret(c.httpConfig.signatureSecret !== '');
      setOverlapEnd(rotationEnd(c));
      setDraft({
        displayName: c.displayName,
        url: c.httpConfig.url,
        secret: '',
        removeSecret: false,
        headers: Object.entries(c.httpConfig.headers),
        labels: c.labels.join(', '),
        allEvents: c.events.length === 0,
        events: c.events,
        enabled: c.status === 'ACTIVE',
        delivery: deliveryDraftOf(deliveryConfigOf(c)),
      });
    }, action.setError);
  }, [connectorId]);
  if (!draft)
    return (
      <section>
        <Title>Edit data connector</Title>
        {action.error ? <ErrorText error={action.error} /> : <Loading />}
      </section>
    );
  const set = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });

  const submit = async (e: Event) => {
    e.preventDefault();
    const headers = Object.fromEntries(draft.headers.filter(([k]) => k.trim() !== '').map(([k, v]) => [k.trim(), v]));
    const labels = draft.labels
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const events = draft.allEvents ? [] : draft.events;
    const badUrl = urlProblem(draft.url.trim());
    if (badUrl) return action.fail('url', badUrl);
    if (!draft.allEvents && events.length === 0)
      return action.fail('events', 'Choose at least one event type, or "All events".');
    const delivery = readDeliveryDraft(draft.delivery, action.form.current);
    if ('field' in delivery) return action.fail(delivery.field, delivery.text);
    const httpConfig: Record<string, unknown> = { url: draft.url.trim(), headers };
    // Every field of the form is sent, as it shows; the delivery controls whole (the API merges them key by key).
    const mask = ['displayName', 'httpConfig.url', 'httpConfig.headers', 'labels', 'events', 'deliveryConfig'];
    if (draft.secret !== '') httpConfig.signatureSecret = draft.secret;
    else if (draft.removeSecret) httpConfig.signatureSecret = '';
    if ('signatureSecret' in httpConfig) mask.push('httpConfig.signatureSecret');
    await action.run(async () => {
      const body = {
        type: 'HTTP_PUSH',
        displayName: draft.displayName,
        httpConfig,
        labels,
        events,
        deliveryConfig: delivery.config,
      };
      const saved = editing
        ? await api('PATCH', `${base}/${connectorId}?updateMask=${mask.join(',')}`, body)
        : await api('POST', base, { ...body, status: draft.enabled ? 'ACTIVE' : 'USER_DISABLED' });
      navigate(`${base}/${idOf(saved.name)}`);
    });
  };

  return (
    <section>
      <Title>{editing ? 'Edit data connector' : 'New data connector'}</Title>
      <form class="card form-card" onSubmit={submit} onInput={action.onInput} ref={action.form} noValidate>
        <ErrorText error={action.error} />
        <Field label="Name" error={action.fieldError('name')}>
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
        <Field
          label="Endpoint URL"
          hint="An https:// address that answers 2xx within 10 s."
          error={action.fieldError('url')}
        >
          {(id, described, invalid) => (
            <input
              id={id}
              name="url"
              aria-describedby={described}
              aria-invalid={invalid}
              type="url"
              required
              maxLength={2048}
              value={draft.url}
              onInput={(e) => set({ url: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <Field
          error={action.fieldError('secret')}
          label="Signature secret"
          hint={
            editing
              ? hadSecret
                ? `A secret is set. Leave empty to keep it; it is never shown. A new secret here replaces it at once${overlapEnd ? `, and ends the rotation under way (the previous secret would sign until ${formatTime(overlapEnd)})` : ''}: to switch without a gap, use Rotate secret on the connector's page.`
                : 'Not signed now. Type a secret to sign pushes.'
              : 'Optional. Pushes carry an X-Service-Signature JWT made with it. It is never shown again.'
          }
        >
          {(id, described, invalid) => (
            <input
              id={id}
              name="secret"
              aria-describedby={described}
              aria-invalid={invalid}
              type="password"
              autocomplete="new-password"
              maxLength={256}
              value={draft.secret}
              onInput={(e) => set({ secret: (e.target as HTMLInputElement).value, removeSecret: false })}
            />
          )}
        </Field>
        {editing && hadSecret ? (
          <label class="check-label">
            <input
              type="checkbox"
              checked={draft.removeSecret}
              onChange={() => set({ removeSecret: !draft.removeSecret, secret: '' })}
            />{' '}
            Stop signing (remove the secret)
          </label>
        ) : null}
        <fieldset class="field wide" aria-describedby={action.fieldError('headers') ? 'headers-error' : undefined}>
          <legend>Custom headers</legend>
          {draft.headers.map(([k, v], i) => (
            <div class="header-row" key={i}>
              <label class="visually-hidden" for={`hk-${i}`}>
                Header {i + 1} name
              </label>
              <input
                id={`hk-${i}`}
                name="headers"
                placeholder="Authorization"
                value={k}
                onInput={(e) =>
                  set({
                    headers: draft.headers.map((h, j) => (j === i ? [(e.target as HTMLInputElement).value, h[1]] : h)),
                  })
                }
              />
              <label class="visually-hidden" for={`hv-${i}`}>
                Header {i + 1} value
              </label>
              <input
                id={`hv-${i}`}
                name="headers"
                placeholder="value"
                value={v}
                onInput={(e) =>
                  set({
                    headers: draft.headers.map((h, j) => (j === i ? [h[0], (e.target as HTMLInputElement).value] : h)),
                  })
                }
              />
              <button
                type="button"
                onClick={() => set({ headers: draft.headers.filter((_, j) => j !== i) })}
                aria-label={`Remove header ${i + 1}`}
              >
                Remove
              </button>
            </div>
          ))}
          <FieldError id="headers-error" text={action.fieldError('headers')} />
          <button type="button" onClick={() => set({ headers: [...draft.headers, ['', '']] })}>
            Add header
          </button>
        </fieldset>
        <Field
          label="Label keys to include"
          hint="Comma-separated device label keys copied into each push, e.g. name, room."
          error={action.fieldError('labels')}
        >
          {(id, described, invalid) => (
            <input
              id={id}
              name="labels"
              aria-describedby={described}
              aria-invalid={invalid}
              value={draft.labels}
              onInput={(e) => set({ labels: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <fieldset class="field wide" aria-describedby={action.fieldError('events') ? 'events-error' : undefined}>
          <legend>Events to push</legend>
          <label class="check-label">
            <input
              type="radio"
              name="events-mode"
              checked={draft.allEvents}
              onChange={() => {
                action.edited('events');
                set({ allEvents: true });
              }}
            />{' '}
            All events
          </label>
          <label class="check-label">
            <input
              type="radio"
              name="events-mode"
              checked={!draft.allEvents}
              onChange={() => set({ allEvents: false })}
            />{' '}
            Only these types:
          </label>
          <FieldError id="events-error" text={action.fieldError('events')} />
          <div class="check-grid">
            {EVENT_TYPES.map((t) => (
              <label key={t} class="check-label">
                <input
                  type="checkbox"
                  name="events"
                  disabled={draft.allEvents}
                  checked={!draft.allEvents && draft.events.includes(t)}
                  onChange={() =>
                    set({
                      events: draft.events.includes(t) ? draft.events.filter((x) => x !== t) : [...draft.events, t],
                    })
                  }
                />{' '}
                {t}
              </label>
            ))}
          </div>
        </fieldset>
        {!editing ? (
          <label class="check-label">
            <input type="checkbox" checked={draft.enabled} onChange={() => set({ enabled: !draft.enabled })} /> Active
            from the start
          </label>
        ) : null}
        <DeliveryControlsFields
          value={draft.delivery}
          onChange={(delivery) => set({ delivery })}
          fieldError={action.fieldError}
        />
        <div class="form-actions">
          <button type="submit" class="primary" disabled={action.busy}>
            {editing ? 'Save changes' : 'Create connector'}
          </button>
          <a class="button" href={editing ? `${base}/${connectorId}` : base}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}
