// Scenario 2, end-to-end: publish through the service to one signed connector pointing at the receiver.
// Maximum sustained throughput (pushes acknowledged per second while the closed-loop load runs), then
// publish→acknowledgement latency at fixed offered rates.
//
// The throughput goal is a ratio to the bare relay. This machine's speed drifts by up to ±30 % over minutes
// (docs/benchmarks.md: identical code measured 43-67 % of a ceiling taken a minute earlier), so the relay and
// the service run in alternating rounds of equal length, and the ratio is the service's mean rate over the
// relay's: a slow or fast phase of the machine falls on both.
import { createConnectors, createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { measureLatency, measureThroughput, type ThroughputFigures } from '../lib/measure.ts';
import { fmtInt, fmtMs, fmtPct, round } from '../lib/stats.ts';
import { startRelay } from './ceiling.ts';

export const endToEnd: Scenario = {
  name: 'e2e',
  title: 'End-to-end: publish → signed push',
  goal: '≥ 60 % of the bare relay run beside it; p99 ≤ 20 ms at 1,000 events/s',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const svc = await ctx.startService();
    try {
      const devices = await createDevices(svc, s.devices);
      await createConnectors(svc, [
        { url: ctx.receiver.url('/e2e'), signatureSecret: 'bench-signature-secret', displayName: 'e2e' },
      ]);
      const make = publishRequests(devices, svc.basicAuth);

      const roundCount = s.quick ? 1 : 3;
      const roundMs = Math.round(s.throughputMs / roundCount);
      const rounds: Array<{ relay: ThroughputFigures; service: ThroughputFigures }> = [];
      let unsigned = 0;
      const relay = await startRelay(ctx);
      try {
        // Both run once before the rounds, uncounted, so that neither is measured while its code is still cold.
        ctx.log(`  warm-up: relay, then the service, ${s.warmupMs / 1000} s each (not counted)`);
        await measureThroughput(ctx, relay.pool, relay.make, { durationMs: s.warmupMs, label: 'relay warm-up' });
        await measureThroughput(ctx, svc.pool, make, { durationMs: s.warmupMs, label: 'e2e warm-up' });
        for (let i = 1; i <= roundCount; i++) {
          ctx.log(
            `  round ${i} of ${roundCount}: max throughput of the relay, then of the service, ${s.concurrency} concurrent, ${roundMs / 1000} s each`,
          );
          const r = await measureThroughput(ctx, relay.pool, relay.make, { durationMs: roundMs, label: `relay ${i}` });
          const t = await measureThroughput(ctx, svc.pool, make, { durationMs: roundMs, label: `e2e ${i}` });
          const stats = await ctx.receiver.stats();
          unsigned += stats.total - stats.signed;
          rounds.push({ relay: r, service: t });
          ctx.log(
            `  → relay ${fmtInt(r.deliveredPerSecond)} forwards/s; service ${fmtInt(t.deliveredPerSecond)} delivered/s (${fmtInt(t.publishedPerSecond)} published/s), ${fmtPct(t.deliveredPerSecond / r.deliveredPerSecond)}`,
          );
        }
      } finally {
        await relay.stop();
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const relayRate = mean(rounds.map((r) => r.relay.deliveredPerSecond));
      const serviceRate = mean(rounds.map((r) => r.service.deliveredPerSecond));
      const ratio = relayRate > 0 ? serviceRate / relayRate : null;
      const t = rounds[rounds.length - 1]!.service;
      out.figures.throughput = {
        deliveredPerSecond: round(serviceRate, 1),
        relayPerSecond: round(relayRate, 1),
        rounds,
      };
      if (unsigned > 0) out.notes.push(`${unsigned} pushes carried no X-Service-Signature`);
      // For comparison with the other scenarios' ratios; the goal is checked against the relay beside it.
      out.ratioToCeiling = ctx.ceiling.throughput ? round(serviceRate / ctx.ceiling.throughput, 3) : null;
      out.check(
        'throughput / relay (alternating rounds)',
        ratio === null ? null : round(ratio, 3),
        '≥ 0.60',
        ratio === null ? null : ratio >= 0.6,
      );
      const perRound = rounds.map((r) => fmtPct(r.service.deliveredPerSecond / r.relay.deliveredPerSecond)).join(', ');
      ctx.log(
        `  → ${fmtInt(serviceRate)} delivered/s against the relay's ${fmtInt(relayRate)} forwards/s${ratio === null ? '' : `: ${fmtPct(ratio)} (rounds: ${perRound})`}`,
      );
      out.headline = `${fmtInt(serviceRate)} ev/s${ratio === null ? '' : ` (${fmtPct(ratio)} of the relay beside it)`}`;
      out.notes.push(
        `throughput in ${roundCount} alternating rounds of ${roundMs / 1000} s, relay then service: relay ${rounds.map((r) => fmtInt(r.relay.deliveredPerSecond)).join(' / ')}, service ${rounds.map((r) => fmtInt(r.service.deliveredPerSecond)).join(' / ')} per second`,
      );

      if (t.drainedAfterMs === null)
        out.notes.push(
          `the queue had not drained ${s.drainTimeoutMs / 1000} s after the throughput run; the latency runs include that backlog`,
        );
      const latency: Record<string, unknown> = {};
      for (const rate of s.latencyRates) {
        ctx.log(`  latency at ${rate}/s for ${s.latencyMs / 1000} s`);
        const l = await measureLatency(ctx, svc.pool, make, rate, s.latencyMs, `e2e@${rate}`, svc.pid);
        latency[String(rate)] = l;
        const cpu = l.cpuPerEventUs
          ? `, CPU ${l.cpuPerEventUs.total} µs/event (main thread ${l.cpuPerEventUs.main})`
          : '';
        ctx.log(
          `  → p50 ${fmtMs(l.ackLatency.p50)}, p99 ${fmtMs(l.ackLatency.p99)}, max ${fmtMs(l.ackLatency.max)}${l.missing ? `, ${l.missing} not acknowledged in time` : ''}${cpu}`,
        );
        if (rate === 1000) {
          const ok = l.acked > 0 && l.missing === 0 && l.ackLatency.p99 <= 20;
          out.check(
            'p99 publish→ack at 1,000/s (ms)',
            l.ackLatency.p99,
            '≤ 20 ms, none missing',
            l.acked > 0 ? ok : false,
          );
          out.headline += `, p99 ${fmtMs(l.ackLatency.p99)} @1k/s`;
        }
      }
      out.figures.latency = latency;
    } finally {
      await svc.dispose();
    }
  },
};
