// Scenario 3, the publish path alone: no connector, so each publish is validated, stored in history, applied to
// `reported` and offered to stream subscribers (one NDJSON stream is open and counts what it receives).
import { Client } from 'undici';
import { createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { closedLoop } from '../lib/loadgen.ts';
import { assertFound } from '../lib/measure.ts';
import { fmtInt, fmtMs, round, sleep } from '../lib/stats.ts';
import type { ServiceProcess } from '../lib/service.ts';

/** Opens the project-wide event stream and counts the touch events it delivers. */
async function openStream(svc: ServiceProcess): Promise<{ count(): number; close(): Promise<void>; status: number }> {
  const client = new Client(svc.url);
  const abort = new AbortController();
  let n = 0;
  try {
    const r = await client.request({
      path: `/v2/${svc.project}/devices:stream?event_types=touch`,
      method: 'GET',
      headers: { authorization: svc.basicAuth },
      signal: abort.signal,
      headersTimeout: 5000,
      bodyTimeout: 0,
    });
    if (r.statusCode !== 200) {
      await r.body.dump();
      await client.close();
      return { count: () => 0, close: async () => {}, status: r.statusCode };
    }
    r.body.on('data', (chunk: Buffer) => {
      // One JSON object per line; count event lines, not pings.
      let i = -1;
      const text = chunk.toString('utf8');
      while ((i = text.indexOf('"eventType":"touch"', i + 1)) !== -1) n++;
    });
    r.body.on('error', () => {});
    return {
      count: () => n,
      status: 200,
      async close() {
        abort.abort();
        await client.destroy().catch(() => {});
      },
    };
  } catch {
    await client.destroy().catch(() => {});
    return { count: () => 0, close: async () => {}, status: 0 };
  }
}

export const publishPath: Scenario = {
  name: 'publish',
  title: 'Publish path alone (no connector)',
  goal: '≥ 2,000 events/s',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const svc = await ctx.startService();
    try {
      const devices = await createDevices(svc, s.devices);
      const stream = await openStream(svc);
      if (stream.status !== 200)
        out.notes.push(`event stream not measured (answered ${stream.status || 'no response'})`);
      ctx.log(`  closed loop, ${s.concurrency} concurrent, ${s.publishMs / 1000} s`);
      const r = await closedLoop(svc.pool, {
        concurrency: s.concurrency,
        durationMs: s.publishMs,
        maxCount: 10_000_000,
        make: publishRequests(devices, svc.basicAuth),
        label: 'publish',
        log: ctx.log,
      });
      assertFound(r, 'publish');
      await sleep(500);
      const streamed = stream.count();
      await stream.close();
      out.figures = {
        publishedPerSecond: round(r.okPerSecond, 1),
        published: r.ok,
        publishLatency: r.latency,
        failures: r.failures,
        firstFailure: r.firstFailure,
        streamedEvents: stream.status === 200 ? streamed : null,
      };
      out.check('events/s', round(r.okPerSecond, 1), '≥ 2000', r.okPerSecond >= 2000);
      out.headline = `${fmtInt(r.okPerSecond)} ev/s, p99 ${fmtMs(r.latency.p99)}`;
      ctx.log(
        `  → ${fmtInt(r.okPerSecond)} published/s, p50 ${fmtMs(r.latency.p50)}, p99 ${fmtMs(r.latency.p99)}${stream.status === 200 ? `, stream saw ${fmtInt(streamed)}` : ''}`,
      );
      if (r.firstFailure) out.notes.push(`first failure: ${r.firstFailure}`);
    } finally {
      await svc.dispose();
    }
  },
};
