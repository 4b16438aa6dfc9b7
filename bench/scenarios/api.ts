// Scenario 7, API: GET /v2/projects/{p}/devices (a page of 100) per second with Basic and with Bearer auth, as a
// ratio to the physical limit for that page on this machine: fastify answering the same bytes from memory with no
// auth and no store, measured in the same run (before and after, the mean is the reference). Then the same while
// 1,000 events/s flow into the project's devices (the page changes under the cache), with the reference measured
// under that same publish load. A bare fastify hello-world stays in the figures for context, and OAuth2
// JWT-bearer exchanges per second close the scenario.
import { Pool } from 'undici';
import {
  ApiFailure,
  call,
  createDevices,
  fetchToken,
  makeAssertion,
  publishRequests,
  Skip,
  tokenForm,
} from '../lib/api.ts';
import type { BenchContext, Scenario } from '../lib/context.ts';
import { closedLoop, openLoop, type LoadResult, type Req } from '../lib/loadgen.ts';
import { assertFound } from '../lib/measure.ts';
import { cpuTimes, HelperProcess } from '../lib/procs.ts';
import { fmtInt, fmtMs, fmtPct, round } from '../lib/stats.ts';

const GOAL = 0.7;
const PUBLISH_RATE = 1000;

export const api: Scenario = {
  name: 'api',
  title: 'API: device page of 100, token exchange',
  goal: '≥ 70 % of fastify serving the same page from memory (Basic and Bearer, quiet and at 1,000 ev/s)',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const seconds = s.apiMs / 1000;
    const svc = await ctx.startService();
    const yardsticks = await HelperProcess.start<{ port: number }>('hello.ts');
    const refPool = new Pool(`http://127.0.0.1:${yardsticks.ready.port}`, {
      connections: s.concurrency,
      pipelining: 1,
    });
    try {
      const devices = await createDevices(svc, s.apiDevices);
      const path = `/v2/${svc.project}/devices?pageSize=100`;
      const page = await call<{ devices: unknown[] }>(svc.pool, svc.basicAuth, 'GET', path);
      out.figures.pageItems = page.devices.length;
      if (page.devices.length !== 100) out.notes.push(`the page held ${page.devices.length} devices, not 100`);
      const raw = await svc.pool.request({ path, method: 'GET', headers: { authorization: svc.basicAuth } });
      const body = await raw.body.text();
      const { bytes } = await yardsticks.call<{ bytes: number }>('page', {
        body,
        contentType: String(raw.headers['content-type']),
      });
      out.figures.pageBytes = bytes;
      ctx.log(
        `  the page: ${devices.length} devices in the project, ${page.devices.length} on the page, ${fmtInt(bytes)} bytes`,
      );

      const loop = async (label: string, pool: Pool, make: () => Req, durationMs = s.apiMs): Promise<LoadResult> => {
        const r = await closedLoop(pool, {
          concurrency: s.concurrency,
          durationMs,
          maxCount: 10_000_000,
          make,
          label,
          log: ctx.log,
        });
        assertFound(r, label);
        if (r.firstFailure) out.notes.push(`${label}: first failure ${r.firstFailure}`);
        return r;
      };

      ctx.log(`  fastify hello-world, ${s.concurrency} concurrent, ${seconds} s`);
      const hello = await loop('hello', refPool, () => ({ method: 'GET', path: '/hello' }));
      out.figures.helloWorld = { perSecond: round(hello.okPerSecond, 1), latency: hello.latency };
      ctx.log(`  → ${fmtInt(hello.okPerSecond)} req/s`);

      let token: string | null = null;
      try {
        token = await fetchToken(svc);
      } catch (err) {
        if (!(err instanceof Skip || err instanceof ApiFailure)) throw err;
        out.notes.push(`Bearer and token exchange skipped: ${err.message}`);
      }
      const auths: Array<[string, string]> = [['Basic', svc.basicAuth]];
      if (token) auths.push(['Bearer', `Bearer ${token}`]);

      // One phase: rounds of the reference then each auth, and the reference once more at the end; each rate is
      // the mean of its rounds, so a slow or fast spell of this machine (it drifts by ±30 % over minutes) falls on
      // the reference as on the service. CPU per request (the server's process, all threads) is beside it: the
      // cost itself, which drift does not move much.
      const rounds = s.quick ? 1 : 2;
      const roundMs = Math.round(s.apiMs / rounds);
      const phase = async (name: string, during: <T>(work: () => Promise<T>) => Promise<T>) => {
        const measure = async (
          label: string,
          pid: number,
          pool: Pool,
          make: () => Req,
        ): Promise<{ rate: number; cpuUs: number | null; r: LoadResult }> => {
          const before = cpuTimes(pid);
          const r = await during(() => loop(label, pool, make, roundMs));
          const after = cpuTimes(pid);
          const cpuUs = before && after && r.ok > 0 ? ((after.totalMs - before.totalMs) * 1000) / r.ok : null;
          return { rate: r.okPerSecond, cpuUs, r };
        };
        const reference = () => measure('reference', yardsticks.pid, refPool, () => ({ method: 'GET', path: '/page' }));
        const refs: Array<Awaited<ReturnType<typeof reference>>> = [];
        const pages = new Map<string, Array<Awaited<ReturnType<typeof reference>>>>(
          auths.map(([label]) => [label, []]),
        );
        ctx.log(
          `  ${name}: ${rounds} round(s) of the reference then ${auths.map(([a]) => a).join(', ')}, and the reference again; ${s.concurrency} concurrent, ${roundMs / 1000} s each`,
        );
        for (let i = 0; i < rounds; i++) {
          refs.push(await reference());
          for (const [label, auth] of auths)
            pages.get(label)!.push(
              await measure(`${label} (${name})`, svc.pid, svc.pool, () => ({
                method: 'GET',
                path,
                headers: { authorization: auth },
              })),
            );
        }
        refs.push(await reference());
        const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
        const cpuOf = (ms: Array<{ cpuUs: number | null }>) =>
          ms.every((m) => m.cpuUs !== null) ? round(mean(ms.map((m) => m.cpuUs!)), 1) : null;
        const ref = mean(refs.map((r) => r.rate));
        const refCpu = cpuOf(refs);
        const figures: Record<string, unknown> = {
          referencePerSecond: round(ref, 1),
          referenceRounds: refs.map((r) => round(r.rate, 1)),
          referenceCpuUsPerRequest: refCpu,
        };
        ctx.log(
          `  → reference ${refs.map((r) => fmtInt(r.rate)).join(' / ')} req/s${refCpu === null ? '' : `, ${refCpu} µs CPU per request`}`,
        );
        const ratios: string[] = [];
        for (const [label, ms] of pages) {
          const rate = mean(ms.map((m) => m.rate));
          const ratio = rate / ref;
          const cpu = cpuOf(ms);
          const last = ms[ms.length - 1]!.r;
          figures[label.toLowerCase()] = {
            perSecond: round(rate, 1),
            rounds: ms.map((m) => round(m.rate, 1)),
            ratioToReference: round(ratio, 3),
            ratioToHelloWorld: round(rate / hello.okPerSecond, 3),
            cpuUsPerRequest: cpu,
            latency: last.latency,
            failures: last.failures,
          };
          ctx.log(
            `  → ${label}: ${ms.map((m) => fmtInt(m.rate)).join(' / ')} req/s, ${fmtPct(ratio)} of the reference (${fmtPct(rate / hello.okPerSecond)} of hello-world)${cpu === null ? '' : `, ${cpu} µs CPU per request`}, p99 ${fmtMs(last.latency.p99)}`,
          );
          out.check(
            `${label} device page / reference, ${name}`,
            round(ratio, 3),
            `≥ ${GOAL.toFixed(2)}`,
            ratio >= GOAL,
          );
          ratios.push(`${label} ${fmtPct(ratio)}`);
        }
        if (!token) out.check(`Bearer device page / reference, ${name}`, null, `≥ ${GOAL.toFixed(2)}`, null);
        out.figures[name] = figures;
        return ratios.join(', ');
      };

      // Every loop once before the phases, uncounted, so that none is measured while its code is still cold.
      ctx.log(`  warm-up: the reference and each auth, ${s.warmupMs / 1000} s each (not counted)`);
      const warm = { concurrency: s.concurrency, durationMs: s.warmupMs, maxCount: 10_000_000 };
      await closedLoop(refPool, { ...warm, make: () => ({ method: 'GET', path: '/page' }) });
      for (const [, auth] of auths)
        await closedLoop(svc.pool, {
          ...warm,
          make: () => ({ method: 'GET', path, headers: { authorization: auth } }),
        });
      const quiet = await phase('quiet', (work) => work());
      const publish = publishRequests(devices, svc.basicAuth);
      const busy = await phase('at 1,000 ev/s', (work) => underLoad(ctx, svc.pool, publish, work, out.notes));
      out.headline = `quiet ${quiet}; at 1,000 ev/s ${busy} of the reference`;

      if (token) {
        const form = tokenForm(await makeAssertion(svc));
        ctx.log(`  token exchanges, ${seconds} s`);
        const t = await loop('token', svc.pool, () => ({
          method: 'POST',
          path: '/oauth2/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form,
        }));
        out.figures.tokenExchange = { perSecond: round(t.okPerSecond, 1), latency: t.latency, failures: t.failures };
        out.headline += `; ${fmtInt(t.okPerSecond)} tokens/s`;
        ctx.log(`  → ${fmtInt(t.okPerSecond)} exchanges/s, p99 ${fmtMs(t.latency.p99)}`);
      }
    } finally {
      await refPool.destroy().catch(() => {});
      await yardsticks.stop();
      await svc.dispose();
    }
  },
};

