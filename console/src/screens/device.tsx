// Screen 3b: one device: labels (add, edit, remove; an emulated device's virtual-sensor label is kept), reported
// state, the event history (chart with a time-range picker that starts fitted to the device's recent events,
// markers for discrete events, paged table, CSV export), transfer to another project, delete (emulated).
import { useMemo, useState } from 'preact/hooks';
import { useAlertChanges } from '../alert-stream.ts';
import type { Alert, Rule } from '../alerts.ts';
import { api, idOf, listAll, query } from '../api.ts';
import { TimeChart, type ChartMarker, type ChartSeries } from '../chart.tsx';
import {
  ActionButton,
  Badge,
  ConfirmButton,
  ErrorText,
  Field,
  Loading,
  Notice,
  Pager,
  Title,
  useAction,
  useLoad,
} from '../components.tsx';
import { eventsToCsv } from '../events-csv.ts';
import { DEVICE_TYPE_LABELS, eventText, formatTime, readingText } from '../format.ts';
import {
  fetchHistory,
  fitRange,
  localInputValue,
  MARKER_TYPES,
  NUMERIC,
  RANGES,
  RECENT_EVENTS,
  RECENT_SECONDS,
  rangeFromParams,
} from '../history.ts';
import { reasonFor, usePermissions, type Permissions } from '../permissions.ts';
import { navigate, setParams, useLocation } from '../router.ts';
import { AlertsTable, alertHref, ruleTitle, useRuleBook } from './alert-parts.tsx';

/**
 * The label that marks an emulated device (the API adds it, and keeps it on a PUT; `sensorcloud emulator update`
 * says "virtual-sensor is kept"). The Emulator lists devices by it, so removing it would make the device vanish
 * from there: the console does not offer to.
 */
export const VIRTUAL_SENSOR = 'virtual-sensor';
const VIRTUAL_SENSOR_REASON = 'Kept: it marks an emulated device, and the Emulator lists devices by it.';

function LabelRow({
  base,
  k,
  value,
  canEdit,
  protect,
  onChanged,
}: {
  base: string;
  k: string;
  value: string;
  canEdit: boolean;
  protect: boolean;
  onChanged: () => void;
}) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(value);
  const action = useAction();
  const path = `${base}/labels/${encodeURIComponent(k)}`;
  return (
    <tr>
      <th scope="row" class="mono">
        {k}
      </th>
      <td>
        {editing ? (
          <form
            class="inline"
            onSubmit={async (e) => {
              e.preventDefault();
              if (await action.run(() => api('PATCH', path, { value: draft }))) {
                setEditing(false);
                onChanged();
              }
            }}
          >
            <label class="visually-hidden" for={`lv-${k}`}>
              Value of {k}
            </label>
            <input
              id={`lv-${k}`}
              value={draft}
              maxLength={1024}
              onInput={(e) => setDraft((e.target as HTMLInputElement).value)}
            />
            <button type="submit" class="primary" disabled={action.busy}>
              Save
            </button>
            <button
              type="button"
              onClick={() => {
                setEditing(false);
                setDraft(value);
              }}
            >
              Cancel
            </button>
          </form>
        ) : value === '' ? (
          <span class="muted">(empty)</span>
        ) : (
          <span class="label-value">{value}</span>
        )}
        {protect ? <div class="muted small">{VIRTUAL_SENSOR_REASON}</div> : null}
        <ErrorText error={action.error} />
      </td>
      <td class="actions">
        {canEdit && !editing && !protect ? (
          <>
            <button type="button" onClick={() => setEditing(true)} aria-label={`Edit label ${k}`}>
              Edit
            </button>
            <ConfirmButton
              label="Remove"
              confirm={`Remove ${k}?`}
              onConfirm={async () => {
                if (await action.run(() => api('DELETE', path))) onChanged();
              }}
            />
          </>
        ) : null}
      </td>
    </tr>
  );
}

