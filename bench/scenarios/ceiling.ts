// Scenario 1, the ceiling: the bare relay (bench/lib/relay.ts) under the same load generator, receiver and
// concurrency as the service. Every other throughput is reported as a ratio to this one; the end-to-end goal is
// checked against rounds of the relay run alternately with the service (startRelay, end-to-end.ts).
import { Pool } from 'undici';
import { HelperProcess } from '../lib/procs.ts';
import { measureLatency, measureThroughput } from '../lib/measure.ts';
import { publishRequests } from '../lib/api.ts';
import type { BenchContext, Scenario } from '../lib/context.ts';
import type { Req } from '../lib/loadgen.ts';
import { fmtInt, fmtMs } from '../lib/stats.ts';

export interface RelayHandle {
  pid: number;
  pool: Pool;
  make: (i: number) => Req;
  stop(): Promise<void>;
}

/** Starts the relay process with a pool at the run's concurrency and publish requests spread like the service's. */
export async function startRelay(ctx: BenchContext): Promise<RelayHandle> {
  const s = ctx.settings;
  const relay = await HelperProcess.start<{ port: number }>('relay.ts', [ctx.receiver.url('/relay'), ctx.tls.caFile]);
  const pool = new Pool(`http://127.0.0.1:${relay.ready.port}`, {
    connections: s.concurrency,
    pipelining: 1,
    keepAliveTimeout: 30_000,
  });
  const devices = Array.from({ length: s.devices }, (_, i) => `projects/relay/devices/relay${i}`);
  return {
    pid: relay.pid,
    pool,
    make: publishRequests(devices, null),
    async stop() {
      await pool.destroy().catch(() => {});
      await relay.stop();
    },
  };
}

export const ceiling: Scenario = {
  name: 'ceiling',
  title: 'Ceiling: bare relay',
  goal: null,
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const relay = await startRelay(ctx);
    try {
      ctx.log(`  max throughput, ${s.concurrency} concurrent, ${s.throughputMs / 1000} s`);
      const t = await measureThroughput(ctx, relay.pool, relay.make, { durationMs: s.throughputMs, label: 'relay' });
      ctx.ceiling.throughput = t.deliveredPerSecond;
      out.figures.throughput = t;
      out.headline = `${fmtInt(t.deliveredPerSecond)} forwards/s`;
      ctx.log(`  → ${fmtInt(t.deliveredPerSecond)} forwards/s`);
      const latency: Record<string, unknown> = {};
      for (const rate of s.latencyRates) {
        ctx.log(`  latency at ${rate}/s for ${s.latencyMs / 1000} s`);
        const l = await measureLatency(ctx, relay.pool, relay.make, rate, s.latencyMs, `relay@${rate}`, relay.pid);
        latency[String(rate)] = l;
        ctx.log(
          `  → p50 ${fmtMs(l.ackLatency.p50)}, p99 ${fmtMs(l.ackLatency.p99)}, max ${fmtMs(l.ackLatency.max)}${l.missing ? `, ${l.missing} missing` : ''}${l.cpuPerEventUs ? `, CPU ${l.cpuPerEventUs.total} µs/event (main thread ${l.cpuPerEventUs.main})` : ''}`,
        );
      }
      out.figures.latency = latency;
    } finally {
      await relay.stop();
    }
  },
};
