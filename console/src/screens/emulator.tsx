// Screen 4: the emulator. Create emulated devices of the 12 types with a name and labels; for one device, a
// form per event type it emits (all 18 publishable types across the device types) and a one-click touch.
import { useState } from 'preact/hooks';
import { api, idOf, query } from '../api.ts';
import { Badge, ErrorText, Field, Loading, Notice, Title, useAction, useLoad } from '../components.tsx';
import { DEVICE_TYPE_LABELS, DEVICE_TYPES, formatTime } from '../format.ts';
import { defaultValues, EVENT_FORMS, EVENTS_BY_DEVICE_TYPE, publishBody, type FormValues } from '../event-forms.ts';
import { reasonFor, usePermissions } from '../permissions.ts';
import { setParams, useLocation } from '../router.ts';

/** "key=value" lines into labels; a line without "=" is a key with an empty value. */
function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const line of text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)) {
    const eq = line.indexOf('=');
    if (eq < 0) labels[line] = '';
    else labels[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return labels;
}

function CreateDevice({ projectId, onCreated }: { projectId: string; onCreated: (device: any) => void }) {
  const [type, setType] = useState('temperature');
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [extra, setExtra] = useState('');
  const [created, setCreated] = useState<any>(null);
  const action = useAction();
  return (
    <section class="card" aria-labelledby="create-h">
      <h2 id="create-h">Create an emulated device</h2>
      <form
        class="grid-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setCreated(null);
          const labels: Record<string, string> = { ...parseLabels(extra) };
          if (name.trim()) labels.name = name.trim();
          if (description.trim()) labels.description = description.trim();
          await action.run(async () => {
            const device = await api('POST', `/projects/${projectId}/devices`, { type, labels });
            setCreated(device);
            setName('');
            setDescription('');
            onCreated(device);
          });
        }}
      >
        <Field label="Device type">
          {(id) => (
            <select id={id} value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
              {DEVICE_TYPES.map((t) => (
                <option key={t} value={t}>
                  {DEVICE_TYPE_LABELS[t]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Name">
          {(id) => (
            <input
              id={id}
              maxLength={1024}
              placeholder="Meeting room 4"
              value={name}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <Field label="Description">
          {(id) => (
            <input
              id={id}
              maxLength={1024}
              value={description}
              onInput={(e) => setDescription((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <Field label="Other labels" hint="one key=value per line" wide>
          {(id, hint) => (
            <textarea
              id={id}
              aria-describedby={hint}
              rows={2}
              value={extra}
              onInput={(e) => setExtra((e.target as HTMLTextAreaElement).value)}
            />
          )}
        </Field>
        <div class="form-actions">
          <button type="submit" class="primary" disabled={action.busy}>
            Create device
          </button>
        </div>
      </form>
      <ErrorText error={action.error} />
      {created ? (
        <Notice>
          Created{' '}
          <a href={`/projects/${projectId}/devices/${idOf(created.name)}`}>
            {created.labels.name || idOf(created.name)}
          </a>
          . Publish its events below.
        </Notice>
      ) : null}
    </section>
  );
}

function EventForm({
  base,
  eventType,
  onPublished,
}: {
  base: string;
  eventType: string;
  onPublished: (text: string) => void;
}) {
  const [values, setValues] = useState<FormValues>(() => defaultValues(eventType));
  const [problem, setProblem] = useState<string | null>(null);
  const action = useAction();
  const set = (key: string, v: string | string[]) => setValues({ ...values, [key]: v });
  return (
    <form
      class="event-form"
      noValidate
      aria-label={`Publish a ${eventType} event`}
      onSubmit={async (e) => {
        e.preventDefault();
        const built = publishBody(eventType, values);
        if ('problem' in built) {
          setProblem(built.problem);
          return;
        }
        setProblem(null);
        if (await action.run(() => api('POST', `${base}:publish`, built.body)))
          onPublished(`${eventType} published at ${formatTime(new Date().toISOString())}.`);
      }}
    >
      <h3>{eventType}</h3>
      <div class="grid-form">
        {EVENT_FORMS[eventType]!.map((f) => {
          if (f.kind === 'number') {
            return (
              <Field
                key={f.key}
                label={`${f.label}${f.unit ? ` (${f.unit})` : ''}`}
                hint={f.min !== undefined || f.max !== undefined ? `${f.min ?? '−∞'} to ${f.max ?? '∞'}` : undefined}
              >
                {(id, hint) => (
                  <input
                    id={id}
                    aria-describedby={hint}
                    type="number"
                    inputMode="decimal"
                    step={f.step ?? 'any'}
                    min={f.min}
                    max={f.max}
                    required
                    value={values[f.key] as string}
                    onInput={(e) => set(f.key, (e.target as HTMLInputElement).value)}
                  />
                )}
              </Field>
            );
          }
          if (f.kind === 'enum') {
            return (
              <Field key={f.key} label={f.label}>
                {(id) => (
                  <select
                    id={id}
                    value={values[f.key] as string}
                    onChange={(e) => set(f.key, (e.target as HTMLSelectElement).value)}
                  >
                    {f.options.map((o) => (
                      <option key={o} value={o}>
                        {o}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
            );
          }
          if (f.kind === 'multi') {
            const chosen = values[f.key] as string[];
            return (
              <fieldset key={f.key} class="field">
                <legend>{f.label}</legend>
                {f.options.map((o) => (
                  <label key={o} class="check-label">
                    <input
                      type="checkbox"
                      checked={chosen.includes(o)}
                      onChange={() => set(f.key, chosen.includes(o) ? chosen.filter((x) => x !== o) : [...chosen, o])}
                    />{' '}
                    {o}
                  </label>
                ))}
              </fieldset>
            );
          }
          return (
            <Field key={f.key} label={f.label} hint={f.kind === 'list' ? f.hint : undefined}>
              {(id, hint) => (
                <input
                  id={id}
                  aria-describedby={hint}
                  value={values[f.key] as string}
                  onInput={(e) => set(f.key, (e.target as HTMLInputElement).value)}
                />
              )}
            </Field>
          );
        })}
        <Field label="Event time" hint="empty = now">
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              type="datetime-local"
              step="1"
              value={values.updateTime as string}
              onInput={(e) => set('updateTime', (e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
      </div>
      {problem ? (
        <p class="error" role="alert">
          {problem}
        </p>
      ) : null}
      <ErrorText error={action.error} />
      <button type="submit" class="primary" disabled={action.busy}>
        Publish {eventType}
      </button>
    </form>
  );
}

function Publisher({ projectId, device }: { projectId: string; device: any }) {
  const { params } = useLocation();
  const types = EVENTS_BY_DEVICE_TYPE[device.type] ?? [];
  const eventType = types.includes(params.get('event') ?? '')
    ? params.get('event')!
    : (types.find((t) => t !== 'touch') ?? 'touch');
  const [last, setLast] = useState<string | null>(null);
  const touch = useAction();
  const base = `/projects/${projectId}/devices/${idOf(device.name)}`;
  return (
    <section class="card" aria-labelledby="publish-h">
      <div class="card-head">
        <h2 id="publish-h">Publish events from {device.labels.name || idOf(device.name)}</h2>
        {device.labels.demo !== undefined ? <Badge kind="demo">demo</Badge> : null}
        <span class="spacer" />
        {types.includes('touch') ? (
          <button
            type="button"
            class="primary"
            disabled={touch.busy}
            onClick={async () => {
              if (await touch.run(() => api('POST', `${base}:publish`, { touch: {} })))
                setLast(`touch published at ${formatTime(new Date().toISOString())}.`);
            }}
          >
            Touch
          </button>
        ) : null}
        <a href={`/projects/${projectId}/devices/${idOf(device.name)}`} class="button">
          Device page
        </a>
      </div>
      <ErrorText error={touch.error} />
      <div class="tabs" role="group" aria-label="Event type">
        {types.map((t) => (
          <button
            key={t}
            type="button"
            aria-pressed={t === eventType}
            class={t === eventType ? 'tab active' : 'tab'}
            onClick={() => setParams({ event: t })}
          >
            {t}
          </button>
        ))}
      </div>
      {/* A form of its own per event type (the key): its fields start from that type's defaults in the first render.
          Reset in an effect after it, a value typed at once was overwritten or added to ("100" became "100100"). */}
      <EventForm key={eventType} base={base} eventType={eventType} onPublished={setLast} />
      {last ? (
        <Notice>
          {last} <a href={`/projects/${projectId}/live?device=${idOf(device.name)}`}>Watch live</a> ·{' '}
          <a href={`/projects/${projectId}/devices/${idOf(device.name)}`}>History</a>
        </Notice>
      ) : null}
    </section>
  );
}

export function Emulator({ projectId }: { projectId: string }) {
  const { params } = useLocation();
  const perms = usePermissions(`projects/${projectId}`);
  const selected = params.get('device') ?? '';
  const list = useLoad(
    () =>
      api<{ devices: any[] }>(
        'GET',
        `/projects/${projectId}/devices${query({ pageSize: 1000, label_filters: ['virtual-sensor'] })}`,
      ),
    [projectId],
  );
  const emulated = (list.data?.devices ?? []).filter((d) => idOf(d.name).startsWith('emu'));
  const device = emulated.find((d) => idOf(d.name) === selected);
  return (
    <section>
      <Title>Emulator</Title>
      <p class="muted">
        Emulated devices behave like real ones: their events are stored, streamed and pushed to data connectors.
      </p>
      {perms.loaded && !perms.has('emulator.create') ? (
        <p class="muted">{reasonFor('emulator.create')} Creating devices is not offered.</p>
      ) : null}
      {perms.has('emulator.create') ? (
        <CreateDevice
          projectId={projectId}
          onCreated={(d) => {
            list.reload();
            setParams({ device: idOf(d.name), event: undefined });
          }}
        />
      ) : null}
      <section class="card" aria-labelledby="choose-h">
        <h2 id="choose-h">Emulated devices</h2>
        <ErrorText error={list.error} />
        {!list.data ? (
          <Loading />
        ) : emulated.length === 0 ? (
          <p class="muted">No emulated devices yet.</p>
        ) : (
          <Field label="Device">
            {(id) => (
              <select
                id={id}
                value={selected}
                onChange={(e) => setParams({ device: (e.target as HTMLSelectElement).value, event: undefined })}
              >
                <option value="">Choose a device</option>
                {emulated.map((d) => (
                  <option
                    key={d.name}
                    value={idOf(d.name)}
                  >{`${d.labels.name || idOf(d.name)} — ${DEVICE_TYPE_LABELS[d.type]}${d.labels.demo !== undefined ? ' (demo)' : ''}`}</option>
                ))}
              </select>
            )}
          </Field>
        )}
      </section>
      {device ? (
        perms.has('emulator.update') ? (
          <Publisher projectId={projectId} device={device} />
        ) : (
          <p class="muted">{reasonFor('emulator.update')} Publishing is not offered.</p>
        )
      ) : null}
    </section>
  );
}