function Labels({
  base,
  labels,
  emulated,
  perms,
  onChanged,
}: {
  base: string;
  labels: Record<string, string>;
  emulated: boolean;
  perms: Permissions;
  onChanged: () => void;
}) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const action = useAction();
  const canEdit = perms.has('device.update');
  return (
    <section class="card" aria-labelledby="labels-h">
      <h2 id="labels-h">Labels</h2>
      <p class="muted small">
        The labels <code>name</code> and <code>description</code> are the device's display name and description.
      </p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Value</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(labels).map(([k, v]) => (
              <LabelRow
                key={k}
                base={base}
                k={k}
                value={v}
                canEdit={canEdit}
                protect={emulated && k === VIRTUAL_SENSOR}
                onChanged={onChanged}
              />
            ))}
          </tbody>
        </table>
      </div>
      {canEdit ? (
        <form
          class="row-form"
          aria-label="Add a label"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await action.run(() => api('POST', `${base}/labels`, { key, value }))) {
              setKey('');
              setValue('');
              onChanged();
            }
          }}
        >
          <Field label="New label key">
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
          <button type="submit" class="primary" disabled={action.busy}>
            Add label
          </button>
          <ErrorText error={action.error} />
        </form>
      ) : perms.loaded ? (
        <p class="muted small">{reasonFor('device.update')}</p>
      ) : null}
    </section>
  );
}

