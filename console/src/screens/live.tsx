// Screen 5: the project's live event stream (GET …/devices:stream, NDJSON read with fetch so the session cookie
// travels as for every call). Messages go into a bounded ring; the list renders only the rows in view and at
// most once per animation frame, so 200 events/s never freezes the page. Pings (the stream's keep-alive) and
// emulated heartbeats (networkStatus, batteryStatus, connectionStatus) are shown distinctly.
import { useEffect, useRef, useState } from 'preact/hooks';
import { CONSOLE_HEADERS, errorText, idOf, query, sessionExpired } from '../api.ts';
import { Field, Title } from '../components.tsx';
import { EVENT_TYPES, readingText } from '../format.ts';
import { setParams, useLocation, useUrlDraft } from '../router.ts';

/** Messages kept for display; older ones fall off. */
export const RING_SIZE = 2000;
const ROW_HEIGHT = 34;
const VIEW_ROWS = 14;
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
  const text = type === 'ping' ? 'stream alive' : type === 'labelsChanged' ? JSON.stringify(event.data) : readingText(type, event.data?.[type]);
  return { seq, kind, time: event.timestamp, type, device: type === 'ping' ? '' : idOf(event.targetName), text };
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
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line.trim() === '') continue;
          const msg = JSON.parse(line);
          if (msg.error) {
            setStatus({ state: 'error', message: `${msg.error.message} (code ${msg.error.code})` });
            continue;
          }
          const row = toRow(++seq, msg.result.event);
          if (row.kind === 'ping') {
            counts.current.pings++;
            counts.current.lastPing = row.time;
          } else if (row.kind === 'heartbeat') counts.current.heartbeats++;
          else counts.current.events++;
          ring.current.push(row);
          if (ring.current.length > RING_SIZE * 1.5) ring.current = ring.current.slice(-RING_SIZE);
          schedule();
        }
      }
      setStatus({ state: 'closed', message: 'The server ended the stream (streams last at most an hour).' });
    })().catch((err) => {
      if (!abort.signal.aborted) setStatus({ state: 'error', message: errorText(err) });
    });
    return () => abort.abort();
  }, [projectId, device, type, label, reconnect]);

  const source = paused && frozen.current ? frozen.current : ring.current;
  const rows = source.slice(-RING_SIZE).filter((r) => (showPings || r.kind !== 'ping') && (showHeartbeats || r.kind !== 'heartbeat')).reverse();
  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - 2);
  const visible = rows.slice(first, first + VIEW_ROWS + 4);
  const c = counts.current;

  return (
    <section>
      <Title>Live events</Title>
      <form class="filters" role="search" aria-label="Filter the stream" onSubmit={(e) => {
        e.preventDefault();
        setParams({ device: draft.device.trim(), type: draft.type, label: draft.label.trim() });
      }}>
        <Field label="Device id">{(id) => <input id={id} value={draft.device} placeholder="any device" onInput={(e) => setDraft({ ...draft, device: (e.target as HTMLInputElement).value })} />}</Field>
        <Field label="Event type">{(id) => (
          <select id={id} value={draft.type} onChange={(e) => setDraft({ ...draft, type: (e.target as HTMLSelectElement).value })}>
            <option value="">All types</option>
            {EVENT_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        )}</Field>
        <Field label="Label" hint="key or key=value">{(id, hint) => <input id={id} aria-describedby={hint} value={draft.label} onInput={(e) => setDraft({ ...draft, label: (e.target as HTMLInputElement).value })} />}</Field>
        <button type="submit" class="primary">Apply</button>
      </form>
      <div class="toolbar live-bar">
        <span class={`dot dot-${status.state}`} aria-hidden="true" />
        <span role="status" class="live-status">
          {status.state === 'open' ? 'Connected' : status.state === 'connecting' ? 'Connecting…' : status.state === 'closed' ? 'Disconnected' : 'Error'}
          {status.message ? `: ${status.message}` : ''}
        </span>
        <span class="counts" data-testid="live-counts">
          <span><strong data-testid="event-count">{c.events}</strong> events</span>
          <span><strong>{c.heartbeats}</strong> heartbeats</span>
          <span><strong>{c.pings}</strong> pings{c.lastPing ? ` (last ${new Date(c.lastPing).toLocaleTimeString()})` : ''}</span>
        </span>
        <span class="spacer" />
        <label class="check-label"><input type="checkbox" checked={showPings} onChange={() => setShowPings(!showPings)} /> Pings</label>
        <label class="check-label"><input type="checkbox" checked={showHeartbeats} onChange={() => setShowHeartbeats(!showHeartbeats)} /> Heartbeats</label>
        <button type="button" class={paused ? 'primary' : ''} aria-pressed={paused} onClick={() => {
          frozen.current = paused ? null : ring.current.slice(-RING_SIZE);
          setPaused(!paused);
        }}>{paused ? 'Resume' : 'Pause'}</button>
        {status.state === 'closed' || status.state === 'error' ? <button type="button" onClick={() => setParams({ reconnect: String(Date.now()) })}>Reconnect</button> : null}
      </div>
      {paused ? <p class="notice" role="status">Paused: the list is frozen; the stream is still read and counted.</p> : null}
      {rows.length === 0 ? <p class="empty">Waiting for events. Publish one from the <a href={`/projects/${projectId}/emulator`}>emulator</a>.</p> : null}
      <div class={rows.length === 0 ? 'live-list live-empty' : 'live-list'} role="log" aria-label="Events, newest first" aria-live="off" tabIndex={0}
        onScroll={(e) => setScrollTop((e.target as HTMLElement).scrollTop)}>
        <div class="live-spacer" style={{ height: `${rows.length * ROW_HEIGHT}px` }}>
          {visible.map((r, i) => (
            <div key={r.seq} class={`live-row live-${r.kind}`} style={{ top: `${(first + i) * ROW_HEIGHT}px` }}>
              <span class="live-time">{new Date(r.time).toLocaleTimeString()}</span>
              <span class="live-type">{r.kind === 'heartbeat' ? `♥ ${r.type}` : r.type}</span>
              {r.device ? <a class="live-device mono" href={`/projects/${projectId}/devices/${r.device}`}>{r.device}</a> : <span class="live-device" />}
              <span class="live-text">{r.text}</span>
            </div>
          ))}
        </div>
      </div>
      <p class="muted small">The newest {RING_SIZE} messages are kept.</p>
    </section>
  );
}
