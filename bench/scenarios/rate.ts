// Rate pacing (extensions §X4, deliveryConfig.maxRate): a connector paced at 100 attempts/s beside one without
// limits in the same project, both fed every event, under a steady 400 events/s for 10 s (more than the paced one
// may take: the rest waits in its queue).
//
// The paced connector's rate is read from the arrival times at its receiver path, from its first push until its
// queue has drained (bounded in time): the median and the most of its one-second windows, and the most arrivals in
// any sliding one-second window. Arrivals are attempt starts plus the push's travel, so a slow push followed by
// quick ones can put more in a window than the engine started in it. The extension bounds the attempts that *start*
// in any one second (⌈maxRate⌉ + 1), so that bound is checked on the attempt start times the service wrote in its
// delivery log (extensions §X1, on its clock), read after the run (bounded in time); the arrivals' figure is
// reported beside it.
//
// "A connector's limits never slow another connector": the unlimited connector's acknowledged events/s and p99 at
// the same offered load, alone and beside the paced one, in one service, alternating (alone, beside, alone), so a
// drift of the machine falls on both; the paced connector is created for its round and deleted once its queue has
// drained.
import { ApiFailure, call, createConnectors, createDevices, publishRequests, Skip } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import type { ServiceProcess } from '../lib/service.ts';
import { measureLatency, type LatencyFigures } from '../lib/measure.ts';
import { fmtInt, fmtMs, fmtPct, nowMs, round, sleep, summarize } from '../lib/stats.ts';

const MAX_RATE = 100;
/** Offered events/s: 4× the paced connector's rate. */
const OFFERED = 400;
const PACED = '/rate/paced';
const FREE = '/rate/free';

/** The rate figures of ascending times (ms) of one connector's attempts (arrivals, or starts). */
export interface RateFigures {
  count: number;
  /** Median, least and most of the whole one-second windows from the first time on; null without a whole one. */
  windowMedian: number | null;
  windowMin: number | null;
  windowMax: number | null;
  /** The most in any one-second window [t, t + 1000 ms); null without any time. */
  slidingMax: number | null;
  /** Per second from the first to the last. */
  meanRate: number | null;
  /** Counts of the whole one-second windows (a last partial one is left out). */
  windows: number[];
}

export function rateFigures(times: number[]): RateFigures {
  const n = times.length;
  const none = { count: n, windowMedian: null, windowMin: null, windowMax: null, meanRate: null, windows: [] };
  if (n === 0) return { ...none, slidingMax: null };
  // A window holding the most can be moved to start at one of the times.
  let slidingMax = 0;
  let j = 0;
  for (let i = 0; i < n; i++) {
    while (j < n && times[j]! < times[i]! + 1000) j++;
    slidingMax = Math.max(slidingMax, j - i);
  }
  const first = times[0]!;
  const span = (times[n - 1]! - first) / 1000;
  const whole = Math.floor(span);
  if (whole === 0) return { ...none, slidingMax };
  const windows = new Array<number>(whole).fill(0);
  for (const t of times) {
    const k = Math.floor((t - first) / 1000);
    if (k < whole) windows[k]!++;
  }
  return {
    count: n,
    windowMedian: summarize(windows).p50,
    windowMin: Math.min(...windows),
    windowMax: Math.max(...windows),
    slidingMax,
    meanRate: round((n - 1) / span, 2),
    windows,
  };
}

interface PacedFigures {
  maxRate: number;
  published: number;
  arrived: number;
  drained: boolean;
  drainWaitedSeconds: number;
  /** From the arrival times at its receiver path: the median is checked on them. */
  atReceiver: RateFigures;
  /** From the attempt start times in the service's delivery log (its clock): the sliding bound is checked on them. */
  loggedStarts: (Omit<RateFigures, 'windows'> & { deliveries: number; read: number; complete: boolean }) | null;
}

const describe = (f: RateFigures): string =>
  `one-second windows median ${f.windowMedian}, min ${f.windowMin}, max ${f.windowMax}; sliding max ${f.slidingMax}; mean ${f.meanRate}/s`;

/** Micros-precise RFC 3339 (the service's format) → ms since the epoch. */
const parseTimeMs = (t: string): number =>
  Date.parse(`${t.slice(0, 19)}Z`) + Number(`0.${t.slice(20, -1) || '0'}`) * 1000;

/**
 * The start times (ms, ascending) of every attempt the delivery log holds for `connector`: its list, then each
 * delivery read alone (the list has no attempts), 16 at a time, at most `max` deliveries and `budgetMs`.
 */
