// `npm run bench:cost [-- <events/s>|max [seconds]]`: the service's CPU per event at a steady offered rate, for
// comparing two versions of the code on a machine whose speed drifts (throughput figures moved ±30 % between
// runs; this one moves ±2 %). Starts the service and the receiver as `npm run bench` does, one signed
// connector, 10 devices; a 3 s warm-up, then an open loop at the rate; prints the main thread's and all threads'
// CPU time per published event (from /proc), then the idle cost per second. `max` runs the closed loop of the
// end-to-end scenario instead (32 concurrent publishers) and also prints published and delivered per second.
import { createConnectors, createDevices, publishRequests } from './lib/api.ts';
import { closedLoop, openLoop } from './lib/loadgen.ts';
import { Receiver } from './lib/receiver.ts';
import { ServiceProcess } from './lib/service.ts';
import { createBenchTls } from './lib/tls.ts';
import { cpuTimes, removeDir } from './lib/procs.ts';

const max = process.argv[2] === 'max';
const rate = max ? 1000 : Number(process.argv[2] ?? 1000);
const seconds = Number(process.argv[3] ?? 10);
if (!(rate > 0 && rate <= 20_000) || !(seconds > 0 && seconds <= 120)) {
  process.stderr.write('usage: npm run bench:cost -- [events/s, 1-20000, or max] [seconds, 1-120]\n');
  process.exit(2);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tls = createBenchTls();
const receiver = await Receiver.start(tls);
// BENCH_PROFILE_DIR=dir: the service runs with --cpu-prof and writes its profiles there.
const profileDir = process.env.BENCH_PROFILE_DIR;
const svc = await ServiceProcess.start({ caFile: tls.caFile, nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [] }, 32);
try {
  const devices = await createDevices(svc, 10);
  await createConnectors(svc, [{ url: receiver.url('/cost'), signatureSecret: 'bench-signature-secret', displayName: 'cost' }]);
  const make = publishRequests(devices, svc.basicAuth);
  await openLoop(svc.pool, { rate, durationMs: 3000, make, label: 'warm-up', log: () => {} });
  await sleep(1000);
  const before = cpuTimes(svc.pid)!;
  const delivered0 = (await receiver.stats()).total;
  const durationMs = seconds * 1000;
  const run = max
    ? await closedLoop(svc.pool, { concurrency: 32, durationMs, maxCount: 2_000_000, make, label: 'run' })
    : await openLoop(svc.pool, { rate, durationMs, make, label: 'run', log: () => {} });
  const after = cpuTimes(svc.pid)!;
  const delivered = (await receiver.stats()).total - delivered0;
  const per = (ms: number) => ((ms * 1000) / run.ok).toFixed(0);
  const what = max ? `closed loop for ${seconds} s: ${(run.ok / seconds).toFixed(0)} published/s, ${(delivered / seconds).toFixed(0)} delivered/s` : `${rate} events/s for ${seconds} s: ${run.ok} published`;
  console.log(`${what}; CPU per event: main thread ${per(after.mainMs - before.mainMs)} µs, all threads ${per(after.totalMs - before.totalMs)} µs`);
  await sleep(1000);
  const idle0 = cpuTimes(svc.pid)!;
  await sleep(5000);
  const idle1 = cpuTimes(svc.pid)!;
  console.log(`idle afterwards: main thread ${((idle1.mainMs - idle0.mainMs) / 5).toFixed(0)} ms/s, all threads ${((idle1.totalMs - idle0.totalMs) / 5).toFixed(0)} ms/s`);
} finally {
  await svc.dispose();
  await receiver.stop();
  removeDir(tls.dir);
}
