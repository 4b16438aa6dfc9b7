// The load generator: one undici Pool with keep-alive per target. Closed loop = fixed concurrency, as fast as
// answers come (maximum throughput); open loop = a fixed offered rate whatever the answers (latency). Every run
// is bounded in count and in time. Latencies are measured from the intended send time (no coordinated omission).
import type { Pool } from 'undici';
import { fmtInt, nowMs, sleep, summarize, type Summary } from './stats.ts';

export interface Req {
  path: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Correlation key (the published updateTime); its intended send time is returned in `sendTimes`. */
  key?: string;
}

export interface LoadResult {
  sent: number;
  ok: number;
  /** Non-2xx answers by status, plus "transport" for connection errors. */
  failures: Record<string, number>;
  firstFailure: string | null;
  /** True when the run stopped early because the target answered only 404 (endpoint not there yet). */
  notFound: boolean;
  startMs: number;
  endMs: number;
  /** 2xx answers per second over the run. */
  okPerSecond: number;
  latency: Summary;
  sendTimes: Map<string, number>;
}

export interface ClosedLoopOptions {
  concurrency: number;
  durationMs: number;
  maxCount: number;
  make: (i: number) => Req;
  label?: string;
  log?: (line: string) => void;
}

export interface OpenLoopOptions {
  rate: number;
  durationMs: number;
  /** Requests in flight at most; beyond it the schedule slips (and the latency shows it). */
  maxInFlight?: number;
  make: (i: number) => Req;
  label?: string;
  log?: (line: string) => void;
}

class Run {
  sent = 0;
  ok = 0;
  done = 0;
  failures: Record<string, number> = {};
  firstFailure: string | null = null;
  notFound = false;
  latencies: number[] = [];
  sendTimes = new Map<string, number>();
  readonly startMs = nowMs();
  private lastReport = this.startMs;

  constructor(
    private readonly pool: Pool,
    private readonly label: string,
    private readonly log?: (line: string) => void,
  ) {}

  async fire(req: Req, intendedMs: number): Promise<void> {
    this.sent++;
    if (req.key !== undefined) this.sendTimes.set(req.key, intendedMs);
    try {
      const r = await this.pool.request({
        path: req.path,
        method: req.method,
        headers: req.headers,
        body: req.body,
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      if (r.statusCode >= 200 && r.statusCode < 300) {
        await r.body.dump();
        this.ok++;
        this.latencies.push(nowMs() - intendedMs);
      } else {
        const text = await r.body.text().catch(() => '');
        this.fail(
          String(r.statusCode),
          `${req.method} ${req.path.split('?')[0]} → ${r.statusCode} ${text.slice(0, 200)}`,
        );
      }
    } catch (err) {
      this.fail('transport', `${req.method} ${req.path.split('?')[0]}: ${(err as Error).message}`);
    }
    this.done++;
    if (this.ok === 0 && this.done >= 10 && (this.failures['404'] ?? 0) === this.done) this.notFound = true;
    this.progress();
  }

  private fail(kind: string, message: string): void {
    this.failures[kind] = (this.failures[kind] ?? 0) + 1;
    this.firstFailure ??= message;
  }

  private progress(): void {
    const t = nowMs();
    if (this.log && t - this.lastReport >= 5000) {
      this.lastReport = t;
      const s = (t - this.startMs) / 1000;
      const failed = this.done - this.ok;
      this.log(
        `    ${this.label} ${s.toFixed(0)} s: ${fmtInt(this.ok)} ok (${fmtInt(this.ok / s)}/s)${failed ? `, ${fmtInt(failed)} failed` : ''}`,
      );
    }
  }

  result(): LoadResult {
    const endMs = nowMs();
    return {
      sent: this.sent,
      ok: this.ok,
      failures: this.failures,
      firstFailure: this.firstFailure,
      notFound: this.notFound,
      startMs: this.startMs,
      endMs,
      okPerSecond: this.ok / ((endMs - this.startMs) / 1000),
      latency: summarize(this.latencies),
      sendTimes: this.sendTimes,
    };
  }
}

/** Fixed concurrency until `durationMs` has passed or `maxCount` requests were sent. */
export async function closedLoop(pool: Pool, o: ClosedLoopOptions): Promise<LoadResult> {
  const run = new Run(pool, o.label ?? '', o.log);
  const deadline = run.startMs + o.durationMs;
  let next = 0;
  const worker = async () => {
    while (next < o.maxCount && nowMs() < deadline && !run.notFound) {
      const i = next++;
      await run.fire(o.make(i), nowMs());
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  return run.result();
}

/** A fixed offered rate for `durationMs` (at most rate × duration requests), in-flight bounded. */
export async function openLoop(pool: Pool, o: OpenLoopOptions): Promise<LoadResult> {
  const run = new Run(pool, o.label ?? '', o.log);
  const total = Math.floor((o.rate * o.durationMs) / 1000);
  const maxInFlight = o.maxInFlight ?? 1024;
  const interval = 1000 / o.rate;
  // A target that cannot keep up makes the schedule slip; stop sending after 1.5× the duration regardless.
  const hardDeadline = run.startMs + o.durationMs * 1.5 + 2_000;
  let inFlight = 0;
  let wake: (() => void) | null = null;
  const pending = new Set<Promise<void>>();
  let i = 0;
  while (i < total && !run.notFound && nowMs() < hardDeadline) {
    const due = run.startMs + i * interval;
    const t = nowMs();
    if (t < due) {
      await sleep(Math.min(due - t, 5));
      continue;
    }
    if (inFlight >= maxInFlight) {
      await new Promise<void>((resolve) => (wake = resolve));
      continue;
    }
    inFlight++;
    const p = run.fire(o.make(i), due).finally(() => {
      inFlight--;
      pending.delete(p);
      const w = wake;
      wake = null;
      w?.();
    });
    pending.add(p);
    i++;
  }
  await Promise.all(pending);
  return run.result();
}
