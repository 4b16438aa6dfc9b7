// Screen 5: the project's live event stream (GET …/devices:stream, NDJSON read with fetch so the session cookie
// travels as for every call). Messages go into a bounded ring; the list renders only the rows in view and at
// most once per animation frame, so 200 events/s never freezes the page. Pings (the stream's keep-alive) and
// emulated heartbeats (networkStatus, batteryStatus, connectionStatus) are shown distinctly. Devices are shown by
// their `name` label (looked up in batches through the device list, kept current by labelsChanged events), with
// the id beside it; on a narrow screen each row takes two lines.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, CONSOLE_HEADERS, errorText, idOf, query, readLines, sessionExpired } from '../api.ts';
import { Field, Title } from '../components.tsx';
import { EVENT_TYPES, eventText } from '../format.ts';
import { setParams, useLocation, useUrlDraft } from '../router.ts';

/** Messages kept for display; older ones fall off. */
export const RING_SIZE = 2000;
/** The list's height in px (styles.css, .live-list), and a row's: one line, or two on a narrow screen. */
const LIST_HEIGHT = 476;
const ROW_HEIGHT = 34;
const NARROW_ROW_HEIGHT = 54;
const NARROW = '(max-width: 820px)';
/** Device ids asked of the device list in one request. */
const NAME_BATCH = 100;
const HEARTBEAT_TYPES = new Set(['networkStatus', 'batteryStatus', 'connectionStatus']);

interface Row {
  seq: number;
  kind: 'event' | 'heartbeat' | 'ping';
  time: string;
  type: string;
  device: string;
  text: string;
}

type Status = { state: 'connecting' | 'open' | 'closed' | 'error'; message?: string };

function toRow(seq: number, event: any): Row {
  const type = event.eventType;
  const kind = type === 'ping' ? 'ping' : HEARTBEAT_TYPES.has(type) ? 'heartbeat' : 'event';
  const text = type === 'ping' ? 'stream alive' : eventText(event);
  return { seq, kind, time: event.timestamp, type, device: type === 'ping' ? '' : idOf(event.targetName), text };
}

/**
 * The `name` label of each device seen in the stream ('' when it has none, absent while unknown). Unknown ids are
 * collected and looked up together (`GET …/devices?device_ids=…`, up to 100 a request), each id once; a
 * labelsChanged event updates the name it changes. `changed` is called when names arrive.
 */
