// `npm run bench:cost [-- <events/s>|max [seconds] [--devices N] [--postgres [--two [--by-path]]]]`: the service's
// CPU per event at a steady offered rate, for comparing two versions of the code on a machine whose speed drifts
// (throughput figures moved ±30 % between runs; this one moves ±2 %). Starts the service and the receiver as `npm
// run bench` does, one signed connector; a 3 s warm-up, then an open loop at the rate; prints the main thread's and
// all threads' CPU time per published event (from /proc), then the idle cost per second. `max` runs the closed
// loop of the end-to-end scenario instead (32 concurrent publishers) and also prints published and delivered per
// second, and how much of the time the machine's cores were idle (a loop bound by waiting, not by the CPU).
// `--postgres`: the service on a durable PostgreSQL server started for the run, whose CPU per event (every backend
// and background process) is printed too. `--two`: two processes of a cluster on that server, the load spread
// over both (as a load balancer would, round robin); the service's CPU is both processes'. `--by-path`: each
// request to the process its URL path hashes to, as a load balancer hashing on the path (docs/deployment.md) does,
// so each device's events go through one process. `--devices N`: publish round robin over N devices (default 10).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BalancedPool, type Pool } from 'undici';
import { startPostgresServer, type PostgresServer } from '../test/helpers/postgres-server.ts';
import { createConnectors, createDevices, publishRequests } from './lib/api.ts';
import { closedLoop, openLoop } from './lib/loadgen.ts';
import { Receiver } from './lib/receiver.ts';
import { ServiceProcess } from './lib/service.ts';
import { createBenchTls } from './lib/tls.ts';
import { cpuTimes, machineTicks, postgresCpuMs, removeDir, trackDir } from './lib/procs.ts';

const argv = process.argv.slice(2);
const devicesAt = argv.indexOf('--devices');
const deviceCount = devicesAt >= 0 ? Number(argv.splice(devicesAt, 2)[1]) : 10;
const args = argv.filter((a) => a !== '--postgres' && a !== '--two' && a !== '--by-path');
const postgres = process.argv.includes('--postgres');
const two = process.argv.includes('--two');
const byPath = process.argv.includes('--by-path');
const max = args[0] === 'max';
const rate = max ? 1000 : Number(args[0] ?? 1000);
const seconds = Number(args[1] ?? 10);
if (
  !(rate > 0 && rate <= 20_000) ||
  !(seconds > 0 && seconds <= 120) ||
  args.length > 2 ||
  (two && !postgres) ||
  (byPath && !two) ||
  !(Number.isInteger(deviceCount) && deviceCount >= 1 && deviceCount <= 10_000)
) {
  process.stderr.write(
    'usage: npm run bench:cost -- [events/s, 1-20000, or max] [seconds, 1-120] [--devices 1-10000] [--postgres [--two [--by-path]]]\n',
  );
  process.exit(2);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A durable PostgreSQL server and a master key file for the service, or nothing (SQLite). */
async function database(): Promise<{ env: Record<string, string>; server: PostgresServer | null }> {
  if (!postgres) return { env: {}, server: null };
  const server = await startPostgresServer({ durable: true });
  const keyFile = join(trackDir(mkdtempSync(join(tmpdir(), 'sc-cost-key-'))), 'master.key');
  writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  return { env: { SENSORCLOUD_DATABASE_URL: server.url, SENSORCLOUD_MASTER_KEY_FILE: keyFile }, server };
}

const tls = createBenchTls();
const receiver = await Receiver.start(tls);
const db = await database();
const databaseCpu = () => (db.server ? postgresCpuMs(db.server.dataDir) : 0);
// BENCH_PROFILE_DIR=dir: the service runs with --cpu-prof and writes its profiles there.
const profileDir = process.env.BENCH_PROFILE_DIR;
const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
const svc = await ServiceProcess.start({ caFile: tls.caFile, env: db.env, nodeArgs }, 32);
const services = [svc];
let balanced: BalancedPool | null = null;
/** Sends each request to the process its path hashes to (each process's own pool). */
const hashedByPath = (pools: Pool[]) => ({
  request: (o: Parameters<Pool['request']>[0]) => {
    let h = 0;
    for (let i = 0; i < o.path.length; i++) h = (h * 31 + o.path.charCodeAt(i)) | 0;
    return pools[Math.abs(h) % pools.length]!.request(o);
  },
});
try {
  if (two) {
    services.push(
      await ServiceProcess.start({ caFile: tls.caFile, env: db.env, joining: svc.bootstrap, nodeArgs }, 16),
    );
    if (!byPath)
      balanced = new BalancedPool(
        services.map((s) => s.url),
        { connections: 16, pipelining: 1 },
      );
  }
  const pool = (byPath ? hashedByPath(services.map((x) => x.pool)) : (balanced ?? svc.pool)) as unknown as Pool;
  // Every thread of every service process.
  const cpu = () =>
    services
      .map((s) => cpuTimes(s.pid)!)
      .reduce((a, b) => ({ mainMs: a.mainMs + b.mainMs, totalMs: a.totalMs + b.totalMs }));
  const devices = await createDevices(svc, deviceCount);
  await createConnectors(svc, [
    { url: receiver.url('/cost'), signatureSecret: 'bench-signature-secret', displayName: 'cost' },
  ]);
  const make = publishRequests(devices, svc.basicAuth);
  await openLoop(pool, { rate, durationMs: 3000, make, label: 'warm-up', log: () => {} });
  await sleep(1000);
  const machineBefore = machineTicks();
  const before = cpu();
  const databaseBefore = databaseCpu();
  const delivered0 = (await receiver.stats()).total;
  const durationMs = seconds * 1000;
  const run = max
    ? await closedLoop(pool, { concurrency: 32, durationMs, maxCount: 2_000_000, make, label: 'run' })
    : await openLoop(pool, { rate, durationMs, make, label: 'run', log: () => {} });
  const after = cpu();
  const machineAfter = machineTicks();
  const databaseAfter = databaseCpu();
  const delivered = (await receiver.stats()).total - delivered0;
  const per = (ms: number) => ((ms * 1000) / run.ok).toFixed(0);
  const idle = (100 * (machineAfter.idle - machineBefore.idle)) / (machineAfter.total - machineBefore.total);
  const what = max
    ? `closed loop for ${seconds} s: ${(run.ok / seconds).toFixed(0)} published/s, ${(delivered / seconds).toFixed(0)} delivered/s, the machine ${idle.toFixed(0)} % idle`
    : `${rate} events/s for ${seconds} s: ${run.ok} published`;
  const inDatabase = db.server ? `; PostgreSQL ${per(databaseAfter - databaseBefore)} µs` : '';
  console.log(
    `${what}; CPU per event: main thread ${per(after.mainMs - before.mainMs)} µs, all threads ${per(after.totalMs - before.totalMs)} µs${inDatabase}`,
  );
  // Only answered publishes are counted above: any others are said, not left out silently.
  if (Object.keys(run.failures).length > 0)
    console.log(`not published: ${JSON.stringify(run.failures)}; the first: ${run.firstFailure}`);
  await sleep(1000);
  const idle0 = cpu();
  await sleep(5000);
  const idle1 = cpu();
  console.log(
    `idle afterwards: main thread ${((idle1.mainMs - idle0.mainMs) / 5).toFixed(0)} ms/s, all threads ${((idle1.totalMs - idle0.totalMs) / 5).toFixed(0)} ms/s`,
  );
} finally {
  await balanced?.destroy();
  for (const s of services.reverse()) await s.dispose();
  await receiver.stop();
  db.server?.stop();
  removeDir(tls.dir);
}
