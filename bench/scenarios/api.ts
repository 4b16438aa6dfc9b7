// Scenario 7, API: GET /v2/projects/{p}/devices (a page of 100) per second with Basic and with Bearer auth, as a
// ratio to a bare fastify hello-world measured in the same run, plus OAuth2 JWT-bearer exchanges per second.
import { Pool } from 'undici';
import { ApiFailure, call, createDevices, fetchToken, makeAssertion, Skip, tokenForm } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { closedLoop, type Req } from '../lib/loadgen.ts';
import { assertFound } from '../lib/measure.ts';
import { HelperProcess } from '../lib/procs.ts';
import { fmtInt, fmtMs, fmtPct, round } from '../lib/stats.ts';

export const api: Scenario = {
  name: 'api',
  title: 'API: device page of 100, token exchange',
  goal: '≥ 50 % of fastify hello-world (Basic and Bearer)',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const seconds = s.apiMs / 1000;
    const svc = await ctx.startService();
    try {
      await createDevices(svc, s.apiDevices);
      const path = `/v2/${svc.project}/devices?pageSize=100`;
      const page = await call<{ devices: unknown[] }>(svc.pool, svc.basicAuth, 'GET', path);
      out.figures.pageItems = page.devices.length;
      if (page.devices.length !== 100) out.notes.push(`the page held ${page.devices.length} devices, not 100`);

      const hello = await HelperProcess.start<{ port: number }>('hello.ts');
      const helloPool = new Pool(`http://127.0.0.1:${hello.ready.port}`, { connections: s.concurrency, pipelining: 1 });
      let helloRate: number;
      try {
        ctx.log(`  fastify hello-world, ${s.concurrency} concurrent, ${seconds} s`);
        const h = await closedLoop(helloPool, { concurrency: s.concurrency, durationMs: s.apiMs, maxCount: 10_000_000, make: () => ({ method: 'GET', path: '/hello' }), label: 'hello', log: ctx.log });
        helloRate = h.okPerSecond;
        out.figures.helloWorld = { perSecond: round(h.okPerSecond, 1), latency: h.latency };
        ctx.log(`  → ${fmtInt(helloRate)} req/s`);
      } finally {
        await helloPool.destroy().catch(() => {});
        await hello.stop();
      }

      const list = async (label: string, auth: string) => {
        const make = (): Req => ({ method: 'GET', path, headers: { authorization: auth } });
        ctx.log(`  GET devices (page of 100), ${label}, ${seconds} s`);
        const r = await closedLoop(svc.pool, { concurrency: s.concurrency, durationMs: s.apiMs, maxCount: 10_000_000, make, label, log: ctx.log });
        assertFound(r, 'GET devices');
        const ratio = r.okPerSecond / helloRate;
        ctx.log(`  → ${fmtInt(r.okPerSecond)} req/s (${fmtPct(ratio)} of hello-world), p99 ${fmtMs(r.latency.p99)}`);
        out.check(`${label} devices page / hello-world`, round(ratio, 3), '≥ 0.50', ratio >= 0.5);
        if (r.firstFailure) out.notes.push(`${label}: first failure ${r.firstFailure}`);
        return { perSecond: round(r.okPerSecond, 1), ratioToHelloWorld: round(ratio, 3), latency: r.latency, failures: r.failures };
      };
      const basic = await list('Basic', svc.basicAuth);
      out.figures.basic = basic;
      out.headline = `Basic ${fmtPct(basic.ratioToHelloWorld)}`;
      let tokens = '';

      let token: string | null = null;
      try {
        token = await fetchToken(svc);
      } catch (err) {
        if (!(err instanceof Skip || err instanceof ApiFailure)) throw err;
        out.notes.push(`Bearer and token exchange skipped: ${err.message}`);
      }
      if (token) {
        const bearer = await list('Bearer', `Bearer ${token}`);
        out.figures.bearer = bearer;
        out.headline += `, Bearer ${fmtPct(bearer.ratioToHelloWorld)}`;
        const body = tokenForm(await makeAssertion(svc));
        ctx.log(`  token exchanges, ${seconds} s`);
        const t = await closedLoop(svc.pool, {
          concurrency: s.concurrency, durationMs: s.apiMs, maxCount: 10_000_000, label: 'token', log: ctx.log,
          make: () => ({ method: 'POST', path: '/oauth2/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body }),
        });
        out.figures.tokenExchange = { perSecond: round(t.okPerSecond, 1), latency: t.latency, failures: t.failures };
        tokens = `; ${fmtInt(t.okPerSecond)} tokens/s`;
        ctx.log(`  → ${fmtInt(t.okPerSecond)} exchanges/s, p99 ${fmtMs(t.latency.p99)}`);
      } else {
        out.check('Bearer devices page / hello-world', null, '≥ 0.50', null);
      }
      out.headline += ` of hello-world${tokens}`;
    } finally {
      await svc.dispose();
    }
  },
};
