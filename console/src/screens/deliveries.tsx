// Screen 6d: a data connector's delivery log (extensions §X1), newest first: state chips, trigger, event id, device
// and time filters (all in the URL), "Load more" paging; Send test push and Replay (delivery-actions.tsx) for
// roles that may change the connector.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, idOf, query } from '../api.ts';
import { ErrorText, Field, LoadMore, Loading, StateChips, Title, useLoad } from '../components.tsx';
import {
  connectorPath,
  DELIVERY_STATES,
  type Delivery,
  deliveryHref,
  listDeliveries,
  STATE_NAMES,
  TRIGGERS,
  triggerText,
} from '../deliveries.ts';
import { formatTime, shortTime, untilTime } from '../format.ts';
import { localInputValue } from '../history.ts';
import { reasonFor, usePermissions } from '../permissions.ts';
import { navigate, useLocation, useUrlDraft } from '../router.ts';
import { DeliveryStateBadge } from './attempt-view.tsx';
import { StatusBadge } from './connector-status.tsx';
import { ReplayPanel, TestPushPanel, writeBlockedReason } from './delivery-actions.tsx';

export const DELIVERY_PAGE_SIZE = 50;

/** The synthetic device a test push names (no such device exists: its id is not a link). */
export const TEST_DEVICE_ID = 'sensorcloud-test-device';

/**
 * The `name` label of each device id given ('' when it has none), read 100 at a time, each id once. A read that
 * finishes after newer ids were asked for still counts: names do not depend on the page's filters.
 */
export function useDeviceNames(projectId: string, ids: string[]): Map<string, string> {
  const [names, setNames] = useState(new Map<string, string>());
  const asked = useRef(new Set<string>());
  const mounted = useRef(true);
  useEffect(() => () => void (mounted.current = false), []);
  const wanted = ids.filter((id) => id !== TEST_DEVICE_ID && !asked.current.has(id));
  const key = wanted.join(',');
  useEffect(() => {
    if (wanted.length === 0) return;
    for (const id of wanted) asked.current.add(id);
    (async () => {
      for (let i = 0; i < wanted.length; i += 100) {
        const batch = wanted.slice(i, i + 100);
        try {
          const page = await api<{ devices: any[] }>(
            'GET',
            `/projects/${projectId}/devices${query({ device_ids: batch, pageSize: 100 })}`,
          );
          if (!mounted.current) return;
          setNames((old) => {
            const next = new Map(old);
            for (const d of page.devices) next.set(idOf(d.name), d.labels?.name ?? '');
            return next;
          });
        } catch {
          // Shown by id.
        }
      }
    })();
  }, [projectId, key]);
  return names;
}

/** A delivery's device: its name (or id) linking to its page; the test push's synthetic device as plain text. */
export function DeviceCell({ projectId, deviceId, name }: { projectId: string; deviceId: string; name?: string }) {
  if (deviceId === TEST_DEVICE_ID) return <span class="muted small">synthetic test device</span>;
  return (
    <a href={`/projects/${projectId}/devices/${deviceId}`} class={name ? undefined : 'mono small'}>
      {name || deviceId}
    </a>
  );
}

/** A URL's ISO time as a datetime-local value ('' when absent). */
const inputOf = (iso: string): string => (iso && !Number.isNaN(Date.parse(iso)) ? localInputValue(new Date(iso)) : '');
/** A datetime-local value as ISO ('' when empty or invalid). */
const isoOf = (local: string): string => {
  const t = local ? new Date(local).getTime() : Number.NaN;
  return Number.isNaN(t) ? '' : new Date(t).toISOString();
};

/** The list URL with these filters (states repeated, as the API takes them). */
function listUrl(
  base: string,
  f: { states: string[]; trigger: string; eventId: string; device: string; from: string; to: string },
) {
  return `${base}${query({ state: f.states, trigger: f.trigger, eventId: f.eventId, device: f.device, from: f.from, to: f.to })}`;
}