function createNameBook(projectId: string, changed: () => void) {
  const names = new Map<string, string>();
  const wanted = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | null = null;
  let closed = false;
  const lookUp = async () => {
    timer = null;
    while (wanted.size > 0 && !closed) {
      const ids = [...wanted].slice(0, NAME_BATCH);
      try {
        const page = await api<{ devices: any[] }>(
          'GET',
          `/projects/${projectId}/devices${query({ device_ids: ids, pageSize: NAME_BATCH })}`,
        );
        for (const d of page.devices) if (!names.has(idOf(d.name))) names.set(idOf(d.name), d.labels?.name ?? '');
      } catch {
        // Shown by id: a list the caller cannot read, or a passing failure, is not retried for each event.
      }
      for (const id of ids) {
        wanted.delete(id);
        if (!names.has(id)) names.set(id, '');
      }
      if (!closed) changed();
    }
  };
  return {
    nameOf: (id: string): string | undefined => names.get(id),
    /** Notes a stream event: asks for its device's name when unknown, follows name changes. */
    see(event: any): void {
      const id = idOf(event.targetName ?? '');
      if (event.eventType === 'ping' || id === '') return;
      if (event.eventType === 'labelsChanged') {
        const d = event.data ?? {};
        if (typeof d.added?.name === 'string') names.set(id, d.added.name);
        else if (typeof d.modified?.name === 'string') names.set(id, d.modified.name);
        else if (Array.isArray(d.removed) && d.removed.includes('name')) names.set(id, '');
      }
      if (names.has(id) || wanted.has(id)) return;
      wanted.add(id);
      timer ??= setTimeout(() => void lookUp(), 50);
    },
    close(): void {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** Whether the narrow (phone) layout applies; follows the window's width. */
function useNarrow(): boolean {
  const [narrow, setNarrow] = useState(() => matchMedia(NARROW).matches);
  useEffect(() => {
    const m = matchMedia(NARROW);
    const on = () => setNarrow(m.matches);
    m.addEventListener('change', on);
    return () => m.removeEventListener('change', on);
  }, []);
  return narrow;
}

export function LiveEvents({ projectId }: { projectId: string }) {
  const { params } = useLocation();
  const device = params.get('device') ?? '';
  const type = params.get('type') ?? '';
  const label = params.get('label') ?? '';
  const reconnect = params.get('reconnect') ?? '';
  const [draft, setDraft] = useUrlDraft({ device, type, label });
  const [status, setStatus] = useState<Status>({ state: 'connecting' });
  const [paused, setPaused] = useState(false);
  const [showPings, setShowPings] = useState(true);
  const [showHeartbeats, setShowHeartbeats] = useState(true);
  const [, setFrame] = useState(0);
  const [scrollTop, setScrollTop] = useState(0);
  const ring = useRef<Row[]>([]);
  const counts = useRef({ events: 0, heartbeats: 0, pings: 0, lastPing: '' });
  const frozen = useRef<Row[] | null>(null);
  const book = useRef<ReturnType<typeof createNameBook> | null>(null);
  const narrow = useNarrow();
  const rowHeight = narrow ? NARROW_ROW_HEIGHT : ROW_HEIGHT;

  useEffect(() => {
    const abort = new AbortController();
    let seq = 0;
    let scheduled = false;
    ring.current = [];
    counts.current = { events: 0, heartbeats: 0, pings: 0, lastPing: '' };
    const schedule = () => {
      if (scheduled) return;
      scheduled = true;
      requestAnimationFrame(() => {
        scheduled = false;
        setFrame((n) => n + 1);
      });
    };
    const names = createNameBook(projectId, schedule);
    book.current = names;
    (async () => {
      setStatus({ state: 'connecting' });
      const url = `/v2/projects/${projectId}/devices:stream${query({ device_ids: device ? [device] : undefined, event_types: type ? [type] : undefined, label_filters: label ? [label] : undefined, ping_interval: '5s' })}`;
      const res = await fetch(url, { headers: CONSOLE_HEADERS, credentials: 'same-origin', signal: abort.signal });
      if (res.status === 401) return sessionExpired();
      if (!res.ok || !res.body) {
        const body = await res.json().catch(() => ({}));
        setStatus({ state: 'error', message: `${body?.error?.message ?? res.statusText} (HTTP ${res.status})` });
        return;
      }
      setStatus({ state: 'open' });
      await readLines(res.body, (line) => {
        const msg = JSON.parse(line);
        if (msg.error) {
          setStatus({ state: 'error', message: `${msg.error.message} (code ${msg.error.code})` });
          return;
        }
        names.see(msg.result.event);
        const row = toRow(++seq, msg.result.event);
        if (row.kind === 'ping') {
          counts.current.pings++;
          counts.current.lastPing = row.time;
        } else if (row.kind === 'heartbeat') counts.current.heartbeats++;
        else counts.current.events++;
        ring.current.push(row);
        if (ring.current.length > RING_SIZE * 1.5) ring.current = ring.current.slice(-RING_SIZE);
        schedule();
      });
      setStatus({ state: 'closed', message: 'The server ended the stream (streams last at most an hour).' });
    })().catch((err) => {
      if (!abort.signal.aborted) setStatus({ state: 'error', message: errorText(err) });
    });
    return () => {
      abort.abort();
      names.close();
    };
  }, [projectId, device, type, label, reconnect]);

  const source = paused && frozen.current ? frozen.current : ring.current;
  const rows = source
    .slice(-RING_SIZE)
    .filter((r) => (showPings || r.kind !== 'ping') && (showHeartbeats || r.kind !== 'heartbeat'))
    .reverse();
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - 2);
  const visible = rows.slice(first, first + Math.ceil(LIST_HEIGHT / rowHeight) + 4);
  const c = counts.current;

  return (
    <section>
      <Title>Live events</Title>
      <form
        class="filters"
        role="search"
        aria-label="Filter the stream"
        onSubmit={(e) => {
          e.preventDefault();
          setParams({ device: draft.device.trim(), type: draft.type, label: draft.label.trim() });
        }}
      >
        <Field label="Device id">
          {(id) => (
            <input
              id={id}
              value={draft.device}
              placeholder="any device"
              onInput={(e) => setDraft({ ...draft, device: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <Field label="Event type">
          {(id) => (
            <select
              id={id}
              value={draft.type}
              onChange={(e) => setDraft({ ...draft, type: (e.target as HTMLSelectElement).value })}
            >
              <option value="">All types</option>
              {EVENT_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
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
              value={draft.label}
              onInput={(e) => setDraft({ ...draft, label: (e.target as HTMLInputElement).value })}
            />
          )}
        </Field>
        <button type="submit" class="primary">
          Apply
        </button>
      </form>
      <div class="toolbar live-bar">
        <span class={`dot dot-${status.state}`} aria-hidden="true" />
        <span role="status" class="live-status">
          {status.state === 'open'
            ? 'Connected'
            : status.state === 'connecting'
              ? 'Connecting…'
              : status.state === 'closed'
                ? 'Disconnected'
                : 'Error'}
          {status.message ? `: ${status.message}` : ''}
        </span>
        <span class="counts" data-testid="live-counts">
          <span>
            <strong data-testid="event-count">{c.events}</strong> {c.events === 1 ? 'event' : 'events'}
          </span>
          <span>
            <strong>{c.heartbeats}</strong> heartbeats
          </span>
          <span>
            <strong>{c.pings}</strong> pings{c.lastPing ? ` (last ${new Date(c.lastPing).toLocaleTimeString()})` : ''}
          </span>
        </span>
        <span class="spacer" />
        <label class="check-label">
          <input type="checkbox" checked={showPings} onChange={() => setShowPings(!showPings)} /> Pings
        </label>
        <label class="check-label">
          <input type="checkbox" checked={showHeartbeats} onChange={() => setShowHeartbeats(!showHeartbeats)} />{' '}
          Heartbeats
        </label>
        <button
          type="button"
          class={paused ? 'primary' : ''}
          aria-pressed={paused}
          onClick={() => {
            frozen.current = paused ? null : ring.current.slice(-RING_SIZE);
            setPaused(!paused);
          }}
        >
          {paused ? 'Resume' : 'Pause'}
        </button>
        {status.state === 'closed' || status.state === 'error' ? (
          <button type="button" onClick={() => setParams({ reconnect: String(Date.now()) })}>
            Reconnect
          </button>
        ) : null}
      </div>
      {paused ? (
        <p class="notice" role="status">
          Paused: the list is frozen; the stream is still read and counted.
        </p>
      ) : null}
      {rows.length === 0 ? (
        <p class="empty">
          Waiting for events. Publish one from the <a href={`/projects/${projectId}/emulator`}>emulator</a>.
        </p>
      ) : null}
      <div
        class={rows.length === 0 ? 'live-list live-empty' : 'live-list'}
        role="log"
        aria-label="Events, newest first"
        aria-live="off"
        tabIndex={0}
        onScroll={(e) => setScrollTop((e.target as HTMLElement).scrollTop)}
      >
        <div class="live-spacer" style={{ height: `${rows.length * rowHeight}px` }}>
          {visible.map((r, i) => {
            const name = r.device ? book.current?.nameOf(r.device) : undefined;
            return (
              <div
                key={r.seq}
                class={`live-row live-${r.kind}`}
                style={{ top: `${(first + i) * rowHeight}px`, height: `${rowHeight}px` }}
              >
                <span class="live-time">{new Date(r.time).toLocaleTimeString()}</span>
                <span class="live-type">{r.kind === 'heartbeat' ? `♥ ${r.type}` : r.type}</span>
                {r.device ? (
                  <span class="live-device">
                    <a
                      href={`/projects/${projectId}/devices/${r.device}`}
                      class={name ? 'live-name' : 'live-name mono'}
                    >
                      {name || r.device}
                    </a>
                    {name ? <span class="live-id mono">{r.device}</span> : null}
                  </span>
                ) : (
                  <span class="live-device" />
                )}
                <span class="live-text">{r.text}</span>
              </div>
            );
          })}
        </div>
      </div>
      <p class="muted small">The newest {RING_SIZE} messages are kept.</p>
    </section>
  );
}
