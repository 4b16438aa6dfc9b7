// PostgreSQL: the end-to-end path (publish → signed push → acknowledgement recorded) with the service on a
// PostgreSQL server started for the run (durable: fsync and synchronous commit on), one process and then two
// sharing the database, each in alternating rounds with the bare relay beside it (the database, the service, the
// relay, the receiver and the load share this machine's cores). Then publish→ack latency at 1,000 events/s.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BalancedPool, type Pool } from 'undici';
import { startPostgresServer } from '../../test/helpers/postgres-server.ts';
import { createConnectors, createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { measureLatency, measureThroughput } from '../lib/measure.ts';
import { ServiceProcess } from '../lib/service.ts';
import { fmtInt, fmtMs, fmtPct, round } from '../lib/stats.ts';
import { startRelay } from './ceiling.ts';

export const postgres: Scenario = {
  name: 'postgres',
  title: 'PostgreSQL: end-to-end with one and two processes',
  goal: 'one process ≥ 35 % of the bare relay beside it; p99 ≤ 30 ms at 1,000 events/s',
  needsCeiling: false,
  async run(ctx, out) {
    const s = ctx.settings;
    const server = await startPostgresServer({ durable: true });
    const keyDir = mkdtempSync(join(tmpdir(), 'sc-bench-key-'));
    const keyFile = join(keyDir, 'master.key');
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    const env = { SENSORCLOUD_DATABASE_URL: server.url, SENSORCLOUD_MASTER_KEY_FILE: keyFile };
    const services: ServiceProcess[] = [];
    try {
      const first = await ServiceProcess.start({ caFile: ctx.tls.caFile, env }, s.concurrency);
      services.push(first);
      const devices = await createDevices(first, s.devices);
      await createConnectors(first, [{ url: ctx.receiver.url('/pg'), signatureSecret: 'bench-signature-secret', displayName: 'pg' }]);
      const make = publishRequests(devices, first.basicAuth);
      const roundCount = s.quick ? 1 : 2;
      const roundMs = Math.round(s.throughputMs / (s.quick ? 1 : 3));
      const relay = await startRelay(ctx);
      const ratios: Record<string, { service: number; relay: number; ratio: number }> = {};
      try {
        const compare = async (label: string, pool: Pool) => {
          await measureThroughput(ctx, pool, make, { durationMs: s.warmupMs, label: `${label} warm-up` });
          const svc: number[] = [];
          const rel: number[] = [];
          for (let i = 1; i <= roundCount; i++) {
            rel.push((await measureThroughput(ctx, relay.pool, relay.make, { durationMs: roundMs, label: `relay ${i}` })).deliveredPerSecond);
            svc.push((await measureThroughput(ctx, pool, make, { durationMs: roundMs, label: `${label} ${i}` })).deliveredPerSecond);
          }
          const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
          const r = { service: round(mean(svc), 1), relay: round(mean(rel), 1), ratio: round(mean(svc) / mean(rel), 3) };
          ratios[label] = r;
          ctx.log(`  → ${label}: ${fmtInt(r.service)} delivered/s against the relay's ${fmtInt(r.relay)}: ${fmtPct(r.ratio)}`);
          return r;
        };
        const one = await compare('one process', first.pool);
        out.check('one process: throughput / relay', one.ratio, '≥ 0.35', one.ratio >= 0.35);
        const second = await ServiceProcess.start({ caFile: ctx.tls.caFile, env, joining: first.bootstrap }, s.concurrency);
        services.push(second);
        const both = new BalancedPool([first.url, second.url], { connections: Math.ceil(s.concurrency / 2), pipelining: 1 });
        try {
          const two = await compare('two processes', both as unknown as Pool);
          out.notes.push(`two processes: ${fmtPct(two.service / one.service)} of one process's rate (the database, both processes, the relay, the receiver and the load generator share 2 cores)`);
        } finally {
          await both.destroy();
        }
        await second.dispose();
        services.pop();
      } finally {
        await relay.stop();
      }
      out.figures.throughput = ratios;
      ctx.log('  latency at 1000/s, one process');
      const l = await measureLatency(ctx, first.pool, make, 1000, s.latencyMs, 'pg@1000', first.pid);
      out.figures.latency = l;
      ctx.log(`  → p50 ${fmtMs(l.ackLatency.p50)}, p99 ${fmtMs(l.ackLatency.p99)}, max ${fmtMs(l.ackLatency.max)}${l.missing ? `, ${l.missing} not acknowledged in time` : ''}`);
      out.check('p99 publish→ack at 1,000/s (ms)', l.ackLatency.p99, '≤ 30 ms, none missing', l.acked > 0 && l.missing === 0 && l.ackLatency.p99 <= 30);
      out.headline = `one process ${fmtPct(ratios['one process']!.ratio)} of the relay, two ${fmtPct(ratios['two processes']!.ratio)}; p99 ${fmtMs(l.ackLatency.p99)} @1k/s`;
    } finally {
      for (const svc of services) await svc.dispose().catch(() => undefined);
      server.stop();
      rmSync(keyDir, { recursive: true, force: true });
    }
  },
};
