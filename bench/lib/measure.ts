// Measurements built from the load generator and the receiver: delivered throughput over a window, and
// publish→acknowledgement latency at a fixed offered rate (the receiver's arrival time of the push that
// carries the event's unique updateTime, minus the intended send time of its publish).
import type { Pool } from 'undici';
import type { BenchContext } from './context.ts';
import { closedLoop, openLoop, type LoadResult, type Req } from './loadgen.ts';
import { Skip } from './api.ts';
import { cpuTimes } from './procs.ts';
import { nowMs, round, sleep, summarize, type Summary } from './stats.ts';

export function assertFound(r: LoadResult, what: string): void {
  if (r.notFound) throw new Skip(`endpoint not available: ${what} answered 404`);
}

/** Polls the receiver until it has counted `target` pushes since its last reset, or time runs out. */
export async function waitForDeliveries(
  ctx: BenchContext,
  target: number,
  timeoutMs: number,
): Promise<{ count: number; drained: boolean; waitedMs: number }> {
  const t0 = nowMs();
  for (;;) {
    const count = await ctx.receiver.count();
    if (count >= target) return { count, drained: true, waitedMs: nowMs() - t0 };
    if (nowMs() - t0 > timeoutMs) return { count, drained: false, waitedMs: nowMs() - t0 };
    await sleep(200);
  }
}

export interface ThroughputFigures {
  /**
   * Pushes acknowledged per second from the first arrival (after the warm-up) to the last one, the tail after
   * the load included: the rate the whole pipeline sustains, whichever stage is the bottleneck.
   */
  deliveredPerSecond: number;
  /** Publish requests answered 2xx per second while the load ran. */
  publishedPerSecond: number;
  published: number;
  delivered: number;
  /** Published but not yet delivered when the load stopped. */
  backlogAtEnd: number;
  /** Time after the load until every published event was delivered; null when the bounded wait ran out. */
  drainedAfterMs: number | null;
  /** From the first publish to the first push. */
  firstPushAfterMs: number | null;
  publishLatency: Summary;
  failures: Record<string, number>;
  firstFailure: string | null;
}

/** Closed-loop publish at the shared concurrency for `durationMs`; throughput as the receiver sees it. */
export async function measureThroughput(
  ctx: BenchContext,
  pool: Pool,
  make: (i: number) => Req,
  o: { durationMs: number; label: string; deliveriesPerEvent?: number },
): Promise<ThroughputFigures> {
  const s = ctx.settings;
  await ctx.receiver.reset();
  const r = await closedLoop(pool, {
    concurrency: s.concurrency,
    durationMs: o.durationMs,
    maxCount: 10_000_000,
    make,
    label: o.label,
    log: ctx.log,
  });
  assertFound(r, 'publish');
  const expected = r.ok * (o.deliveriesPerEvent ?? 1);
  const atEnd = (await ctx.receiver.window(0, r.endMs)).count;
  const d = await waitForDeliveries(ctx, expected, s.drainTimeoutMs);
  if (!d.drained)
    ctx.log(`    not drained ${s.drainTimeoutMs / 1000} s after the load: ${d.count} of ${expected} delivered`);
  const st = await ctx.receiver.stats();
  let deliveredPerSecond = 0;
  if (st.first !== null && st.last !== null && st.last > st.first) {
    const from = st.first + Math.min(s.warmupMs, (st.last - st.first) / 3);
    const w = await ctx.receiver.window(from, st.last + 0.001);
    deliveredPerSecond = w.count / ((st.last - from) / 1000);
  }
  return {
    deliveredPerSecond: round(deliveredPerSecond, 1),
    publishedPerSecond: round(r.okPerSecond, 1),
    published: r.ok,
    delivered: st.total,
    backlogAtEnd: Math.max(0, expected - atEnd),
    drainedAfterMs: d.drained ? round(d.waitedMs, 0) : null,
    firstPushAfterMs: st.first !== null ? round(st.first - r.startMs, 0) : null,
    publishLatency: r.latency,
    failures: r.failures,
    firstFailure: r.firstFailure,
  };
}

export interface LatencyFigures {
  offeredPerSecond: number;
  published: number;
  acked: number;
  /** Published but not acknowledged within the grace period after the run. */
  missing: number;
  ackLatency: Summary;
  publishLatency: Summary;
  failures: Record<string, number>;
  /**
   * CPU the measured process spent per acknowledged event over the run (its main thread, and all its threads),
   * in µs; null without a pid. Steadier than throughput on a shared machine: time the process is not given
   * a core does not count.
   */
  cpuPerEventUs: { main: number; total: number } | null;
}

/**
 * Open-loop publish at `rate`; publish→ack latency from the receiver's timestamps; CPU per event of process `pid`.
 * `prefix`: only pushes to receiver paths starting with it count (one connector among several fed the same events).
 */
export async function measureLatency(
  ctx: BenchContext,
  pool: Pool,
  make: (i: number) => Req,
  rate: number,
  durationMs: number,
  label: string,
  pid = 0,
  prefix?: string,
): Promise<LatencyFigures> {
  await ctx.receiver.record(true, prefix);
  const cpuBefore = cpuTimes(pid);
  const r = await openLoop(pool, { rate, durationMs, make, label, log: ctx.log });
  assertFound(r, 'publish');
  // Wait until every publish answered 2xx has been pushed, or the grace period is over.
  const deadline = nowMs() + ctx.settings.latencyGraceMs;
  const arrived = new Map<string, number>();
  for (;;) {
    const k = await ctx.receiver.takeKeys();
    for (let i = 0; i < k.keys.length; i++) if (!arrived.has(k.keys[i]!)) arrived.set(k.keys[i]!, k.times[i]!);
    let matched = 0;
    for (const key of r.sendTimes.keys()) if (arrived.has(key)) matched++;
    if (matched >= r.ok || nowMs() > deadline) break;
    await sleep(200);
  }
  const cpuAfter = cpuTimes(pid);
  await ctx.receiver.record(false);
  const lat: number[] = [];
  for (const [key, sent] of r.sendTimes) {
    const at = arrived.get(key);
    if (at !== undefined) lat.push(at - sent);
  }
  return {
    offeredPerSecond: rate,
    published: r.ok,
    acked: lat.length,
    missing: Math.max(0, r.ok - lat.length),
    ackLatency: summarize(lat),
    publishLatency: r.latency,
    failures: r.failures,
    cpuPerEventUs:
      cpuBefore && cpuAfter && lat.length > 0
        ? {
            main: round(((cpuAfter.mainMs - cpuBefore.mainMs) * 1000) / lat.length, 0),
            total: round(((cpuAfter.totalMs - cpuBefore.totalMs) * 1000) / lat.length, 0),
          }
        : null,
  };
}
