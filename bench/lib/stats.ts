// Percentiles (nearest rank), rates and number formatting for the report.

export interface Summary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles of a list of milliseconds; all zero for an empty list. */
export function summarize(values: ArrayLike<number>): Summary {
  const n = values.length;
  if (n === 0) return { count: 0, p50: 0, p90: 0, p99: 0, max: 0, mean: 0 };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number) => sorted[Math.max(0, Math.ceil(q * n) - 1)]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i]!;
  return {
    count: n,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    max: round(sorted[n - 1]!),
    mean: round(sum / n),
  };
}

export const round = (x: number, digits = 2): number => Math.round(x * 10 ** digits) / 10 ** digits;
export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const fmtInt = (x: number): string => Math.round(x).toLocaleString('en-US');
export const fmtMs = (x: number): string => `${x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x)} ms`;
export const fmtPct = (x: number): string => `${Math.round(x * 100)} %`;
export const fmtMB = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** Unique event times: every published event carries one as its updateTime, which the receiver reads back. */
let lastMicros = 0;
export function uniqueMicros(): number {
  lastMicros = Math.max(lastMicros + 1, Date.now() * 1000);
  return lastMicros;
}
/** RFC 3339 with exactly 6 fractional digits, as the service formats it (so the string comes back unchanged). */
export function formatMicros(us: number): string {
  const iso = new Date(Math.floor(us / 1000)).toISOString();
  return `${iso.slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`;
}
