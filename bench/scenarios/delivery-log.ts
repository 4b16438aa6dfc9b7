// The delivery log's cost and recovery speed (data-connectors.md, "Delivery log").
//
// `log`: end-to-end throughput with the log on against the same code with it off (SENSORCLOUD_DELIVERY_LOG_MAX=0),
// two services side by side, measured in alternating rounds of equal length so a slow phase of the machine falls
// on both. Goal: on ≥ 95 % of off. Six rounds of 10 s each: one round's ratio moved from 67 % to 115 % on a quiet
// machine (2026-11-29), three rounds' mean from 82 % to 97 % between runs. Also the main thread's CPU per delivered
// event of each service over all its rounds and the time between them (the on service's pruning runs while the off
// one is measured), from /proc: steadier than a rate on a shared machine.
//
// `replay`: a replay of 100,000 stored events to a connector whose receiver took them all once already, drained
// at ≥ 80 % of the connector's empty-queue rate measured just before; meanwhile live events of the same connector
// (100/s) keep being delivered (their publish→ack latency) and a device page keeps answering (its p99).
import { call, createConnectors, createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { closedLoop, openLoop } from '../lib/loadgen.ts';
import { assertFound, measureLatency, measureThroughput, waitForDeliveries } from '../lib/measure.ts';
import { cpuTimes } from '../lib/procs.ts';
import { fmtInt, fmtMs, fmtPct, nowMs, round, sleep } from '../lib/stats.ts';

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export const deliveryLog: Scenario = {
  name: 'log',
  title: 'Delivery log: end-to-end with the log on and off',
  goal: 'on ≥ 95 % of off, alternating rounds',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const on = await ctx.startService();
    const off = await ctx.startService({ SENSORCLOUD_DELIVERY_LOG_MAX: '0' });
    try {
      const setups = [];
      for (const [svc, path] of [
        [on, '/log-on'],
        [off, '/log-off'],
      ] as const) {
        const devices = await createDevices(svc, s.devices);
        await createConnectors(svc, [
          { url: ctx.receiver.url(path), signatureSecret: 'bench-signature-secret', displayName: path },
        ]);
        setups.push({ svc, make: publishRequests(devices, svc.basicAuth) });
      }
      const [a, b] = setups as [(typeof setups)[0], (typeof setups)[0]];
      ctx.log(`  warm-up: log on, then off, ${s.warmupMs / 1000} s each (not counted)`);
      await measureThroughput(ctx, a.svc.pool, a.make, { durationMs: s.warmupMs, label: 'on warm-up' });
      await measureThroughput(ctx, b.svc.pool, b.make, { durationMs: s.warmupMs, label: 'off warm-up' });
      const roundCount = s.quick ? 1 : 6;
      const roundMs = s.quick ? s.throughputMs : 10_000;
      const rounds: Array<{ on: number; off: number }> = [];
      const delivered = { on: 0, off: 0 };
      const cpuAtStart = { on: cpuTimes(a.svc.pid), off: cpuTimes(b.svc.pid) };
      for (let i = 1; i <= roundCount; i++) {
        // Which goes first alternates too: neither always follows the other's drain.
        const first = i % 2 === 1 ? 'on' : 'off';
        const r: { on: number; off: number } = { on: 0, off: 0 };
        for (const which of first === 'on' ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
          const x = which === 'on' ? a : b;
          const t = await measureThroughput(ctx, x.svc.pool, x.make, {
            durationMs: roundMs,
            label: `log ${which} ${i}`,
          });
          r[which] = t.deliveredPerSecond;
          delivered[which] += t.delivered;
        }
        rounds.push(r);
        ctx.log(
          `  round ${i}: log on ${fmtInt(r.on)} delivered/s, off ${fmtInt(r.off)} delivered/s (${fmtPct(r.on / r.off)})`,
        );
      }
      const onRate = mean(rounds.map((r) => r.on));
      const offRate = mean(rounds.map((r) => r.off));
      const ratio = offRate > 0 ? onRate / offRate : null;
      /** Main-thread CPU per delivered event since the first round, µs; null without /proc. */
      const cpuPerEvent = (which: 'on' | 'off') => {
        const start = cpuAtStart[which];
        const end = cpuTimes((which === 'on' ? a : b).svc.pid);
        return start && end && delivered[which] > 0
          ? round(((end.mainMs - start.mainMs) * 1000) / delivered[which], 1)
          : null;
      };
      const cpu = { on: cpuPerEvent('on'), off: cpuPerEvent('off') };
      if (cpu.on !== null && cpu.off !== null)
        ctx.log(
          `  main thread per delivered event: log on ${cpu.on} µs, off ${cpu.off} µs (${fmtPct(cpu.on / cpu.off)} of off)`,
        );
      out.figures.throughput = { onPerSecond: round(onRate, 1), offPerSecond: round(offRate, 1), rounds };
      out.figures.mainThreadMicrosPerEvent = cpu;
      out.check(
        'log on / log off (alternating rounds)',
        ratio === null ? null : round(ratio, 3),
        '≥ 0.95',
        ratio === null ? null : ratio >= 0.95,
      );
      out.headline = `${fmtInt(onRate)} ev/s with the log, ${fmtInt(offRate)} without${ratio === null ? '' : ` (${fmtPct(ratio)})`}`;
    } finally {
      await on.dispose();
      await off.dispose();
    }
  },
};