async function loggedStarts(
  svc: ServiceProcess,
  connector: string,
  max: number,
  budgetMs: number,
): Promise<{ times: number[]; deliveries: number; read: number; complete: boolean }> {
  const deadline = nowMs() + budgetMs;
  const names: string[] = [];
  let token = '';
  for (let page = 0; page < 100 && names.length < max && nowMs() < deadline; page++) {
    const q = `pageSize=1000${token ? `&pageToken=${encodeURIComponent(token)}` : ''}`;
    const r = await call<{ deliveries: Array<{ name: string }>; nextPageToken: string }>(
      svc.pool,
      svc.basicAuth,
      'GET',
      `/v2/${connector}/deliveries?${q}`,
    );
    names.push(...r.deliveries.map((d) => d.name));
    token = r.nextPageToken;
    if (!token) break;
  }
  const times: number[] = [];
  let next = 0;
  let read = 0;
  const worker = async () => {
    while (next < Math.min(names.length, max) && nowMs() < deadline) {
      const name = names[next++]!;
      const d = await call<{ attempts: Array<{ attemptTime: string }> }>(svc.pool, svc.basicAuth, 'GET', `/v2/${name}`);
      for (const a of d.attempts) times.push(parseTimeMs(a.attemptTime));
      read++;
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  times.sort((a, b) => a - b);
  return { times, deliveries: names.length, read, complete: read === names.length && names.length >= max };
}

export const rate: Scenario = {
  name: 'rate',
  title: 'Rate: a connector paced at 100/s beside an unlimited one',
  goal: 'paced 100 ± 5 /s (median second), ≤ 101 in any 1 s, all delivered; unlimited ≥ 90 % of its rate alone',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const roundMs = s.quick ? 3_000 : 10_000;
    const seconds = roundMs / 1000;
    const svc = await ctx.startService();
    try {
      const devices = await createDevices(svc, s.devices);
      await createConnectors(svc, [
        { url: ctx.receiver.url(FREE), signatureSecret: 'bench-signature-secret', displayName: 'unlimited' },
      ]);
      const make = publishRequests(devices, svc.basicAuth);

      ctx.log(`  warm-up: unlimited connector alone, ${OFFERED}/s for ${s.warmupMs / 1000} s (not counted)`);
      await ctx.receiver.reset();
      await measureLatency(ctx, svc.pool, make, OFFERED, s.warmupMs, 'warm-up', 0, FREE);

      const alone: LatencyFigures[] = [];
      let beside: LatencyFigures | null = null;
      let paced: PacedFigures | null = null;
      let pacedArrivals: number[] = [];
      let pacedPublished = 0;
      let pacedDrained = false;
      let freeBesideCount = 0;
      for (const [i, variant] of (['alone', 'beside', 'alone'] as const).entries()) {
        await ctx.receiver.reset();
        let connector: string | null = null;
        if (variant === 'beside') {
          [connector] = await createConnectors(svc, [
            {
              url: ctx.receiver.url(PACED),
              signatureSecret: 'bench-signature-secret',
              displayName: `paced ${MAX_RATE}/s`,
              deliveryConfig: { maxRate: MAX_RATE },
            },
          ]);
          const got = await call<{ deliveryConfig?: { maxRate?: number } }>(
            svc.pool,
            svc.basicAuth,
            'GET',
            `/v2/${connector}`,
          );
          if (got.deliveryConfig?.maxRate !== MAX_RATE)
            throw new Skip(`the connector reads back deliveryConfig ${JSON.stringify(got.deliveryConfig ?? null)}`);
        }
        const label = variant === 'alone' ? `alone ${i === 0 ? 1 : 2}` : `beside paced`;
        ctx.log(
          `  round ${i + 1}, unlimited ${variant === 'alone' ? 'alone' : 'beside the paced one'}: ${OFFERED}/s for ${seconds} s`,
        );
        const l = await measureLatency(ctx, svc.pool, make, OFFERED, roundMs, label, 0, FREE);
        ctx.log(
          `  → unlimited ${fmtInt(l.acked / seconds)} acknowledged/s, p99 ${fmtMs(l.ackLatency.p99)}, ${l.missing} missing`,
        );
        if (variant === 'alone') {
          alone.push(l);
          continue;
        }
        beside = l;
        pacedPublished = l.published;
        // Its queue drains at the paced rate; wait for it, with room for a pace somewhat below the rate.
        const left = Math.max(0, pacedPublished - ((await ctx.receiver.stats()).byPath[PACED] ?? 0));
        const budgetMs = (left / MAX_RATE) * 1.5 * 1000 + 5_000;
        ctx.log(
          `  waiting for the paced queue: ${fmtInt(left)} of ${fmtInt(pacedPublished)} left (at most ${(budgetMs / 1000).toFixed(0)} s)`,
        );
        const t0 = nowMs();
        let lastLog = t0;
        let arrived = 0;
        for (;;) {
          arrived = (await ctx.receiver.stats()).byPath[PACED] ?? 0;
          if (arrived >= pacedPublished) {
            pacedDrained = true;
            break;
          }
          if (nowMs() - t0 > budgetMs) break;
          if (nowMs() - lastLog >= 5_000) {
            lastLog = nowMs();
            ctx.log(
              `    paced ${((lastLog - t0) / 1000).toFixed(0)} s: ${fmtInt(arrived)} of ${fmtInt(pacedPublished)}`,
            );
          }
          await sleep(250);
        }
        // A second more: a duplicate push would show as more arrivals than events.
        await sleep(1_000);
        const st = await ctx.receiver.stats();
        freeBesideCount = st.byPath[FREE] ?? 0;
        pacedArrivals = await ctx.receiver.times(PACED);
        const atReceiver = rateFigures(pacedArrivals);
        ctx.log(
          `  → paced: ${fmtInt(pacedArrivals.length)} of ${fmtInt(pacedPublished)} arrived; ${describe(atReceiver)}`,
        );
        let loggedStartFigures: PacedFigures['loggedStarts'] = null;
        try {
          const logged = await loggedStarts(svc, connector!, pacedPublished, s.quick ? 10_000 : 20_000);
          const { windows: _, ...g } = rateFigures(logged.times);
          loggedStartFigures = { deliveries: logged.deliveries, read: logged.read, complete: logged.complete, ...g };
          ctx.log(
            `  → paced starts in the delivery log (${fmtInt(logged.read)} of ${fmtInt(logged.deliveries)} deliveries read): ${describe({ ...g, windows: [] })}`,
          );
        } catch (err) {
          if (!(err instanceof ApiFailure || err instanceof Skip)) throw err;
          out.notes.push(`the paced connector's attempt times could not be read from the delivery log: ${err.message}`);
        }
        paced = {
          maxRate: MAX_RATE,
          published: pacedPublished,
          arrived: pacedArrivals.length,
          drained: pacedDrained,
          drainWaitedSeconds: round((nowMs() - t0) / 1000, 1),
          atReceiver,
          loggedStarts: loggedStartFigures,
        };
        try {
          await call(svc.pool, svc.basicAuth, 'DELETE', `/v2/${connector}`);
        } catch (err) {
          if (!(err instanceof ApiFailure || err instanceof Skip)) throw err;
          out.notes.push(`the paced connector could not be deleted (${err.message}); the last round ran beside it`);
        }
      }

      const rateOf = (l: LatencyFigures) => l.acked / seconds;
      const aloneRate = alone.reduce((a, l) => a + rateOf(l), 0) / Math.max(1, alone.length);
      const besideRate = beside ? rateOf(beside) : 0;
      const ratio = aloneRate > 0 && beside ? besideRate / aloneRate : null;
      out.figures = {
        offeredPerSecond: OFFERED,
        seconds,
        paced,
        unlimited: {
          alone: alone.map((l) => ({ ackedPerSecond: round(rateOf(l), 1), ...l })),
          beside: beside ? { ackedPerSecond: round(besideRate, 1), ...beside, pushesArrived: freeBesideCount } : null,
          aloneAckedPerSecond: round(aloneRate, 1),
          p99: { alone: alone.map((l) => l.ackLatency.p99), beside: beside?.ackLatency.p99 ?? null },
          ratio: ratio === null ? null : round(ratio, 3),
        },
      };

      const median = paced?.atReceiver.windowMedian ?? null;
      const sliding = paced?.loggedStarts?.slidingMax ?? null;
      out.check(
        'paced connector: median one-second window (attempts)',
        median,
        `${MAX_RATE} ± 5`,
        median === null ? false : Math.abs(median - MAX_RATE) <= 5,
      );
      out.check(
        'paced connector: most attempt starts in any sliding one-second window (delivery log)',
        sliding,
        `≤ ${MAX_RATE + 1}`,
        sliding === null ? false : sliding <= MAX_RATE + 1,
      );
      out.check(
        'paced connector: events delivered once the queue drained',
        pacedArrivals.length,
        `all ${pacedPublished}`,
        pacedPublished > 0 && pacedArrivals.length === pacedPublished,
      );
      out.check(
        'unlimited connector beside the paced one: events delivered in the end',
        beside ? freeBesideCount : null,
        `all ${beside?.published ?? 0}`,
        beside !== null && beside.published > 0 && freeBesideCount === beside.published,
      );
      out.check(
        'unlimited rate beside the paced one / alone (alternating)',
        ratio === null ? null : round(ratio, 3),
        '≥ 0.90',
        ratio === null ? false : ratio >= 0.9,
      );
      if (!pacedDrained)
        out.notes.push(
          `the paced queue did not drain in time: ${pacedArrivals.length} of ${pacedPublished} arrived; windows are over what arrived`,
        );
      if (pacedArrivals.length > pacedPublished)
        out.notes.push(
          `the paced receiver got ${pacedArrivals.length - pacedPublished} pushes more than events published`,
        );
      if (beside && freeBesideCount > beside.published)
        out.notes.push(
          `the unlimited receiver got ${freeBesideCount - beside.published} pushes more than events published`,
        );
      const p99 = (l: LatencyFigures | undefined | null) => (l?.acked ? fmtMs(l.ackLatency.p99) : '—');
      const unlimited = `unlimited ${ratio === null ? '—' : fmtPct(ratio)} of alone, p99 ${p99(beside)} beside vs ${alone.map(p99).join(' and ')} alone`;
      out.headline =
        median === null
          ? `no paced deliveries; ${unlimited}`
          : `paced median ${median}/s, ≤ ${sliding} starts in any 1 s (arrivals ${paced?.atReceiver.slidingMax ?? '?'}); ${unlimited}`;
    } finally {
      await svc.dispose();
    }
  },
};
