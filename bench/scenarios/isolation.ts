// Scenario 5, isolation: one healthy connector, measured alone and then beside 50 connectors whose endpoints
// accept a connection and never answer (not even the TLS handshake), under the same fixed offered load.
// The figure is the healthy connector's acknowledged events/s beside them as a ratio of its rate alone.
import { createConnectors, createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { measureLatency } from '../lib/measure.ts';
import { fmtInt, fmtMs, fmtPct, round } from '../lib/stats.ts';

export const isolation: Scenario = {
  name: 'isolation',
  title: 'Isolation: 1 healthy beside 50 silent',
  goal: '≥ 90 % of its rate alone',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const svc = await ctx.startService();
    try {
      const devices = await createDevices(svc, s.devices);
      await createConnectors(svc, [
        { url: ctx.receiver.url('/healthy'), signatureSecret: 'bench-signature-secret', displayName: 'healthy' },
      ]);
      const make = publishRequests(devices, svc.basicAuth);
      const seconds = s.isolationMs / 1000;

      ctx.log(`  healthy connector alone: ${s.isolationRate}/s for ${seconds} s`);
      const alone = await measureLatency(ctx, svc.pool, make, s.isolationRate, s.isolationMs, 'alone');
      const aloneRate = alone.acked / seconds;
      ctx.log(`  → ${fmtInt(aloneRate)} acknowledged/s, p99 ${fmtMs(alone.ackLatency.p99)}`);

      const ports = await ctx.receiver.silent(s.isolationSilent);
      ctx.log(`  adding ${s.isolationSilent} silent connectors`);
      await createConnectors(
        svc,
        ports.map((p, i) => ({
          url: `https://127.0.0.1:${p}/silent`,
          signatureSecret: 'bench-signature-secret',
          displayName: `silent ${i}`,
        })),
      );
      ctx.log(`  healthy beside silent: ${s.isolationRate}/s for ${seconds} s`);
      const beside = await measureLatency(ctx, svc.pool, make, s.isolationRate, s.isolationMs, 'beside');
      const besideRate = beside.acked / seconds;
      const silent = await ctx.receiver.silentStats();
      await ctx.receiver.closeSilent();
      const ratio = aloneRate > 0 ? besideRate / aloneRate : null;
      const p99 = (l: typeof alone) => (l.acked ? fmtMs(l.ackLatency.p99) : 'none acknowledged');
      ctx.log(
        `  → ${fmtInt(besideRate)} acknowledged/s, p99 ${p99(beside)}; silent endpoints got ${fmtInt(silent.accepted)} connections`,
      );
      out.figures = {
        offeredPerSecond: s.isolationRate,
        seconds,
        alone: { ackedPerSecond: round(aloneRate, 1), ...alone },
        besideSilent: { ackedPerSecond: round(besideRate, 1), ...beside },
        ratio: ratio === null ? null : round(ratio, 3),
        silentConnectionsAccepted: silent.accepted,
      };
      if (silent.accepted === 0)
        out.notes.push('the silent endpoints received no connection: the engine never tried them during the run');
      out.check(
        'healthy rate beside silent / alone',
        ratio === null ? null : round(ratio, 3),
        '≥ 0.90',
        ratio === null ? false : ratio >= 0.9,
      );
      out.headline =
        ratio === null ? 'no healthy deliveries alone' : `${fmtPct(ratio)} (p99 ${p99(alone)} → ${p99(beside)})`;
    } finally {
      await ctx.receiver.closeSilent().catch(() => {});
      await svc.dispose();
    }
  },
};
