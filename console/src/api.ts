// Calls to the public /v2 API, as any client makes them. Credentials travel in the HttpOnly session cookie the
// browser sends by itself; every request carries the console header the server requires for state changes made
// with that cookie (docs/console.md). Errors become ApiError with the API's own message.
import { navigate } from './router.ts';

export const CONSOLE_HEADERS = { 'x-requested-with': 'sensorcloud-console' } as const;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly help: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The user-facing text of anything a call threw. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (HTTP ${err.status})`;
  if (err instanceof TypeError) return 'The service could not be reached. Check that it is running, then try again.';
  return err instanceof Error ? err.message : String(err);
}

/** Sends the browser to sign-in, to come back to the current page afterwards. */
export function sessionExpired(): void {
  const here = location.pathname + location.search;
  if (location.pathname === '/signin') return;
  // "Your session has ended" only for someone who was signed in; a first visit just asks to sign in.
  const wasSignedIn = localStorage.getItem('sensorcloud.email') !== null;
  navigate(`/signin?next=${encodeURIComponent(here)}${wasSignedIn ? '&expired=1' : ''}`, { replace: true });
}

async function readError(res: Response): Promise<ApiError> {
  let message = res.statusText || 'request failed';
  let help = '';
  try {
    const body = await res.json();
    if (typeof body.error === 'string') message = body.error_description ?? body.error;
    else if (body.error && typeof body.error.message === 'string') message = body.error.message;
    if (typeof body.help === 'string') help = body.help;
  } catch {
    // not JSON: keep the status text
  }
  return new ApiError(res.status, message, help);
}

/** One API call: `path` is below /v2 (for example `/projects`). Resolves to the JSON body. */
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { ...CONSOLE_HEADERS };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/v2${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  if (res.status === 401) {
    sessionExpired();
    throw await readError(res);
  }
  if (!res.ok) throw await readError(res);
  return res.json() as Promise<T>;
}

/** Query string from pairs; arrays become repeated keys (contract §1.6), empty values are left out. */
export function query(params: Record<string, string | number | undefined | readonly string[]>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === '') continue;
    if (Array.isArray(v)) for (const item of v) search.append(k, item);
    else search.set(k, String(v));
  }
  const s = search.toString();
  return s === '' ? '' : `?${s}`;
}

/** Every page of a list, up to `maxPages` pages (lists in the console are small: projects, members, keys). */
export async function listAll<T>(path: string, key: string, maxPages = 20): Promise<T[]> {
  const items: T[] = [];
  let pageToken = '';
  for (let i = 0; i < maxPages; i++) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await api<Record<string, unknown>>(
      'GET',
      `${path}${sep}pageSize=1000${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`,
    );
    items.push(...((page[key] as T[]) ?? []));
    pageToken = String(page.nextPageToken ?? '');
    if (pageToken === '') break;
  }
  return items;
}

/** The last segment of a resource name: `projects/p/devices/d` → `d`. */
export const idOf = (name: string): string => name.slice(name.lastIndexOf('/') + 1);

/** Calls `onLine` with each line of a streamed NDJSON body that is not blank, until the body ends. */
export async function readLines(body: ReadableStream<BufferSource>, onLine: (line: string) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim() !== '') onLine(line);
    }
  }
}