export const replay: Scenario = {
  name: 'replay',
  title: 'Replay: 100,000 stored events to one connector',
  goal: 'drain ≥ 80 % of the empty-queue rate; live events and the device page keep answering',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const total = s.quick ? 10_000 : 100_000;
    const svc = await ctx.startService({ SENSORCLOUD_REPLAY_MAX_EVENTS: String(total * 2) });
    try {
      const devices = await createDevices(svc, s.devices);
      const [connector] = await createConnectors(svc, [
        { url: ctx.receiver.url('/replay'), signatureSecret: 'bench-signature-secret', displayName: 'replay' },
      ]);
      const make = publishRequests(devices, svc.basicAuth);
      const windowStart = new Date(Date.now() - 1000).toISOString();

      ctx.log(`  empty-queue rate: ${s.concurrency} concurrent, ${s.backlogRateMs / 1000} s`);
      const empty = await measureThroughput(ctx, svc.pool, make, { durationMs: s.backlogRateMs, label: 'empty queue' });
      ctx.log(`  → ${fmtInt(empty.deliveredPerSecond)} delivered/s`);
      out.figures.emptyQueue = { deliveredPerSecond: empty.deliveredPerSecond, published: empty.published };

      const more = Math.max(0, total - empty.published);
      if (more > 0) {
        ctx.log(`  publishing ${fmtInt(more)} more events (history of ${fmtInt(total)})`);
        await ctx.receiver.reset();
        const r = await closedLoop(svc.pool, {
          concurrency: s.concurrency,
          durationMs: 300_000,
          maxCount: more,
          make,
          label: 'history',
          log: ctx.log,
        });
        assertFound(r, 'publish');
        await waitForDeliveries(ctx, r.ok, 120_000);
      }
      await sleep(1000);
      const windowEnd = new Date().toISOString();

      await ctx.receiver.reset();
      const t0 = nowMs();
      const asked = call<{ replayedCount: number }>(svc.pool, svc.basicAuth, 'POST', `/v2/${connector}:replay`, {
        startTime: windowStart,
        endTime: windowEnd,
      });
      // While the replay is enqueued and drained: a device page every 50 ms, and live events at 100/s.
      const pageReq = {
        method: 'GET' as const,
        path: `/v2/${svc.project}/devices?pageSize=100`,
        headers: { authorization: svc.basicAuth },
      };
      const drainBudgetMs = s.quick ? 30_000 : 120_000;
      const probeMs = s.quick ? 8_000 : 20_000;
      const pages = openLoop(svc.pool, { rate: 20, durationMs: probeMs, make: () => pageReq, label: 'device page' });
      const live = measureLatency(ctx, svc.pool, make, 100, probeMs, 'live@100', svc.pid);
      const { replayedCount } = await asked;
      const answeredMs = nowMs() - t0;
      ctx.log(`  → replay answered in ${(answeredMs / 1000).toFixed(1)} s: ${fmtInt(replayedCount)} events`);
      const [p, l] = await Promise.all([pages, live]);
      const d = await waitForDeliveries(ctx, replayedCount + l.published, drainBudgetMs);
      const st = await ctx.receiver.stats();
      const drainSeconds = st.first !== null && st.last !== null ? (st.last - t0) / 1000 : null;
      const drainRate = drainSeconds ? (replayedCount + l.published) / drainSeconds : 0;
      const ratio = empty.deliveredPerSecond > 0 ? drainRate / empty.deliveredPerSecond : null;
      out.figures.replay = {
        replayedCount,
        answeredMs: round(answeredMs, 0),
        drained: d.drained,
        drainSeconds: drainSeconds === null ? null : round(drainSeconds, 1),
        drainPerSecond: round(drainRate, 1),
        devicePage: p.latency,
        devicePageFailures: p.failures,
        live: { published: l.published, acked: l.acked, missing: l.missing, ackLatency: l.ackLatency },
      };
      ctx.log(
        `  → drained ${fmtInt(replayedCount)} replayed + ${fmtInt(l.published)} live in ${drainSeconds?.toFixed(1)} s: ${fmtInt(drainRate)}/s${ratio === null ? '' : ` (${fmtPct(ratio)} of empty)`}`,
      );
      ctx.log(
        `  → during it: device page p99 ${fmtMs(p.latency.p99)} (${p.ok} answered), live events p50 ${fmtMs(l.ackLatency.p50)} p99 ${fmtMs(l.ackLatency.p99)}, ${l.missing} not acknowledged in time`,
      );
      out.check(
        'replay drain / empty-queue rate',
        ratio === null ? null : round(ratio, 3),
        '≥ 0.80',
        ratio === null ? null : ratio >= 0.8,
      );
      out.check(
        'live events acknowledged during the replay',
        l.acked,
        `all ${l.published}`,
        l.published > 0 && l.missing === 0,
      );
      out.headline = `${fmtInt(drainRate)}/s replay drain${ratio === null ? '' : ` (${fmtPct(ratio)} of empty)`}, live p99 ${fmtMs(l.ackLatency.p99)}, page p99 ${fmtMs(p.latency.p99)}`;
    } finally {
      await svc.dispose();
    }
  },
};
