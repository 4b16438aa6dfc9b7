// SENSORCLOUD_DATABASE_URL. node-postgres reads it (pg-connection-string) and takes libpq's forms: a host and port,
// or a Unix socket directory (`?host=/var/run/postgresql`, with or without a host before the path:
// `postgres://user@/db?host=…` leaves it empty, which the WHATWG URL parser refuses), parameters such as sslmode and
// sslrootcert, and the password in the authority or as `?password=`. This checks the form, shows a URL without its
// secrets, and names node-postgres's sslmode for what it does.

const SECRET_PARAMS = /([?&](?:ssl)?password=)[^&#]*/gi;

/** The scheme with its `//`, the authority (userinfo and host) and the rest; null if it is no postgres:// URL. */
const split = (text: string) => /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/s.exec(text);

/** The URL parsed, an empty host (libpq's socket form) read as localhost; null if it is no postgres:// URL. */
function parse(text: string): URL | null {
  const m = split(text);
  if (!m) return null;
  const filled = `${m[1]}${m[2]}${m[2]!.endsWith('@') ? 'localhost' : ''}${m[3]}`;
  return URL.canParse(filled) ? new URL(filled) : null;
}

export const isDatabaseUrl = (text: string): boolean => parse(text) !== null;

/**
 * Whether the URL names its connections' application_name. node-postgres would take it over the service's own
 * (`sensorcloud`), by which admin commands tell that a serve process is connected (../store/postgres/repos/cluster.ts).
 */
export const setsApplicationName = (text: string): boolean =>
  parse(text)?.searchParams.has('application_name') ?? false;

/**
 * Whether the URL connects over TCP without TLS: no sslmode but disable, no ssl=true, and no Unix socket directory
 * (host=/…, which never uses TLS).
 */
export function plainTcp(text: string): boolean {
  const params = parse(text)?.searchParams;
  if (!params) return false;
  const mode = params.get('sslmode');
  const ssl = params.get('ssl');
  return (mode === null || mode === 'disable') && ssl !== 'true' && ssl !== '1' && !params.get('host')?.startsWith('/');
}

/**
 * How long to wait for a connection, ms: libpq's connect_timeout (whole seconds; 1 is read as 2, as libpq does), 10 s
 * when the URL names none; NaN when its value is not a whole number of seconds from 1 to 3600. libpq reads 0 as
 * "wait forever"; here every connection attempt has a bound, so a request during a network cut answers 503 in time.
 * node-postgres reads connect_timeout only with its native binding: the service hands the value to it.
 */
export function connectTimeoutMs(text: string): number {
  const raw = parse(text)?.searchParams.get('connect_timeout');
  if (raw === null || raw === undefined) return 10_000;
  const seconds = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  return seconds >= 1 && seconds <= 3600 ? Math.max(2, seconds) * 1000 : NaN;
}

/** The URL as typed, its password (in the authority, or as password= or sslpassword=) replaced by ***. */
export function redactDatabaseUrl(text: string): string {
  const m = split(text);
  if (!m) return 'postgres://…';
  let authority = m[2]!;
  // The userinfo ends at the last @ of the authority (a password may hold an unescaped @).
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at >= 0 && colon >= 0 && colon < at) authority = `${authority.slice(0, colon)}:***${authority.slice(at)}`;
  return `${m[1]}${authority}${m[3]!.replace(SECRET_PARAMS, '$1***')}`;
}

/** The user and database a URL names, for hints (the database: its path, or the user's name, as PostgreSQL takes it). */
export function databaseUrlNames(text: string): { user: string; database: string } {
  const u = parse(text);
  const user = u?.searchParams.get('user') || (u && decodeURIComponent(u.username)) || 'sensorcloud';
  return { user, database: (u && decodeURIComponent(u.pathname.slice(1))) || user };
}

/**
 * The URL for node-postgres. Its version 8 checks the server's certificate for sslmode prefer, require and verify-ca
 * as for verify-full (libpq would not), and says so at every start in a warning of several lines on stderr; the URL
 * it is given names the mode it applies. Unchanged with uselibpqcompat=true, which asks for libpq's meaning.
 */
export function driverUrl(text: string): string {
  if (/[?&]uselibpqcompat=true(?:&|#|$)/.test(text)) return text;
  return text.replace(/([?&]sslmode=)(?:prefer|require|verify-ca)(?=&|#|$)/i, '$1verify-full');
}
