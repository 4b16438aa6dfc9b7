// Screen 3a: the project's devices, paged and filterable (type, label key/value, free text), with the `name` and
// `description` labels, type, last seen and the latest reading of each type; batch label edit of selected devices.
import { useState } from 'preact/hooks';
import { api, idOf, query } from '../api.ts';
import { Badge, ErrorText, Field, Loading, Notice, Pager, Title, useAction, useLoad } from '../components.tsx';
import { DEVICE_TYPE_LABELS, DEVICE_TYPES, latestUpdate, readingText, relativeTime } from '../format.ts';
import { reasonFor, usePermissions } from '../permissions.ts';
import { setParams, useLocation, useUrlDraft } from '../router.ts';

export const PAGE_SIZE = 50;

/** Labels shown as chips: everything but the two the console shows as name and description. */
export function LabelChips({ labels }: { labels: Record<string, string> }) {
  const entries = Object.entries(labels).filter(([k]) => k !== 'name' && k !== 'description');
  if (entries.length === 0) return null;
  return (
    <ul class="chips" aria-label="Labels">
      {entries.map(([k, v]) => (
        <li key={k} class={k === 'demo' ? 'chip chip-demo' : 'chip'}>
          {v === '' ? k : `${k}=${v}`}
        </li>
      ))}
    </ul>
  );
}