/** Runs `work` while an open loop publishes 1,000 events/s to the project's devices, for as long as `work` runs. */
async function underLoad<T>(
  ctx: BenchContext,
  pool: Pool,
  make: (i: number) => Req,
  work: () => Promise<T>,
  notes: string[],
): Promise<T> {
  const s = ctx.settings;
  let stop = false;
  let published = 0;
  let failed = 0;
  // Open loops of one second each, back to back, until the measured work ends (bounded by its own duration).
  const feeding = (async () => {
    let i = 0;
    while (!stop) {
      const r = await openLoop(pool, { rate: PUBLISH_RATE, durationMs: 1000, make: (j) => make(i + j) });
      i += r.sent;
      published += r.ok;
      failed += r.sent - r.ok;
    }
  })();
  const t0 = Date.now();
  try {
    return await work();
  } finally {
    stop = true;
    await feeding;
    const rate = published / ((Date.now() - t0) / 1000);
    ctx.log(`    publishing beside it: ${fmtInt(rate)} events/s${failed ? `, ${fmtInt(failed)} failed` : ''}`);
    if (failed) notes.push(`${failed} publishes failed while the page was measured under load`);
    if (rate < PUBLISH_RATE * 0.9)
      notes.push(
        `the publish load reached ${fmtInt(rate)} events/s, under the ${fmtInt(PUBLISH_RATE)} asked (${s.concurrency} page requests at once beside it)`,
      );
  }
}
