// Scenario 4, fan-out: one project with 100 connectors, all pointing at the receiver (distinct paths). A burst of
// publishes is queued as fast as the service takes it; the figure is pushes acknowledged per second from the
// first to the last arrival (bounded in time).
import { createConnectors, createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { closedLoop } from '../lib/loadgen.ts';
import { assertFound, waitForDeliveries } from '../lib/measure.ts';
import { fmtInt, fmtPct, round } from '../lib/stats.ts';

export const fanOut: Scenario = {
  name: 'fanout',
  title: 'Fan-out: 100 connectors',
  goal: null,
  needsCeiling: true,
  async run(ctx, out) {
    const s = ctx.settings;
    const svc = await ctx.startService();
    try {
      const devices = await createDevices(svc, s.devices);
      ctx.log(`  creating ${s.fanoutConnectors} connectors`);
      await createConnectors(
        svc,
        Array.from({ length: s.fanoutConnectors }, (_, i) => ({
          url: ctx.receiver.url(`/f/${i}`),
          signatureSecret: 'bench-signature-secret',
        })),
      );
      await ctx.receiver.reset();
      ctx.log(`  publishing ${s.fanoutEvents} events (${fmtInt(s.fanoutEvents * s.fanoutConnectors)} pushes)`);
      const r = await closedLoop(svc.pool, {
        concurrency: s.concurrency,
        durationMs: s.fanoutTimeoutMs / 3,
        maxCount: s.fanoutEvents,
        make: publishRequests(devices, svc.basicAuth),
        label: 'fan-out publish',
        log: ctx.log,
      });
      assertFound(r, 'publish');
      const expected = r.ok * s.fanoutConnectors;
      const d = await waitForDeliveries(ctx, expected, s.fanoutTimeoutMs);
      const st = await ctx.receiver.stats();
      const spanMs = st.first !== null && st.last !== null && st.last > st.first ? st.last - st.first : 0;
      const rate = spanMs > 0 ? st.total / (spanMs / 1000) : 0;
      const ratio = ctx.ceiling.throughput ? rate / ctx.ceiling.throughput : null;
      out.ratioToCeiling = ratio === null ? null : round(ratio, 3);
      out.figures = {
        deliveriesPerSecond: round(rate, 1),
        published: r.ok,
        publishedPerSecond: round(r.okPerSecond, 1),
        expectedDeliveries: expected,
        delivered: st.total,
        drained: d.drained,
        connectorsSeen: st.distinctPaths,
        firstPushAfterMs: st.first !== null ? round(st.first - r.startMs, 0) : null,
        publishLatency: r.latency,
        failures: r.failures,
      };
      if (!d.drained)
        out.notes.push(
          `not drained within ${s.fanoutTimeoutMs / 1000} s: ${st.total} of ${expected} pushes; rate is over what arrived`,
        );
      if (st.distinctPaths < s.fanoutConnectors)
        out.notes.push(`only ${st.distinctPaths} of ${s.fanoutConnectors} connectors received pushes`);
      out.headline = `${fmtInt(rate)} pushes/s${ratio === null ? '' : ` (${fmtPct(ratio)} of ceiling)`}`;
      ctx.log(
        `  → ${fmtInt(rate)} pushes/s, ${fmtInt(st.total)} of ${fmtInt(expected)} delivered to ${st.distinctPaths} connectors`,
      );
    } finally {
      await svc.dispose();
    }
  },
};
