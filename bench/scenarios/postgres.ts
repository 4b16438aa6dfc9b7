// PostgreSQL: the end-to-end path (publish → signed push → acknowledgement recorded) with the service on a
// PostgreSQL server started for the run (durable: fsync and synchronous commit on), one process and then two
// sharing the database, each in alternating rounds with the bare relay beside it (the database, the service, the
// relay, the receiver and the load share this machine's cores). Then publish→ack latency at 1,000 events/s, the
// drain of a backlog of 1,000,000 queued rows by one process, and last the pushes to endpoints that answer slowly,
// by one process and then two (postgres-slow-endpoints.ts).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BalancedPool, type Pool } from 'undici';
import { startPostgresServer } from '../../test/helpers/postgres-server.ts';
import { createConnectors, createDevices, publishRequests } from '../lib/api.ts';
import type { Scenario } from '../lib/context.ts';
import { closedLoop, type Req } from '../lib/loadgen.ts';
import { assertFound, measureLatency, measureThroughput, waitForDeliveries } from '../lib/measure.ts';
import { growPostgresQueue } from '../lib/postgres-seed.ts';
import { cpuTimes, postgresCpuMs } from '../lib/procs.ts';
import { ServiceProcess } from '../lib/service.ts';
import { fmtInt, fmtMs, fmtPct, nowMs, round } from '../lib/stats.ts';
import { startRelay } from './ceiling.ts';
import { perConnectorHeld, slowEndpoints } from './postgres-slow-endpoints.ts';