function Reported({ reported }: { reported: Record<string, any> }) {
  return (
    <section class="card" aria-labelledby="reported-h">
      <h2 id="reported-h">Reported state</h2>
      <dl class="reported">
        {Object.entries(reported).map(([type, v]) => (
          <div key={type}>
            <dt>{type}</dt>
            <dd>
              {v === null ? (
                <span class="muted">no event yet</span>
              ) : (
                <>
                  <strong>{readingText(type, v)}</strong> <span class="muted small">{formatTime(v.updateTime)}</span>
                </>
              )}
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

const TABLE_PAGE = 25;

/** A URL's from/to (ISO) as a datetime-local value, or '' when absent. */
const inputFromParam = (iso: string | null): string =>
  iso && !Number.isNaN(new Date(iso).getTime()) ? localInputValue(new Date(iso)) : '';

/** An RFC 3339 time in microseconds (the API writes six digits of fraction; Date.parse keeps three). */
function micros(iso: string): number {
  const ms = Date.parse(iso);
  const fraction = /\.(\d+)(?:Z|[+-]\d\d:?\d\d)$/i.exec(iso)?.[1];
  return fraction === undefined ? ms * 1000 : Math.floor(ms / 1000) * 1e6 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

/** At most this many alerts are marked on the chart and in the table. */
const ALERT_MARK_LIMIT = 20;

/**
 * Where each alert of the device triggered: the newest event of its rule's type at or before its trigger time (the
 * reading that made the condition hold, or the last one before a delay ran out), or the trigger time itself when
 * there is none (a sensor that went silent).
 */
function alertMarks(
  events: { eventId: string; eventType: string; timestamp: string }[],
  alerts: Alert[],
  rules: Map<string, Rule> | null,
): { t: number; eventId: string | null; eventType: string | null; alert: Alert }[] {
  return alerts.slice(0, ALERT_MARK_LIMIT).map((alert) => {
    const type = rules?.get(alert.rule)?.trigger.field ?? null;
    const at = micros(alert.triggerTime);
    // Events are newest first; the trigger time is when the service evaluated the event, just after its timestamp
    // (to the microsecond: the next reading may come within the same millisecond).
    const event = type ? events.find((e) => e.eventType === type && micros(e.timestamp) <= at) : undefined;
    return {
      t: (event ? micros(event.timestamp) : at) / 1e6,
      eventId: event?.eventId ?? null,
      eventType: type,
      alert,
    };
  });
}

function History({
  projectId,
  deviceId,
  label,
  alerts,
  rules,
}: {
  projectId: string;
  deviceId: string;
  label: string;
  alerts: Alert[] | null;
  rules: Map<string, Rule> | null;
}) {
  const { params } = useLocation();
  const requested = rangeFromParams(params);
  const [customFrom, setCustomFrom] = useState(inputFromParam(params.get('from')));
  const [customTo, setCustomTo] = useState(inputFromParam(params.get('to')));
  const [page, setPage] = useState(0);
  const rangeKey = `${params.get('range')}|${params.get('from')}|${params.get('to')}`;
  // The range is taken when the events are read, and kept with them: the chart and the export use that one.
  const { data, error, reload } = useLoad(async () => {
    setPage(0);
    const range = rangeFromParams(new URLSearchParams(location.search));
    const auto = range.key === 'auto';
    const history = await fetchHistory(projectId, deviceId, range.from, range.to, auto ? RECENT_EVENTS : undefined);
    // No range chosen: the one that holds the device's recent events, so a few minutes of data fill the chart.
    const fitted = auto ? fitRange(history.events) : null;
    return {
      ...history,
      auto,
      from: fitted ? fitted.from : range.from.getTime() / 1000,
      to: fitted ? fitted.to : range.to.getTime() / 1000,
    };
  }, [projectId, deviceId, rangeKey]);

  const from = data?.from ?? requested.from.getTime() / 1000;
  const to = data?.to ?? requested.to.getTime() / 1000;
  const shownFrom = new Date(from * 1000);
  const shownTo = new Date(to * 1000);
  const { charts, markers, chartMarkers, alertEvents } = useMemo(() => {
    const charts: ChartSeries[][] = [];
    const markers: ChartMarker[] = [];
    /** Each chart's markers: the discrete events', and the alerts' on the chart of their reading. */
    const chartMarkers = new Map<string, ChartMarker[]>();
    /** The events that triggered an alert, by event id. */
    const alertEvents = new Map<string, Alert[]>();
    if (!data) return { charts, markers, chartMarkers, alertEvents };
    const byLabel = new Map<string, ChartSeries>();
    for (const e of [...data.events].reverse()) {
      const t = new Date(e.timestamp).getTime() / 1000;
      const inner = e.data?.[e.eventType];
      for (const [name, read] of NUMERIC[e.eventType] ?? []) {
        let s = byLabel.get(name);
        if (!s) byLabel.set(name, (s = { label: name, points: [] }));
        s.points.push([t, read(inner)]);
      }
      if (MARKER_TYPES.includes(e.eventType)) markers.push({ t, kind: e.eventType });
    }
    for (const s of byLabel.values()) charts.push([s]);
    const marks = alertMarks(data.events, alerts ?? [], rules).filter((m) => m.t >= data.from && m.t <= data.to);
    for (const m of marks) {
      if (m.eventId) alertEvents.set(m.eventId, [...(alertEvents.get(m.eventId) ?? []), m.alert]);
      markers.push({ t: m.t, kind: 'alert' });
    }
    for (const [s] of charts) {
      // An alert on a reading marks the chart of that reading (its first, for humidity's two); others mark every chart.
      const own = marks.filter((m) => {
        const first = m.eventType ? NUMERIC[m.eventType]?.[0]?.[0] : undefined;
        return first === undefined || first === s!.label;
      });
      chartMarkers.set(s!.label, [
        ...markers.filter((m) => m.kind !== 'alert'),
        ...own.map((m) => ({ t: m.t, kind: 'alert' })),
      ]);
    }
    return { charts, markers, chartMarkers, alertEvents };
  }, [data, alerts, rules]);

  const events = data?.events ?? [];
  const shown = events.slice(page * TABLE_PAGE, (page + 1) * TABLE_PAGE);
  const download = () => {
    const blob = new Blob([eventsToCsv(events)], { type: 'text/csv;charset=utf-8' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download =
      `${label.replace(/[^\w.-]+/g, '_') || deviceId}_${shownFrom.toISOString()}_${shownTo.toISOString()}.csv`.replace(
        /:/g,
        '-',
      );
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  };
  return (
    <section class="card" aria-labelledby="history-h">
      <div class="card-head">
        <h2 id="history-h">History</h2>
        <span class="spacer" />
        <button type="button" onClick={reload}>
          Refresh
        </button>
        <button type="button" onClick={download} disabled={events.length === 0}>
          Export CSV
        </button>
      </div>
      <form
        class="filters"
        aria-label="Time range"
        onSubmit={(e) => {
          e.preventDefault();
          const f = new Date(customFrom);
          const t = new Date(customTo);
          if (!Number.isNaN(f.getTime()) && !Number.isNaN(t.getTime()))
            setParams({ range: 'custom', from: f.toISOString(), to: t.toISOString() });
        }}
      >
        <Field label="Range">
          {(id) => (
            <select
              id={id}
              value={requested.key}
              onChange={(e) => {
                const v = (e.target as HTMLSelectElement).value;
                // A choice is kept in the URL (reloads and Refresh keep it); "Fit to recent data" is the URL without one.
                if (v === 'auto') setParams({ range: undefined, from: undefined, to: undefined });
                else if (v !== 'custom') setParams({ range: v, from: undefined, to: undefined });
                else {
                  setCustomFrom(localInputValue(shownFrom));
                  setCustomTo(localInputValue(shownTo));
                  setParams({ range: 'custom', from: shownFrom.toISOString(), to: shownTo.toISOString() });
                }
              }}
            >
              <option value="auto">Fit to recent data</option>
              {RANGES.map(([k, l]) => (
                <option key={k} value={k}>
                  {l}
                </option>
              ))}
              <option value="custom">Custom…</option>
            </select>
          )}
        </Field>
        {requested.key === 'custom' ? (
          <>
            <Field label="From">
              {(id) => (
                <input
                  id={id}
                  type="datetime-local"
                  value={customFrom || localInputValue(requested.from)}
                  onInput={(e) => setCustomFrom((e.target as HTMLInputElement).value)}
                />
              )}
            </Field>
            <Field label="To">
              {(id) => (
                <input
                  id={id}
                  type="datetime-local"
                  value={customTo || localInputValue(requested.to)}
                  onInput={(e) => setCustomTo((e.target as HTMLInputElement).value)}
                />
              )}
            </Field>
            <button type="submit" class="primary">
              Show
            </button>
          </>
        ) : null}
      </form>
      <ErrorText error={error} />
      {!data ? (
        error ? null : (
          <Loading what="Loading history" />
        )
      ) : (
        <>
          {data.truncated ? (
            <Notice>
              {data.auto
                ? `Showing the device's newest ${events.length} events; choose a range to see others.`
                : `Showing the newest ${events.length} events of this range; choose a shorter range to see all.`}
            </Notice>
          ) : null}
          {events.length === 0 ? (
            <p class="muted">
              {data.auto ? `No events in the last ${RECENT_SECONDS / 86400} days.` : 'No events in this range.'}
            </p>
          ) : null}
          {events.length > 0 && charts.length === 0 && markers.length === 0 ? (
            <p class="muted">Nothing to chart: these events have no numeric readings or markers (see the table).</p>
          ) : null}
          {charts.map((series) => (
            <TimeChart
              key={series[0]!.label}
              title={series[0]!.label}
              series={series}
              markers={chartMarkers.get(series[0]!.label)}
              from={from}
              to={to}
            />
          ))}
          {charts.length === 0 && markers.length > 0 ? (
            <TimeChart title="Events" series={[]} markers={markers} from={from} to={to} height={120} />
          ) : null}
          {events.length > 0 ? (
            <>
              <div class="table-wrap">
                <table class="events">
                  <caption class="visually-hidden">Events, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Time</th>
                      <th scope="col">Type</th>
                      <th scope="col">Reading</th>
                    </tr>
                  </thead>
                  <tbody>
                    {shown.map((e) => {
                      const raised = alertEvents.get(e.eventId);
                      return (
                        <tr key={e.eventId} class={raised ? 'alert-event' : undefined}>
                          <td>{formatTime(e.timestamp)}</td>
                          <td>{e.eventType}</td>
                          <td>
                            {eventText(e)}
                            {raised?.map((a) => (
                              <a key={a.name} class="alert-mark" href={alertHref(a.name)} data-testid="alert-mark">
                                ⚠ triggered {ruleTitle(rules?.get(a.rule), a.rule)}
                              </a>
                            ))}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
              <Pager
                label="History pages"
                page={page}
                hasNext={(page + 1) * TABLE_PAGE < events.length}
                onPrev={() => setPage(page - 1)}
                onNext={() => setPage(page + 1)}
              />
              <p class="muted small">
                {events.length} event{events.length === 1 ? '' : 's'} from {formatTime(shownFrom.toISOString())} to{' '}
                {formatTime(shownTo.toISOString())}
                {data.auto ? ": the range fitted to the device's recent events (pick a range above to fix one)" : ''}.
              </p>
            </>
          ) : null}
        </>
      )}
    </section>
  );
}

function Transfer({ projectId, device }: { projectId: string; device: any }) {
  const [target, setTarget] = useState('');
  const [note, setNote] = useState<string | null>(null);
  const projects = useLoad(() => listAll<any>('/projects', 'projects'), []);
  const action = useAction();
  const others = (projects.data ?? []).filter((p) => idOf(p.name) !== projectId);
  if (projects.data && others.length === 0)
    return <p class="muted small">There is no other project to transfer this device to.</p>;
  return (
    <form
      class="row-form"
      aria-label="Transfer to another project"
      onSubmit={async (e) => {
        e.preventDefault();
        setNote(null);
        await action.run(async () => {
          const res = await api<{ transferredDevices: string[]; transferErrors: any[] }>(
            'POST',
            `/projects/${target}/devices:transfer`,
            { devices: [device.name] },
          );
          if (res.transferErrors.length > 0)
            throw new Error(
              `Not transferred: ${res.transferErrors[0].status.message} (${res.transferErrors[0].status.code})`,
            );
          setNote('Transferred.');
          navigate(`/projects/${target}/devices/${idOf(device.name)}`);
        });
      }}
    >
      <Field label="Transfer to project">
        {(id) => (
          <select id={id} required value={target} onChange={(e) => setTarget((e.target as HTMLSelectElement).value)}>
            <option value="">Choose a project</option>
            {others.map((p) => (
              <option key={p.name} value={idOf(p.name)}>
                {p.displayName}
              </option>
            ))}
          </select>
        )}
      </Field>
      <button type="submit" disabled={action.busy || !target}>
        Transfer
      </button>
      <ErrorText error={action.error} />
      {note ? <Notice>{note}</Notice> : null}
    </form>
  );
}

/** The device's newest alerts shown on its page (and marked on its chart). */
const DEVICE_ALERTS = 5;

function DeviceAlerts({
  projectId,
  deviceId,
  alerts,
  error,
  rules,
}: {
  projectId: string;
  deviceId: string;
  alerts: Alert[] | null;
  error: unknown;
  rules: Map<string, Rule> | null;
}) {
  return (
    <section class="card" aria-labelledby="device-alerts-h">
      <div class="card-head">
        <h2 id="device-alerts-h">Alerts</h2>
        <span class="spacer" />
        <a href={`/projects/${projectId}/alerts?device=${deviceId}`}>All alerts of this device</a>
        <a href={`/projects/${projectId}/rules`}>Rules</a>
      </div>
      <ErrorText error={error} />
      {!alerts || (alerts.length > 0 && rules === null) ? (
        error ? null : (
          <Loading what="Loading alerts" />
        )
      ) : alerts.length === 0 ? (
        <p class="muted small">No alerts for this device.</p>
      ) : (
        <AlertsTable
          alerts={alerts}
          rules={rules}
          names={new Map()}
          showTarget={false}
          caption="Alerts of this device, newest first"
        />
      )}
    </section>
  );
}

export function DevicePage({ projectId, deviceId }: { projectId: string; deviceId: string }) {
  const perms = usePermissions(`projects/${projectId}`);
  const base = `/projects/${projectId}/devices/${deviceId}`;
  const { data: device, error, reload } = useLoad(() => api('GET', base), [base]);
  const action = useAction();
  const emulated = deviceId.startsWith('emu');
  const alerts = useLoad(
    () =>
      api<{ alerts: Alert[]; nextPageToken: string }>(
        'GET',
        `/projects/${projectId}/alerts${query({ device: deviceId, pageSize: DEVICE_ALERTS })}`,
      ).then((r) => r.alerts),
    [projectId, deviceId],
  );
  useAlertChanges(projectId, (a) => {
    if (a === null || a.targetName.endsWith(`/devices/${deviceId}`)) alerts.reload();
  });
  // The rules of the alerts shown (names, units, which reading): read when an alert names one not read yet.
  const ruleNames = [...new Set((alerts.data ?? []).map((a) => a.rule))].sort().join(',');
  const rules = useRuleBook(projectId, ruleNames === '' ? null : ruleNames);
  if (!device)
    return (
      <section>
        <Title>Device</Title>
        {error ? <ErrorText error={error} /> : <Loading />}
      </section>
    );
  const name = device.labels.name || deviceId;
  return (
    <section>
      <Title
        sub={
          <>
            <span>{DEVICE_TYPE_LABELS[device.type] ?? device.type}</span>
            {device.productNumber ? <span class="muted"> · product {device.productNumber}</span> : null}
            {emulated ? (
              <>
                {' '}
                <Badge kind="info">emulated</Badge>
              </>
            ) : null}
            {device.labels.demo !== undefined ? (
              <>
                {' '}
                <Badge kind="demo">demo</Badge>
              </>
            ) : null}
            <div class="muted small mono">{device.name}</div>
            {device.labels.description ? <p>{device.labels.description}</p> : null}
          </>
        }
      >
        {name}
      </Title>
      <div class="toolbar">
        <a class="button" href={`/projects/${projectId}/devices`}>
          ← All devices
        </a>
        {emulated && perms.has('emulator.update') ? (
          <a class="button primary" href={`/projects/${projectId}/emulator?device=${deviceId}`}>
            Publish events
          </a>
        ) : null}
        <a class="button" href={`/projects/${projectId}/live?device=${deviceId}`}>
          Live events
        </a>
        <span class="spacer" />
        {emulated ? (
          perms.has('emulator.delete') ? (
            <ConfirmButton
              label="Delete device"
              confirm={`Delete ${name} and its history?`}
              onConfirm={async () => {
                if (await action.run(() => api('DELETE', base))) navigate(`/projects/${projectId}/devices`);
              }}
            />
          ) : (
            <ActionButton allowed={false} permission="emulator.delete">
              Delete device
            </ActionButton>
          )
        ) : (
          <span class="muted small">Only emulated devices can be deleted.</span>
        )}
      </div>
      <ErrorText error={action.error} />
      <div class="grid-2">
        <Labels base={base} labels={device.labels} emulated={emulated} perms={perms} onChanged={reload} />
        <Reported reported={device.reported} />
      </div>
      <DeviceAlerts projectId={projectId} deviceId={deviceId} alerts={alerts.data} error={alerts.error} rules={rules} />
      <History projectId={projectId} deviceId={deviceId} label={name} alerts={alerts.data} rules={rules} />
      <section class="card" aria-labelledby="transfer-h">
        <h2 id="transfer-h">Transfer</h2>
        {perms.has('device.transfer') ? (
          <Transfer projectId={projectId} device={device} />
        ) : (
          <p class="muted small">{reasonFor('device.transfer')}</p>
        )}
      </section>
    </section>
  );
}
