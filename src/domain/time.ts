// Timestamps and durations on the wire (contract §1.8). Internally a time is integer microseconds since the
// epoch, so client-supplied microseconds survive a round trip.
import { badRequest } from './errors.ts';

export type Micros = number;

export const msToMicros = (ms: number): Micros => Math.floor(ms * 1000);

/** RFC 3339 UTC with exactly 6 fractional digits, e.g. 2025-06-01T12:00:00.250000Z. */
export function formatTimestamp(micros: Micros): string {
  const second = Math.floor(micros / 1_000_000);
  // An event's times mostly fall in the same second as the previous one's: the date part is formatted once.
  if (second !== lastSecond) {
    lastPrefix = new Date(second * 1000).toISOString().slice(0, 19); // 2025-06-01T12:00:00
    lastSecond = second;
  }
  return `${lastPrefix}.${String(micros - second * 1_000_000).padStart(6, '0')}Z`;
}
let lastSecond = Number.NaN;
let lastPrefix = '';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$/;

/** Parses any RFC 3339 date-time, normalised to UTC microseconds (truncated). Returns null when invalid. */
export function tryParseTimestamp(input: unknown): Micros | null {
  if (typeof input !== 'string') return null;
  const m = RFC3339.exec(input);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac = '', zone] = m;
  const base = Date.UTC(+y!, +mo! - 1, +d!, +h!, +mi!, +s!);
  if (Number.isNaN(base)) return null;
  const check = new Date(base);
  if (check.getUTCFullYear() !== +y! || check.getUTCMonth() !== +mo! - 1 || check.getUTCDate() !== +d!) return null;
  if (+h! > 23 || +mi! > 59 || +s! > 60) return null;
  let offsetMin = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone!.startsWith('-') ? -1 : 1;
    offsetMin = sign * (+zone!.slice(1, 3) * 60 + +zone!.slice(4, 6));
  }
  const micros = Number((frac + '000000').slice(0, 6));
  return (base - offsetMin * 60_000) * 1000 + micros;
}

export function parseTimestamp(input: unknown, field: string): Micros {
  const t = tryParseTimestamp(input);
  if (t === null) throw badRequest(`${field} must be an RFC 3339 timestamp`);
  return t;
}

/** Protobuf JSON duration with 3 decimals, e.g. "0.411s". */
export function formatDuration(seconds: number): string {
  return `${seconds.toFixed(3)}s`;
}

/** Accepts "10s", "1.5s" or a bare number of seconds. Returns null when invalid. */
export function tryParseDuration(input: unknown): number | null {
  if (typeof input === 'number') return Number.isFinite(input) ? input : null;
  if (typeof input !== 'string') return null;
  const m = /^\s*(\d+(?:\.\d+)?)s?\s*$/.exec(input);
  return m ? Number(m[1]) : null;
}