export const postgres: Scenario = {
  name: 'postgres',
  title: 'PostgreSQL: end-to-end with one and two processes, backlog, slow endpoints',
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
      const first = await ServiceProcess.start(
        { caFile: ctx.tls.caFile, env, nodeArgs: ctx.serviceNodeArgs },
        s.concurrency,
      );
      services.push(first);
      const devices = await createDevices(first, s.devices);
      await createConnectors(first, [
        { url: ctx.receiver.url('/pg'), signatureSecret: 'bench-signature-secret', displayName: 'pg' },
      ]);
      const make = publishRequests(devices, first.basicAuth);
      // Three rounds of each in a full run, as the end-to-end scenario: the relay's rate moves by ±10 % from minute
      // to minute here, and the ratio with it.
      const roundCount = s.quick ? 1 : 3;
      const roundMs = Math.round(s.throughputMs / roundCount);
      const relay = await startRelay(ctx);
      const ratios: Record<
        string,
        {
          service: number;
          relay: number;
          ratio: number;
          serviceCpuUsPerEvent: number | null;
          databaseCpuUsPerEvent: number | null;
        }
      > = {};
      try {
        const compare = async (label: string, pool: Pool) => {
          await measureThroughput(ctx, pool, make, { durationMs: s.warmupMs, label: `${label} warm-up` });
          const svc: number[] = [];
          const rel: number[] = [];
          // CPU per delivered event in the service's rounds: the service processes (all threads) and the database
          // server (every backend), for the capacity model in docs/deployment.md.
          let delivered = 0;
          let serviceCpuMs = 0;
          let databaseCpuMs = 0;
          for (let i = 1; i <= roundCount; i++) {
            rel.push(
              (await measureThroughput(ctx, relay.pool, relay.make, { durationMs: roundMs, label: `relay ${i}` }))
                .deliveredPerSecond,
            );
            const before = { service: servicesCpuMs(services), database: postgresCpuMs(server.dataDir) };
            const t = await measureThroughput(ctx, pool, make, { durationMs: roundMs, label: `${label} ${i}` });
            serviceCpuMs += servicesCpuMs(services) - before.service;
            databaseCpuMs += postgresCpuMs(server.dataDir) - before.database;
            delivered += t.delivered;
            svc.push(t.deliveredPerSecond);
          }
          const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
          const r = {
            service: round(mean(svc), 1),
            relay: round(mean(rel), 1),
            ratio: round(mean(svc) / mean(rel), 3),
            serviceCpuUsPerEvent: delivered > 0 ? round((serviceCpuMs * 1000) / delivered, 1) : null,
            databaseCpuUsPerEvent: delivered > 0 ? round((databaseCpuMs * 1000) / delivered, 1) : null,
          };
          ratios[label] = r;
          out.notes.push(
            `${label}: ${roundCount} alternating rounds of ${roundMs / 1000} s, relay then service: relay ${rel.map(fmtInt).join(' / ')}, service ${svc.map(fmtInt).join(' / ')} per second`,
          );
          ctx.log(
            `  → ${label}: ${fmtInt(r.service)} delivered/s against the relay's ${fmtInt(r.relay)}: ${fmtPct(r.ratio)}; CPU per event: service ${r.serviceCpuUsPerEvent} µs, PostgreSQL ${r.databaseCpuUsPerEvent} µs`,
          );
          return r;
        };
        const one = await compare('one process', first.pool);
        out.check('one process: throughput / relay', one.ratio, '≥ 0.35', one.ratio >= 0.35);
        const second = await ServiceProcess.start(
          { caFile: ctx.tls.caFile, env, joining: first.bootstrap, nodeArgs: ctx.serviceNodeArgs },
          s.concurrency,
        );
        services.push(second);
        const both = new BalancedPool([first.url, second.url], {
          connections: Math.ceil(s.concurrency / 2),
          pipelining: 1,
        });
        try {
          const two = await compare('two processes', both as unknown as Pool);
          out.notes.push(
            `two processes: ${fmtPct(two.service / one.service)} of one process's rate (the database, both processes, the relay, the receiver and the load generator share 2 cores)`,
          );
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
      ctx.log(
        `  → p50 ${fmtMs(l.ackLatency.p50)}, p99 ${fmtMs(l.ackLatency.p99)}, max ${fmtMs(l.ackLatency.max)}${l.missing ? `, ${l.missing} not acknowledged in time` : ''}`,
      );
      out.check(
        'p99 publish→ack at 1,000/s (ms)',
        l.ackLatency.p99,
        '≤ 30 ms, none missing',
        l.acked > 0 && l.missing === 0 && l.ackLatency.p99 <= 30,
      );
      out.headline = `one process ${fmtPct(ratios['one process']!.ratio)} of the relay, two ${fmtPct(ratios['two processes']!.ratio)}; p99 ${fmtMs(l.ackLatency.p99)} @1k/s`;

      // The device page (GET …/devices?pageSize=100, Basic auth) read from PostgreSQL: SQLite's device and page
      // caches are not used there (any process may change any device), so every page is a query. Its rate and CPU
      // per request of the service and of PostgreSQL, quiet, beside the API scenario's on SQLite.
      await createDevices(first, Math.max(0, s.apiDevices - s.devices));
      const page: Req = {
        method: 'GET',
        path: `/v2/${first.project}/devices?pageSize=100`,
        headers: { authorization: first.basicAuth },
      };
      const pageLoop = (durationMs: number, label: string) =>
        closedLoop(first.pool, {
          concurrency: s.concurrency,
          durationMs,
          maxCount: 10_000_000,
          make: () => page,
          label,
          log: ctx.log,
        });
      await pageLoop(s.warmupMs, 'device page warm-up');
      const pageBefore = { service: servicesCpuMs([first]), database: postgresCpuMs(server.dataDir) };
      const pages = await pageLoop(s.apiMs, 'device page');
      assertFound(pages, 'device page');
      const perPage = (ms: number) => (pages.ok > 0 ? round((ms * 1000) / pages.ok, 1) : null);
      const devicePage = {
        perSecond: round(pages.okPerSecond, 1),
        latency: pages.latency,
        failures: pages.failures,
        serviceCpuUsPerRequest: perPage(servicesCpuMs([first]) - pageBefore.service),
        databaseCpuUsPerRequest: perPage(postgresCpuMs(server.dataDir) - pageBefore.database),
      };
      out.figures.devicePage = devicePage;
      const pageLine = `${fmtInt(devicePage.perSecond)} req/s; CPU per request ${devicePage.serviceCpuUsPerRequest} µs in the service, ${devicePage.databaseCpuUsPerRequest} µs in PostgreSQL`;
      ctx.log(`  → device page: ${pageLine}`);
      out.notes.push(`device page of 100 (Basic, quiet): ${pageLine}`);

      // Backlog: rows queued through the real path while the receiver is down, grown in the database while the
      // service is stopped, then drained by one process (as the SQLite backlog scenario does).
      await ctx.receiver.down();
      ctx.log(`  backlog: receiver down; publishing up to ${fmtInt(s.backlogRealMax)} events through the API`);
      const q = await closedLoop(first.pool, {
        concurrency: s.concurrency,
        durationMs: s.backlogRealMs,
        maxCount: s.backlogRealMax,
        make,
        label: 'queueing',
        log: ctx.log,
      });
      assertFound(q, 'publish');
      await first.stop();
      const seedStart = nowMs();
      const seed = await growPostgresQueue(server.url, s.backlogEvents, Date.now() * 1000);
      const queued = seed.realRows + seed.copiedRows;
      ctx.log(
        `  queue: ${fmtInt(queued)} rows (${fmtInt(seed.copiedRows)} copied in SQL in ${((nowMs() - seedStart) / 1000).toFixed(1)} s), ${fmtInt(seed.queueBytes / queued)} bytes/row with indexes`,
      );
      await ctx.receiver.reset();
      await ctx.receiver.up();
      await first.restart();
      ctx.log(
        `  receiver up, service restarted in ${(first.startMs / 1000).toFixed(1)} s; draining (at most ${s.backlogDrainMs / 1000} s)`,
      );
      const d = await waitForDeliveries(ctx, queued, s.backlogDrainMs);
      const st = await ctx.receiver.stats();
      const spanS = st.first !== null && st.last !== null && st.last > st.first ? (st.last - st.first) / 1000 : 0;
      const drainRate = spanS > 0 ? st.total / spanS : 0;
      const emptyRate = ratios['one process']!.service;
      out.figures.backlog = {
        queued,
        queuedThroughApi: seed.realRows,
        copiedInSql: seed.copiedRows,
        queueBytes: seed.queueBytes,
        bytesPerRow: round(seed.queueBytes / queued, 1),
        drainPerSecond: round(drainRate, 1),
        delivered: st.total,
        drained: d.drained,
        ratioToEmptyQueue: round(drainRate / emptyRate, 3),
        restartMs: round(first.startMs, 0),
      };
      if (!d.drained)
        out.notes.push(
          `backlog: the ${s.backlogDrainMs / 1000} s drain window ended with ${fmtInt(st.total)} of ${fmtInt(queued)} delivered; the rate is over that window`,
        );
      ctx.log(
        `  → ${fmtInt(drainRate)} delivered/s while draining ${fmtInt(queued)} rows (${fmtPct(drainRate / emptyRate)} of the empty-queue rate)`,
      );
      out.headline += `; drain of ${fmtInt(queued)} rows ${fmtInt(drainRate)}/s`;

      // Delivery bound by the endpoints' response time (postgres-slow-endpoints.ts), on a database of its own. The
      // backlog's process is stopped first: what is left of the backlog is not pushed meanwhile.
      await first.stop();
      const slow = await slowEndpoints(ctx, server.url, keyFile, () => postgresCpuMs(server.dataDir));
      out.figures.slowEndpoints = slow;
      out.notes.push(
        `endpoints answering after ${slow.delayMs} ms (${slow.connectors} connectors): one process ${fmtInt(slow.one.pushesPerSecond)} pushes/s, a second one added ${fmtInt(slow.two.pushesPerSecond)}/s; at most ${Math.max(slow.one.maxOpenPerEndpoint, slow.two.maxOpenPerEndpoint)} requests open at one endpoint`,
      );
      out.check(
        'slow endpoints: a second process adds delivery capacity (pushes/s, two ÷ one)',
        round(slow.two.pushesPerSecond / slow.one.pushesPerSecond, 2),
        '≥ 1.5, ≤ 64 open at one endpoint',
        slow.two.pushesPerSecond >= 1.5 * slow.one.pushesPerSecond && perConnectorHeld(slow),
      );
    } finally {
      await ctx.receiver.up().catch(() => {});
      for (const svc of services) await svc.dispose().catch(() => undefined);
      server.stop();
      rmSync(keyDir, { recursive: true, force: true });
    }
  },
};

/** CPU time (ms) the service processes have used so far, all threads. */
function servicesCpuMs(services: ServiceProcess[]): number {
  return services.reduce((sum, svc) => sum + (cpuTimes(svc.pid)?.totalMs ?? 0), 0);
}
