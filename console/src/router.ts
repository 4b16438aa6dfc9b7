// History-API routing: every screen has a URL that can be bookmarked and reloaded (the server answers every
// console path with the page). `useLocation` re-renders on navigation.
import { useEffect, useRef, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

export function navigate(url: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const l of listeners) l();
  if (!options.replace) window.scrollTo(0, 0);
}

window.addEventListener('popstate', () => {
  for (const l of listeners) l();
});

/** Calls `listener` after every change of the URL (a link, Back, a filter); returns the unsubscribe. */
export function onNavigate(listener: () => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

export interface Location {
  path: string;
  params: URLSearchParams;
}

export function useLocation(): Location {
  const [, setTick] = useState(0);
  useEffect(() => {
    const l = () => setTick((n) => n + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}

/** Replaces query parameters of the current URL (for filters and pickers), keeping the history entry. */
export function setParams(changes: Record<string, string | undefined>): void {
  const params = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === '') params.delete(k);
    else params.set(k, v);
  }
  const s = params.toString();
  navigate(`${location.pathname}${s ? `?${s}` : ''}`, { replace: true });
}

/**
 * A filter form's draft of some URL parameters: it starts as their values and goes back to them when they change
 * (a filter applied, Back), and at no other time. An effect that reset it whenever its inputs changed also ran once
 * after the screen's first paint, and could take back what was typed in that moment.
 */
export function useUrlDraft<T extends Record<string, string>>(values: T): [T, (draft: T) => void] {
  const key = JSON.stringify(values);
  const [draft, setDraft] = useState(values);
  const shown = useRef(key);
  useEffect(() => {
    if (shown.current === key) return;
    shown.current = key;
    setDraft(values);
  }, [key]);
  return [draft, setDraft];
}

/** Matches `/projects/:p/devices/:d` against a path; the captured segments are URI-decoded. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const ps = pattern.split('/');
  const xs = (path.length > 1 ? path.replace(/\/$/, '') : path).split('/');
  if (ps.length !== xs.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < ps.length; i++) {
    if (ps[i]!.startsWith(':')) out[ps[i]!.slice(1)] = decodeURIComponent(xs[i]!);
    else if (ps[i] !== xs[i]) return null;
  }
  return out;
}

/** A click on an in-app link: navigate without a reload (modified clicks keep the browser's behaviour). */
export function onLinkClick(event: MouseEvent): void {
  const a = (event.target as Element).closest('a');
  if (
    !a ||
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  )
    return;
  const href = a.getAttribute('href');
  if (
    !href?.startsWith('/') ||
    a.target ||
    a.hasAttribute('download') ||
    href.startsWith('/docs/errors') ||
    href.startsWith('/v2/')
  )
    return;
  event.preventDefault();
  navigate(href);
}
