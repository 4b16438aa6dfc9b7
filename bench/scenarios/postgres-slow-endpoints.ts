// Delivery bound by the endpoints, not the CPU: 32 data connectors whose endpoints each answer after 500 ms, fed
// more events than one process can push, first with one process and then with a second one added that publishes
// nothing (it takes its share of the queue through claims). A process has at most 1,024 attempts in flight, so
// one process pushes at most ~2,048 a second here; the cluster allows 64 per connector (2,048 in all), which two
// processes can fill. The receiver counts the requests open at once, in all and per endpoint: no endpoint may see
// more than the cluster's 64. The phase has a database of its own on the scenario's server, so that nothing the
// phases before it left in theirs (a backlog's dead rows, its statistics) weighs on it.
import pg from 'pg';
import { createConnectors, createDevices, publishRequests, type ConnectorSpec } from '../lib/api.ts';
import type { BenchContext } from '../lib/context.ts';
import type { Req } from '../lib/loadgen.ts';
import { openLoop } from '../lib/loadgen.ts';
import { assertFound } from '../lib/measure.ts';
import { ServiceProcess } from '../lib/service.ts';
import { cpuTimes, machineTicks } from '../lib/procs.ts';
import { fmtInt, fmtPct, nowMs, round } from '../lib/stats.ts';

const CONNECTORS = 32;
const DELAY_MS = 500;
/** Events published a second: each is pushed to every slow endpoint, 4,800 pushes a second offered. */
const RATE = 150;
/** Per-connector limit of the cluster (the spec's 64 attempts in flight). */
const PER_CONNECTOR = 64;

export interface SlowPart {
  /** Pushes acknowledged a second by the slow endpoints, after the first seconds of the part. */
  pushesPerSecond: number;
  /** The most requests open at once at all endpoints together, and at one endpoint. */
  maxOpen: number;
  maxOpenPerEndpoint: number;
  /** CPU per acknowledged push of the service processes and of PostgreSQL, µs; the machine's idle share. */
  serviceCpuUsPerPush: number;
  databaseCpuUsPerPush: number;
  idle: number;
}

export interface SlowEndpointsFigures {
  connectors: number;
  delayMs: number;
  offeredPushesPerSecond: number;
  one: SlowPart;
  two: SlowPart;
}

/**
 * Runs both parts on a new database `sensorcloud_slow` of the server at `serverUrl` (a superuser's URL): a process
 * started on it alone, then with a second one; both are stopped at the end.
 */
export async function slowEndpoints(
  ctx: BenchContext,
  serverUrl: string,
  keyFile: string,
  databaseCpuMs: () => number,
): Promise<SlowEndpointsFigures> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query('CREATE DATABASE sensorcloud_slow');
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = '/sensorcloud_slow';
  const env = { SENSORCLOUD_DATABASE_URL: url.href, SENSORCLOUD_MASTER_KEY_FILE: keyFile };
  const first = await ServiceProcess.start(
    { caFile: ctx.tls.caFile, env, nodeArgs: ctx.serviceNodeArgs },
    ctx.settings.concurrency,
  );
  const running = [first];
  try {
    const make = publishRequests(await createDevices(first, ctx.settings.devices), first.basicAuth);
    const cpuMs = () => ({
      service: running.reduce((sum, p) => sum + (cpuTimes(p.pid)?.totalMs ?? 0), 0),
      database: databaseCpuMs(),
    });
    return await parts(ctx, first, make, cpuMs, async () => {
      running.push(
        await ServiceProcess.start(
          { caFile: ctx.tls.caFile, env, joining: first.bootstrap, nodeArgs: ctx.serviceNodeArgs },
          ctx.settings.concurrency,
        ),
      );
    });
  } finally {
    for (const p of running) await p.dispose();
  }
}

/** The two parts: `first` alone, then with the process `addProcess` starts. */
async function parts(
  ctx: BenchContext,
  first: ServiceProcess,
  make: (i: number) => Req,
  cpuMs: () => { service: number; database: number },
  addProcess: () => Promise<void>,
): Promise<SlowEndpointsFigures> {
  const partMs = ctx.settings.quick ? 8_000 : 15_000;
  const rampMs = ctx.settings.quick ? 3_000 : 5_000;
  const ports = await ctx.receiver.slow(CONNECTORS, DELAY_MS);
  const specs: ConnectorSpec[] = ports.map((p, i) => ({
    url: `https://127.0.0.1:${p}/slow`,
    signatureSecret: 'bench-signature-secret',
    displayName: `slow ${i}`,
  }));
  await createConnectors(first, specs);
  try {
    const part = async (label: string): Promise<SlowPart> => {
      ctx.log(
        `  slow endpoints, ${label}: ${RATE} events/s × ${CONNECTORS} endpoints answering after ${DELAY_MS} ms, ${partMs / 1000} s`,
      );
      const start = nowMs();
      await ctx.receiver.slowStats();
      const loop = openLoop(first.pool, {
        rate: RATE,
        durationMs: partMs,
        make,
        label: `slow endpoints, ${label}`,
        log: ctx.log,
      });
      // The highest counts are taken after the ramp (new connections, connectors' health not yet known).
      await new Promise((resolve) => setTimeout(resolve, rampMs));
      await ctx.receiver.slowStats();
      const cpu = cpuMs();
      const ticks = machineTicks();
      const r = await loop;
      const end = nowMs();
      const cpuAfter = cpuMs();
      const ticksAfter = machineTicks();
      assertFound(r, 'publish');
      const w = await ctx.receiver.window(start + rampMs, end, '/slow');
      const st = await ctx.receiver.slowStats();
      const perPush = (ms: number) => (w.count > 0 ? round((ms * 1000) / w.count, 1) : 0);
      const out = {
        pushesPerSecond: round((w.count * 1000) / (end - start - rampMs), 1),
        maxOpen: st.maxOpen,
        maxOpenPerEndpoint: st.maxOpenPerPort,
        serviceCpuUsPerPush: perPush(cpuAfter.service - cpu.service),
        databaseCpuUsPerPush: perPush(cpuAfter.database - cpu.database),
        idle: round((ticksAfter.idle - ticks.idle) / Math.max(1, ticksAfter.total - ticks.total), 3),
      };
      ctx.log(
        `  → ${fmtInt(out.pushesPerSecond)} pushes/s acknowledged; at most ${fmtInt(out.maxOpen)} requests open at once, ${out.maxOpenPerEndpoint} at one endpoint; CPU per push ${out.serviceCpuUsPerPush} µs in the service, ${out.databaseCpuUsPerPush} µs in PostgreSQL; machine ${fmtPct(out.idle)} idle`,
      );
      return out;
    };
    const one = await part('one process');
    await addProcess();
    const two = await part('a second process added');
    return { connectors: CONNECTORS, delayMs: DELAY_MS, offeredPushesPerSecond: RATE * CONNECTORS, one, two };
  } finally {
    await ctx.receiver.closeSlow();
  }
}

/** The check: the cluster's per-connector limit held at every endpoint. */
export const perConnectorHeld = (f: SlowEndpointsFigures): boolean =>
  f.one.maxOpenPerEndpoint <= PER_CONNECTOR && f.two.maxOpenPerEndpoint <= PER_CONNECTOR;
