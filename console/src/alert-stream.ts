// Alert transitions as they happen: one stream per project (`devices:stream?event_types=alertChanged`, NDJSON read
// with fetch as the live-events screen reads it) shared by whatever listens (the navigation's badge, the alerts
// pages, the device page). It opens with the first listener, closes a little after the last leaves (so moving
// between pages keeps it), and reconnects after an error or the server's hourly close. After a reconnect listeners
// get `null`: events may have been missed, so they read again what they show. The open-alert count of the badge.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Alert } from './alerts.ts';
import { OPEN_STATES } from './alerts.ts';
import { api, CONSOLE_HEADERS, query, readLines, sessionExpired } from './api.ts';
import { onNavigate } from './router.ts';

/** An alert's new state (the alert without notifications), or null: read again, events may have been missed. */
export type AlertListener = (alert: Alert | null) => void;

/** How long a stream stays open after its last listener left (a page change unsubscribes and subscribes again). */
const LINGER_MS = 3000;
/** Waits between reconnects after a failure, doubling up to the last. */
const BACKOFF_MS = [1000, 2000, 5000, 10_000, 30_000];

interface Hub {
  listeners: Set<AlertListener>;
  abort: AbortController | null;
  closeTimer: ReturnType<typeof setTimeout> | null;
}

const hubs = new Map<string, Hub>();

function open(projectId: string, hub: Hub): void {
  const abort = new AbortController();
  hub.abort = abort;
  let failures = 0;
  const emit = (alert: Alert | null) => {
    for (const l of [...hub.listeners]) l(alert);
  };
  const connect = async (onOpen: () => void): Promise<void> => {
    const url = `/v2/projects/${projectId}/devices:stream${query({ event_types: ['alertChanged'], ping_interval: '30s' })}`;
    const res = await fetch(url, { headers: CONSOLE_HEADERS, credentials: 'same-origin', signal: abort.signal });
    if (res.status === 401) {
      sessionExpired();
      throw new Error('signed out');
    }
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
    failures = 0;
    onOpen();
    await readLines(res.body, (line) => {
      let msg: any;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      const event = msg?.result?.event;
      if (event?.eventType === 'alertChanged' && event.data?.alertChanged) emit(event.data.alertChanged as Alert);
    });
  };
  (async () => {
    while (!abort.signal.aborted) {
      try {
        // Once open, what happened while no stream was (before the first, or between two) is read again.
        await connect(() => emit(null));
      } catch {
        if (abort.signal.aborted) return;
        failures++;
      }
      if (abort.signal.aborted) return;
      const wait = failures === 0 ? 200 : BACKOFF_MS[Math.min(failures - 1, BACKOFF_MS.length - 1)]!;
      await new Promise((r) => setTimeout(r, wait));
    }
  })();
}

/** Calls `listener` with each alert transition of the project; returns the unsubscribe. */
function onAlertChanged(projectId: string, listener: AlertListener): () => void {
  let hub = hubs.get(projectId);
  if (!hub) {
    hub = { listeners: new Set(), abort: null, closeTimer: null };
    hubs.set(projectId, hub);
  }
  const h = hub;
  if (h.closeTimer) {
    clearTimeout(h.closeTimer);
    h.closeTimer = null;
  }
  h.listeners.add(listener);
  if (!h.abort) open(projectId, h);
  return () => {
    h.listeners.delete(listener);
    if (h.listeners.size > 0 || h.closeTimer) return;
    h.closeTimer = setTimeout(() => {
      h.closeTimer = null;
      if (h.listeners.size > 0) return;
      h.abort?.abort();
      h.abort = null;
      hubs.delete(projectId);
    }, LINGER_MS);
  };
}

/** Subscribes a component to the project's alert transitions; `listener` may change between renders. */
export function useAlertChanges(projectId: string | null, listener: AlertListener): void {
  const current = useRef(listener);
  current.current = listener;
  useEffect(() => {
    if (!projectId) return;
    return onAlertChanged(projectId, (a) => current.current(a));
  }, [projectId]);
}

/** The open alerts (TRIGGERED or ACKNOWLEDGED) of a project, every page of them, by name. */
async function readOpenAlerts(projectId: string): Promise<Map<string, string>> {
  const open = new Map<string, string>();
  let pageToken = '';
  // The API has no count: the open alerts are read (1,000 a page, at most 10 pages; a project has few open ones).
  for (let i = 0; i < 10; i++) {
    const page = await api<{ alerts: Alert[]; nextPageToken: string }>(
      'GET',
      `/projects/${projectId}/alerts${query({ state: OPEN_STATES, pageSize: 1000, pageToken })}`,
    );
    for (const a of page.alerts) open.set(a.name, a.state);
    pageToken = page.nextPageToken;
    if (pageToken === '') break;
  }
  return open;
}

/**
 * The number of open alerts of the project, or null until known: read when the project or the page changes, kept
 * current by the stream's alertChanged events (a RESOLVED one leaves the count, any other is in it).
 */
export function useOpenAlertCount(projectId: string | null): number | null {
  const [count, setCount] = useState<number | null>(null);
  const open = useRef(new Map<string, string>());
  /** Events seen while a read is under way: applied on top of its answer, which may predate them. */
  const pending = useRef<Alert[] | null>(null);
  const generation = useRef(0);
  const apply = (a: Alert) => {
    if (OPEN_STATES.includes(a.state)) open.current.set(a.name, a.state);
    else open.current.delete(a.name);
  };
  const refresh = (project: string) => {
    const mine = ++generation.current;
    pending.current = [];
    readOpenAlerts(project).then(
      (fresh) => {
        if (mine !== generation.current) return;
        open.current = fresh;
        for (const a of pending.current ?? []) apply(a);
        pending.current = null;
        setCount(open.current.size);
      },
      () => {
        if (mine === generation.current) pending.current = null;
      },
    );
  };
  useEffect(() => {
    setCount(null);
    open.current = new Map();
    if (!projectId) return;
    refresh(projectId);
    let timer: ReturnType<typeof setTimeout> | null = null;
    const off = onNavigate(() => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => refresh(projectId), 100);
    });
    return () => {
      off();
      if (timer) clearTimeout(timer);
      generation.current++;
    };
  }, [projectId]);
  useAlertChanges(projectId, (a) => {
    if (!projectId) return;
    if (a === null) return refresh(projectId);
    if (pending.current) pending.current.push(a);
    apply(a);
    setCount(open.current.size);
  });
  return count;
}
