// Parsers for option values, shared by the commands: every bad value is a usage error (exit 2) naming the option.
import { UsageError } from './errors.ts';

/** commander collector for repeatable options: `--label a=1 --label b=2`. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** commander collector for repeatable, comma-separated options: `--events touch,temperature --events co2`. */
export function collectList(value: string, previous: string[] | undefined): string[] {
  return [
    ...(previous ?? []),
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== ''),
  ];
}

/** `key=value` pairs into an object; `key=` is an empty value. */
export function parsePairs(pairs: readonly string[] | undefined, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`${what} must be key=value, got "${pair}"`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** `Name: value` (curl's form) or `Name=value` header pairs. */
export function parseHeaders(pairs: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs ?? []) {
    const match = /^([^:=\s]+)\s*[:=]\s*(.*)$/.exec(pair);
    if (!match) throw new UsageError(`--header must be "Name: value", got "${pair}"`);
    out[match[1]!] = match[2]!;
  }
  return out;
}

export function parseNumber(value: string, option: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${option} must be a number, got "${value}"`);
  return n;
}

export function parseInteger(value: string, option: string, min = -Infinity): number {
  const n = parseNumber(value, option);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`${option} must be an integer${min > -Infinity ? ` of at least ${min}` : ''}, got "${value}"`);
  return n;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * A point in time for --since/--until: a duration before now (`90s`, `15m`, `24h`, `7d`, `2w`), `now`, or an
 * RFC 3339 timestamp. Returned as an RFC 3339 string the API accepts.
 */
export function parseTime(value: string, option: string, nowMs = Date.now()): string {
  const v = value.trim();
  if (v === 'now') return new Date(nowMs).toISOString();
  const relative = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(v);
  if (relative) return new Date(nowMs - Number(relative[1]) * UNIT_MS[relative[2]!]!).toISOString();
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(v) && !Number.isNaN(Date.parse(v)))
    return v;
  throw new UsageError(
    `${option} must be a duration before now (30m, 24h, 7d) or an RFC 3339 time (2025-06-01T12:00:00Z), got "${value}"`,
  );
}

/**
 * A length of time as a number of whole seconds: `0`, `90s`, `15m`, `24h`, `7d`, `1w` (the units of parseTime), or
 * the API's own `"86400s"`; `max` (seconds) bounds it.
 */
export function parseDuration(value: string, option: string, max = Infinity): number {
  const v = value.trim();
  const match = /^(\d+(?:\.\d+)?)([smhdw])$/.exec(v);
  const ms = v === '0' ? 0 : match ? Number(match[1]) * UNIT_MS[match[2]!]! : Number.NaN;
  if (Number.isNaN(ms))
    throw new UsageError(`${option} must be a duration such as 0, 90s, 30m, 24h or 7d, got "${value}"`);
  const seconds = ms / 1000;
  if (!Number.isInteger(seconds)) throw new UsageError(`${option} must be whole seconds, got "${value}"`);
  if (seconds > max) throw new UsageError(`${option} must be at most ${durationText(max)}, got "${value}"`);
  return seconds;
}

/** Seconds for people: whole days from 2 days up (`7d`), else whole hours (`24h`), minutes (`90m`) or seconds. */
export function durationText(seconds: number): string {
  const ms = seconds * 1000;
  if (ms >= 2 * UNIT_MS.d! && ms % UNIT_MS.d! === 0) return `${ms / UNIT_MS.d!}d`;
  if (ms > 0 && ms % UNIT_MS.h! === 0) return `${ms / UNIT_MS.h!}h`;
  if (ms > 0 && ms % UNIT_MS.m! === 0) return `${ms / UNIT_MS.m!}m`;
  return `${seconds}s`;
}

export function oneOf<T extends string>(value: string, allowed: readonly T[], option: string): T {
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`${option} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}
