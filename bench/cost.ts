// `npm run bench:cost [-- <events/s>|max [seconds] [--postgres]]`: the service's CPU per event at a steady offered
// rate, for comparing two versions of the code on a machine whose speed drifts (throughput figures moved ±30 %
// between runs; this one moves ±2 %). Starts the service and the receiver as `npm run bench` does, one signed
// connector, 10 devices; a 3 s warm-up, then an open loop at the rate; prints the main thread's and all threads'
// CPU time per published event (from /proc), then the idle cost per second. `max` runs the closed loop of the
// end-to-end scenario instead (32 concurrent publishers) and also prints published and delivered per second.
// `--postgres`: the service on a durable PostgreSQL server started for the run, whose CPU per event (every backend
// and background process) is printed too.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgresServer, type PostgresServer } from '../test/helpers/postgres-server.ts';
import { createConnectors, createDevices, publishRequests } from './lib/api.ts';
import { closedLoop, openLoop } from './lib/loadgen.ts';
import { Receiver } from './lib/receiver.ts';
import { ServiceProcess } from './lib/service.ts';
import { createBenchTls } from './lib/tls.ts';
import { cpuTimes, postgresCpuMs, removeDir, trackDir } from './lib/procs.ts';

const args = process.argv.slice(2).filter((a) => a !== '--postgres');
const postgres = process.argv.includes('--postgres');
const max = args[0] === 'max';
const rate = max ? 1000 : Number(args[0] ?? 1000);
const seconds = Number(args[1] ?? 10);
if (!(rate > 0 && rate <= 20_000) || !(seconds > 0 && seconds <= 120) || args.length > 2) {
  process.stderr.write('usage: npm run bench:cost -- [events/s, 1-20000, or max] [seconds, 1-120] [--postgres]\n');
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
const svc = await ServiceProcess.start({ caFile: tls.caFile, env: db.env, nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [] }, 32);
try {
  const devices = await createDevices(svc, 10);
  await createConnectors(svc, [{ url: receiver.url('/cost'), signatureSecret: 'bench-signature-secret', displayName: 'cost' }]);
  const make = publishRequests(devices, svc.basicAuth);
  await openLoop(svc.pool, { rate, durationMs: 3000, make, label: 'warm-up', log: () => {} });
  await sleep(1000);
  const before = cpuTimes(svc.pid)!;
  const databaseBefore = databaseCpu();
  const delivered0 = (await receiver.stats()).total;
  const durationMs = seconds * 1000;
  const run = max
    ? await closedLoop(svc.pool, { concurrency: 32, durationMs, maxCount: 2_000_000, make, label: 'run' })
    : await openLoop(svc.pool, { rate, durationMs, make, label: 'run', log: () => {} });
  const after = cpuTimes(svc.pid)!;
  const databaseAfter = databaseCpu();
  const delivered = (await receiver.stats()).total - delivered0;
  const per = (ms: number) => ((ms * 1000) / run.ok).toFixed(0);
  const what = max ? `closed loop for ${seconds} s: ${(run.ok / seconds).toFixed(0)} published/s, ${(delivered / seconds).toFixed(0)} delivered/s` : `${rate} events/s for ${seconds} s: ${run.ok} published`;
  const inDatabase = db.server ? `; PostgreSQL ${per(databaseAfter - databaseBefore)} µs` : '';
  console.log(`${what}; CPU per event: main thread ${per(after.mainMs - before.mainMs)} µs, all threads ${per(after.totalMs - before.totalMs)} µs${inDatabase}`);
  await sleep(1000);
  const idle0 = cpuTimes(svc.pid)!;
  await sleep(5000);
  const idle1 = cpuTimes(svc.pid)!;
  console.log(`idle afterwards: main thread ${((idle1.mainMs - idle0.mainMs) / 5).toFixed(0)} ms/s, all threads ${((idle1.totalMs - idle0.totalMs) / 5).toFixed(0)} ms/s`);
} finally {
  await svc.dispose();
  await receiver.stop();
  db.server?.stop();
  removeDir(tls.dir);
}