export function Deliveries({ projectId, connectorId }: { projectId: string; connectorId: string }) {
  const { params } = useLocation();
  const perms = usePermissions(`projects/${projectId}`);
  const base = connectorPath(projectId, connectorId);
  const pageUrl = `${base}/deliveries`;
  const filters = {
    states: params.getAll('state').filter((s) => STATE_NAMES.includes(s)),
    trigger: params.get('trigger') ?? '',
    eventId: params.get('eventId') ?? '',
    device: params.get('device') ?? '',
    from: params.get('from') ?? '',
    to: params.get('to') ?? '',
  };
  const filterKey = JSON.stringify(filters);
  const [draft, setDraft] = useUrlDraft({
    trigger: filters.trigger,
    eventId: filters.eventId,
    device: filters.device,
    from: inputOf(filters.from),
    to: inputOf(filters.to),
  });
  const [panel, setPanel] = useState<'test' | 'replay' | null>(null);

  const connector = useLoad(() => api('GET', base), [base]);
  // The first page for the filters; "Load more" appends the next ones. A newer read wins over an older one.
  const [list, setList] = useState<{ key: string; rows: Delivery[] } | null>(null);
  const [next, setNext] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [loadedAt, setLoadedAt] = useState(Date.now());
  const [tick, setTick] = useState(0);
  const generation = useRef(0);
  const read = (pageToken: string) =>
    listDeliveries(
      projectId,
      connectorId,
      {
        states: filters.states,
        trigger: filters.trigger,
        eventId: filters.eventId,
        device: filters.device,
        startTime: filters.from,
        endTime: filters.to,
      },
      DELIVERY_PAGE_SIZE,
      pageToken,
    );
  useEffect(() => {
    const mine = ++generation.current;
    setError(null);
    setBusy(true);
    read('').then(
      (page) => {
        if (mine !== generation.current) return;
        setList({ key: filterKey, rows: page.deliveries });
        setNext(page.nextPageToken);
        setLoadedAt(Date.now());
        setBusy(false);
      },
      (err) => {
        if (mine !== generation.current) return;
        setError(err);
        setBusy(false);
      },
    );
  }, [base, filterKey, tick]);
  // A filter change starts from an empty table (a Refresh keeps the rows until the new ones arrive).
  const rows = list?.key === filterKey ? list.rows : null;
  const loadMore = async () => {
    const mine = generation.current;
    setBusy(true);
    setError(null);
    try {
      const page = await read(next);
      if (mine !== generation.current) return;
      setList((old) => ({ key: filterKey, rows: [...(old?.rows ?? []), ...page.deliveries] }));
      setNext(page.nextPageToken);
    } catch (err) {
      if (mine === generation.current) setError(err);
    } finally {
      if (mine === generation.current) setBusy(false);
    }
  };
  const reload = () => setTick((n) => n + 1);

  const names = useDeviceNames(projectId, [...new Set((rows ?? []).map((d) => idOf(d.targetName)))]);
  const c = connector.data;
  const canWrite = perms.has('dataconnector.update');
  const blocked = c ? writeBlockedReason(c.status) : null;
  const filtered =
    filters.states.length > 0 || filters.trigger || filters.eventId || filters.device || filters.from || filters.to;

  return (
    <section>
      <Title
        sub={
          c ? (
            <>
              <StatusBadge status={c.status} />{' '}
              <a href={base} class="strong">
                {c.displayName || connectorId}
              </a>{' '}
              <span class="muted small mono">{c.httpConfig.url}</span>
            </>
          ) : null
        }
      >
        Deliveries
      </Title>
      <p class="muted">
        Every push of an event to this connector, newest first, with each attempt: open one to see when it was tried,
        what the endpoint answered and when the next attempt is due.
      </p>
      <div class="toolbar">
        <a class="button" href={base}>
          ← Connector
        </a>
        {canWrite ? (
          <>
            <button
              type="button"
              aria-expanded={panel === 'test'}
              aria-controls="test-push"
              onClick={() => setPanel(panel === 'test' ? null : 'test')}
            >
              Send test push
            </button>
            <button
              type="button"
              aria-expanded={panel === 'replay'}
              aria-controls="replay"
              disabled={blocked !== null}
              title={blocked ?? undefined}
              onClick={() => setPanel(panel === 'replay' ? null : 'replay')}
            >
              Replay a time window…
            </button>
          </>
        ) : null}
        <button type="button" onClick={reload} disabled={busy}>
          Refresh
        </button>
      </div>
      {perms.loaded && !canWrite ? (
        <p class="muted small">{reasonFor('dataconnector.update')} Resend, replay and test pushes are not offered.</p>
      ) : null}
      {canWrite && blocked ? <p class="muted small">{blocked}</p> : null}
      {c && canWrite && panel === 'test' ? (
        <TestPushPanel projectId={projectId} connector={c} onSent={reload} onClose={() => setPanel(null)} />
      ) : null}
      {c && canWrite && panel === 'replay' && blocked === null ? (
        <ReplayPanel projectId={projectId} connector={c} onClose={() => setPanel(null)} onReplayed={reload} />
      ) : null}
      <ErrorText error={connector.error} />

      <StateChips
        states={DELIVERY_STATES}
        selected={filters.states}
        onChange={(states) => navigate(listUrl(pageUrl, { ...filters, states }), { replace: true })}
      />
      <form
        class="filters delivery-filters"
        role="search"
        aria-label="Filter deliveries"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(
            listUrl(pageUrl, {
              states: filters.states,
              trigger: draft.trigger,
              eventId: draft.eventId.trim(),
              device: draft.device.trim(),
              from: isoOf(draft.from),
              to: isoOf(draft.to),
            }),
            { replace: true },
          );
        }}
      >
        <Field label="Trigger">
          {(id) => (
            <select
              id={id}
              value={draft.trigger}
              onChange={(e) => setDraft({ ...draft, trigger: (e.target as HTMLSelectElement).value })}
            >
              <option value="">Any trigger</option>
              {TRIGGERS.map(([t, label]) => (
                <option key={t} value={t}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Event id">
          {(id) => (
            <input
              id={id}
              class="mono"
              size={22}
              value={draft.eventId}
              onInput={(e) => setDraft({ ...draft, eventId: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <Field label="Device" hint="device id">
          {(id, hint) => (
            <input
              id={id}
              class="mono"
              size={22}
              aria-describedby={hint}
              value={draft.device}
              onInput={(e) => setDraft({ ...draft, device: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <span class="row-break" aria-hidden="true" />
        <Field label="Created from">
          {(id) => (
            <input
              id={id}
              type="datetime-local"
              value={draft.from}
              onInput={(e) => setDraft({ ...draft, from: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <Field label="Created before">
          {(id) => (
            <input
              id={id}
              type="datetime-local"
              value={draft.to}
              onInput={(e) => setDraft({ ...draft, to: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <button type="submit" class="primary">
          Filter
        </button>
        {filtered ? (
          <button type="button" onClick={() => navigate(pageUrl, { replace: true })}>
            Clear
          </button>
        ) : null}
      </form>
      <ErrorText error={error} />
      {rows === null ? (
        error ? null : (
          <Loading what="Loading deliveries" />
        )
      ) : rows.length === 0 ? (
        <p class="empty">
          {filtered
            ? 'No delivery matches these filters.'
            : 'No deliveries yet: each event this connector pushes appears here once it is queued.'}
        </p>
      ) : (
        <div class="table-wrap">
          <table class="deliveries stack-table">
            <thead>
              <tr>
                <th scope="col">State</th>
                <th scope="col">Trigger</th>
                <th scope="col">Event</th>
                <th scope="col">Device</th>
                <th scope="col" class="num">
                  Attempts
                </th>
                <th scope="col">Created</th>
                <th scope="col">Next attempt</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => {
                const device = idOf(d.targetName);
                const name = names.get(device);
                return (
                  <tr
                    key={d.name}
                    class="clickable"
                    onClick={(e) => {
                      if ((e.target as Element).closest('a, button') || getSelection()?.toString()) return;
                      navigate(deliveryHref(d.name));
                    }}
                  >
                    <td data-label="State">
                      <DeliveryStateBadge state={d.state} />
                    </td>
                    <td data-label="Trigger">{triggerText(d.trigger)}</td>
                    <td class="stack-title">
                      <a class="mono strong" href={deliveryHref(d.name)} aria-label={`Delivery of event ${d.eventId}`}>
                        {d.eventId}
                      </a>
                      <div class="muted small">{d.eventType}</div>
                    </td>
                    <td data-label="Device">
                      <DeviceCell projectId={projectId} deviceId={device} name={name} />
                    </td>
                    <td data-label="Attempts" class="num">
                      {d.attemptCount}
                    </td>
                    <td data-label="Created">
                      <span title={formatTime(d.createTime)}>{shortTime(d.createTime)}</span>
                    </td>
                    <td data-label="Next attempt" class={d.nextAttemptTime ? undefined : 'empty-cell'}>
                      {d.nextAttemptTime ? (
                        <span title={formatTime(d.nextAttemptTime)}>{untilTime(d.nextAttemptTime, loadedAt)}</span>
                      ) : (
                        <span class="muted">—</span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {rows !== null && next !== '' ? (
        <LoadMore shown={rows.length} busy={busy} onMore={loadMore} />
      ) : rows !== null && rows.length > 0 ? (
        <p class="muted small pager">
          {rows.length} deliver{rows.length === 1 ? 'y' : 'ies'}: all shown.
        </p>
      ) : null}
    </section>
  );
}