function BatchLabels({ projectId, selected, onDone }: { projectId: string; selected: string[]; onDone: () => void }) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [mode, setMode] = useState<'add' | 'remove'>('add');
  const [result, setResult] = useState<string | null>(null);
  const action = useAction();
  return (
    <form
      class="batch card"
      aria-label="Edit labels of the selected devices"
      onSubmit={async (e) => {
        e.preventDefault();
        setResult(null);
        const body =
          mode === 'add'
            ? { devices: selected, addLabels: { [key]: value } }
            : { devices: selected, removeLabels: [key] };
        await action.run(async () => {
          // As on the device page: the label that marks emulated devices is kept (the Emulator lists them by it).
          if (mode === 'remove' && key === 'virtual-sensor')
            throw new Error('virtual-sensor is kept: it marks emulated devices, and the Emulator lists devices by it.');
          const res = await api<{ batchErrors: any[] }>('POST', `/projects/${projectId}/devices:batchUpdate`, body);
          const failed = res.batchErrors.length;
          setResult(
            failed === 0
              ? `${mode === 'add' ? 'Set' : 'Removed'} label "${key}" on ${selected.length} device${selected.length === 1 ? '' : 's'}.`
              : `${selected.length - failed} changed; ${failed} failed: ${res.batchErrors.map((b) => `${idOf(b.device)}: ${b.status.message}`).join('; ')}`,
          );
          onDone();
        });
      }}
    >
      <strong>{selected.length} selected</strong>
      <Field label="Change">
        {(id) => (
          <select
            id={id}
            value={mode}
            onChange={(e) => setMode((e.target as HTMLSelectElement).value as 'add' | 'remove')}
          >
            <option value="add">Set label</option>
            <option value="remove">Remove label</option>
          </select>
        )}
      </Field>
      <Field label="Label key">
        {(id) => (
          <input
            id={id}
            required
            maxLength={128}
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          />
        )}
      </Field>
      {mode === 'add' ? (
        <Field label="Value">
          {(id) => (
            <input
              id={id}
              maxLength={1024}
              value={value}
              onInput={(e) => setValue((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
      ) : null}
      <button type="submit" class="primary" disabled={action.busy}>
        Apply to selected
      </button>
      <ErrorText error={action.error} />
      {result ? <Notice>{result}</Notice> : null}
    </form>
  );
}

export function Devices({ projectId }: { projectId: string }) {
  const { params } = useLocation();
  const perms = usePermissions(`projects/${projectId}`);
  const type = params.get('type') ?? '';
  const label = params.get('label') ?? '';
  const q = params.get('q') ?? '';
  const pageToken = params.get('pageToken') ?? '';
  const [tokens, setTokens] = useState<string[]>([]);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [draft, setDraft] = useUrlDraft({ type, label, q });

  const { data, error, reload } = useLoad(
    () =>
      api<{ devices: any[]; nextPageToken: string }>(
        'GET',
        `/projects/${projectId}/devices${query({ pageSize: PAGE_SIZE, device_types: type ? [type] : undefined, label_filters: label ? [label] : undefined, query: q, pageToken })}`,
      ),
    [projectId, type, label, q, pageToken],
  );

  const toggle = (name: string) => {
    const next = new Set(selected);
    if (next.has(name)) next.delete(name);
    else next.add(name);
    setSelected(next);
  };
  const devices = data?.devices ?? [];
  const allSelected = devices.length > 0 && devices.every((d) => selected.has(d.name));
  const canLabel = perms.has('device.update');

  return (
    <section>
      <Title
        actions={
          perms.has('emulator.create') ? (
            <a class="button" href={`/projects/${projectId}/emulator`}>
              Create emulated devices
            </a>
          ) : null
        }
      >
        Devices
      </Title>
      <form
        class="filters"
        role="search"
        aria-label="Filter devices"
        onSubmit={(e) => {
          e.preventDefault();
          setTokens([]);
          setParams({ type: draft.type, label: draft.label.trim(), q: draft.q.trim(), pageToken: undefined });
        }}
      >
        <Field label="Type">
          {(id) => (
            <select
              id={id}
              value={draft.type}
              onChange={(e) => setDraft({ ...draft, type: (e.target as HTMLSelectElement).value })}
            >
              <option value="">All types</option>
              {DEVICE_TYPES.map((t) => (
                <option key={t} value={t}>
                  {DEVICE_TYPE_LABELS[t]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Label" hint="key or key=value">
          {(id, hint) => (
            <input
              id={id}
              aria-describedby={hint}
              placeholder="room=4"
              value={draft.label}
              onInput={(e) => setDraft({ ...draft, label: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <Field label="Search" hint="name, id, type or any label">
          {(id, hint) => (
            <input
              id={id}
              type="search"
              aria-describedby={hint}
              value={draft.q}
              onInput={(e) => setDraft({ ...draft, q: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <button type="submit" class="primary">
          Filter
        </button>
        {type || label || q ? (
          <button
            type="button"
            onClick={() => {
              setTokens([]);
              setParams({ type: undefined, label: undefined, q: undefined, pageToken: undefined });
            }}
          >
            Clear
          </button>
        ) : null}
      </form>
      <ErrorText error={error} />
      {selected.size > 0 ? (
        canLabel ? (
          <BatchLabels projectId={projectId} selected={[...selected]} onDone={reload} />
        ) : (
          <p class="muted">{reasonFor('device.update')}</p>
        )
      ) : null}
      {!data ? (
        error ? null : (
          <Loading what="Loading devices" />
        )
      ) : devices.length === 0 ? (
        <p class="empty">
          No devices{type || label || q ? ' match these filters' : ' in this project yet'}.{' '}
          {perms.has('emulator.create') ? (
            <a href={`/projects/${projectId}/emulator`}>Create an emulated device</a>
          ) : null}
        </p>
      ) : (
        <div class="table-wrap">
          <table class="devices stack-table">
            <thead>
              <tr>
                <th scope="col" class="check stack-keep">
                  <label class="check-label">
                    <input
                      type="checkbox"
                      aria-label="Select all devices on this page"
                      checked={allSelected}
                      onChange={() => setSelected(allSelected ? new Set() : new Set(devices.map((d) => d.name)))}
                    />
                    <span class="stack-only" aria-hidden="true">
                      Select all on this page
                    </span>
                  </label>
                </th>
                <th scope="col">Device</th>
                <th scope="col">Type</th>
                <th scope="col">Last seen</th>
                <th scope="col">Latest readings</th>
              </tr>
            </thead>
            <tbody>
              {devices.map((d) => {
                const id = idOf(d.name);
                const name = d.labels.name;
                return (
                  <tr key={d.name} class={selected.has(d.name) ? 'selected' : undefined}>
                    <td class="check">
                      <input
                        type="checkbox"
                        aria-label={`Select ${name || id}`}
                        checked={selected.has(d.name)}
                        onChange={() => toggle(d.name)}
                      />
                    </td>
                    <td class="stack-title">
                      <a href={`/projects/${projectId}/devices/${id}`} class="strong">
                        {name || id}
                      </a>
                      {d.labels.demo !== undefined ? (
                        <>
                          {' '}
                          <Badge kind="demo">demo</Badge>
                        </>
                      ) : null}
                      {d.labels.description ? <div class="muted small">{d.labels.description}</div> : null}
                      {name ? <div class="muted small mono">{id}</div> : null}
                      <LabelChips labels={d.labels} />
                    </td>
                    <td data-label="Type">{DEVICE_TYPE_LABELS[d.type] ?? d.type}</td>
                    <td data-label="Last seen">
                      <span title={latestUpdate(d.reported) ?? ''}>{relativeTime(latestUpdate(d.reported))}</span>
                    </td>
                    <td data-label="Latest readings">
                      {Object.values(d.reported).some((v) => v !== null) ? (
                        <ul class="readings">
                          {Object.entries(d.reported)
                            .filter(([, v]) => v !== null)
                            .map(([t, v]) => (
                              <li key={t}>
                                <span class="muted">{t}</span> {readingText(t, v)}
                              </li>
                            ))}
                        </ul>
                      ) : (
                        <span class="muted small">none yet</span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {data ? (
        <Pager
          label="Device pages"
          page={tokens.length}
          hasNext={data.nextPageToken !== ''}
          onPrev={() => {
            const prev = tokens.slice(0, -1);
            setTokens(prev);
            setParams({ pageToken: tokens[tokens.length - 1] || undefined });
          }}
          onNext={() => {
            setTokens([...tokens, pageToken]);
            setParams({ pageToken: data.nextPageToken });
          }}
        />
      ) : null}
    </section>
  );
}
