// Scenario 2, end-to-end: publish through the service to one signed connector pointing at the receiver.
// Maximum sustained throughput (pushes acknowledged per second while the closed-loop load runs), then
// publish→acknowledgement latency at fixed offered rates.
import { createConnectors, createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { measureLatency, measureThroughput } from '../lib/measure.ts';
import { fmtInt, fmtMs, fmtPct, round } from '../lib/stats.ts';

export const endToEnd: Scenario = {
  name: 'e2e',
  title: 'End-to-end: publish → signed push',
  goal: '≥ 60 % of the ceiling; p99 ≤ 20 ms at 1,000 events/s',
  needsCeiling: true,
  async run(ctx, out) {
    const s = ctx.settings;
    const svc = await ctx.startService();
    try {
      const devices = await createDevices(svc, s.devices);
      await createConnectors(svc, [{ url: ctx.receiver.url('/e2e'), signatureSecret: 'bench-signature-secret', displayName: 'e2e' }]);
      const make = publishRequests(devices, svc.basicAuth);

      ctx.log(`  max throughput, ${s.concurrency} concurrent, ${s.throughputMs / 1000} s`);
      const t = await measureThroughput(ctx, svc.pool, make, { durationMs: s.throughputMs, label: 'e2e' });
      const stats = await ctx.receiver.stats();
      out.figures.throughput = { ...t, signedPushes: stats.signed };
      if (stats.signed < stats.total) out.notes.push(`${stats.total - stats.signed} of ${stats.total} pushes carried no X-Service-Signature`);
      const ratio = ctx.ceiling.throughput ? t.deliveredPerSecond / ctx.ceiling.throughput : null;
      out.ratioToCeiling = ratio === null ? null : round(ratio, 3);
      out.check('throughput / ceiling', out.ratioToCeiling, '≥ 0.60', ratio === null ? null : ratio >= 0.6);
      ctx.log(`  → ${fmtInt(t.deliveredPerSecond)} delivered/s (${fmtInt(t.publishedPerSecond)} published/s)${ratio === null ? '' : `, ${fmtPct(ratio)} of the ceiling`}`);
      out.headline = `${fmtInt(t.deliveredPerSecond)} ev/s${ratio === null ? '' : ` (${fmtPct(ratio)} of ceiling)`}`;

      if (t.drainedAfterMs === null) out.notes.push(`the queue had not drained ${s.drainTimeoutMs / 1000} s after the throughput run; the latency runs include that backlog`);
      const latency: Record<string, unknown> = {};
      for (const rate of s.latencyRates) {
        ctx.log(`  latency at ${rate}/s for ${s.latencyMs / 1000} s`);
        const l = await measureLatency(ctx, svc.pool, make, rate, s.latencyMs, `e2e@${rate}`, svc.pid);
        latency[String(rate)] = l;
        const cpu = l.cpuPerEventUs ? `, CPU ${l.cpuPerEventUs.total} µs/event (main thread ${l.cpuPerEventUs.main})` : '';
        ctx.log(`  → p50 ${fmtMs(l.ackLatency.p50)}, p99 ${fmtMs(l.ackLatency.p99)}, max ${fmtMs(l.ackLatency.max)}${l.missing ? `, ${l.missing} not acknowledged in time` : ''}${cpu}`);
        if (rate === 1000) {
          const ok = l.acked > 0 && l.missing === 0 && l.ackLatency.p99 <= 20;
          out.check('p99 publish→ack at 1,000/s (ms)', l.ackLatency.p99, '≤ 20 ms, none missing', l.acked > 0 ? ok : false);
          out.headline += `, p99 ${fmtMs(l.ackLatency.p99)} @1k/s`;
        }
      }
      out.figures.latency = latency;
    } finally {
      await svc.dispose();
    }
  },
};
