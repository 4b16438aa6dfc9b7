// `npm run bench [-- --quick] [--only a,b] [--concurrency n] [--profile] [--no-docs]`: starts the receiver,
// runs each scenario against the real service started as a separate process, prints progress and a summary,
// writes bench/results/latest.json and the figures section of docs/benchmarks.md. Benchmarks, not tests: a
// missed goal is reported, never thrown.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ApiFailure, Skip } from './lib/api.ts';
import { settingsFor, ScenarioOutput, type BenchContext, type Scenario, type ScenarioResult } from './lib/context.ts';
import { BENCH_DIR, removeDir } from './lib/procs.ts';
import { Receiver } from './lib/receiver.ts';
import { machineInfo, printSummary, rewriteDocs, writeResults, type RunReport } from './lib/report.ts';
import { ServiceProcess } from './lib/service.ts';
import { createBenchTls } from './lib/tls.ts';
import { api } from './scenarios/api.ts';
import { backlog } from './scenarios/backlog.ts';
import { ceiling } from './scenarios/ceiling.ts';
import { deliveryLog, replay } from './scenarios/delivery-log.ts';
import { endToEnd } from './scenarios/end-to-end.ts';
import { fanOut } from './scenarios/fan-out.ts';
import { isolation } from './scenarios/isolation.ts';
import { memory } from './scenarios/memory.ts';
import { postgres } from './scenarios/postgres.ts';
import { publishPath } from './scenarios/publish.ts';
import { rate } from './scenarios/rate.ts';
import { rules } from './scenarios/rules.ts';

const SCENARIOS: Scenario[] = [
  ceiling,
  endToEnd,
  publishPath,
  fanOut,
  isolation,
  backlog,
  api,
  memory,
  postgres,
  deliveryLog,
  replay,
  rate,
  rules,
];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    concurrency: { type: 'string', default: '32' },
    profile: { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  process.stdout.write(`usage: npm run bench -- [--quick] [--only ${SCENARIOS.map((s) => s.name).join(',')}] [--concurrency 32] [--profile] [--no-docs]
  --quick         short runs and smaller fixtures (harness check, < 2 min)
  --only a,b      run these scenarios (the ceiling is added when one reports a ratio to it)
  --profile       run the service with --cpu-prof; profiles go to bench/results/profiles/
  --no-docs       do not rewrite the figures section of docs/benchmarks.md
`);
  process.exit(0);
}

const log = (line: string) => process.stdout.write(`${line}\n`);
const concurrency = Number(values.concurrency);
if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) {
  process.stderr.write('--concurrency must be an integer 1-1024\n');
  process.exit(2);
}
const settings = settingsFor(values.quick, concurrency);

let selected = SCENARIOS;
if (values.only) {
  const names = values.only
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length) {
    process.stderr.write(
      `unknown scenario(s): ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}\n`,
    );
    process.exit(2);
  }
  const wanted = new Set(names);
  if (SCENARIOS.some((s) => wanted.has(s.name) && s.needsCeiling)) wanted.add('ceiling');
  selected = SCENARIOS.filter((s) => wanted.has(s.name));
}

const machine = machineInfo();
const started = Date.now();
log(`Sensor Cloud benchmark (${values.quick ? 'quick' : 'full'}): ${selected.map((s) => s.name).join(', ')}`);
log(
  `machine: ${machine.nproc} × ${machine.cpuModel}, Node ${machine.node}, load ${machine.loadAverageAtStart}; concurrency ${concurrency}`,
);
if (machine.loadAverageAtStart > 0.5) log('warning: the machine is busy; figures will be low and noisy');

const tls = createBenchTls();
const receiver = await Receiver.start(tls);
const profileDir = join(BENCH_DIR, 'results', 'profiles');
if (values.profile) mkdirSync(profileDir, { recursive: true });
const serviceNodeArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];

const ctx: BenchContext = {
  settings,
  tls,
  receiver,
  log,
  ceiling: { throughput: null },
  serviceNodeArgs,
  startService: async (env) => {
    const svc = await ServiceProcess.start({ caFile: tls.caFile, nodeArgs: serviceNodeArgs, env }, concurrency);
    log(`  service up on ${svc.url} in ${(svc.startMs / 1000).toFixed(1)} s`);
    return svc;
  },
};

const results: ScenarioResult[] = [];
try {
  for (const [i, scenario] of selected.entries()) {
    log('');
    log(`[${i + 1}/${selected.length}] ${scenario.title}${scenario.goal ? ` (goal ${scenario.goal})` : ''}`);
    const out = new ScenarioOutput();
    const t0 = Date.now();
    let status: ScenarioResult['status'];
    try {
      await scenario.run(ctx, out);
      if (out.checks.some((c) => c.pass === false)) status = 'fail';
      else if (out.checks.some((c) => c.pass === null)) status = 'incomplete';
      else if (out.checks.length > 0) status = 'pass';
      else status = 'info';
    } catch (err) {
      if (err instanceof Skip) {
        status = 'skipped';
        out.notes.unshift(`skipped: ${err.message}`);
      } else {
        status = 'error';
        out.notes.unshift(
          `error: ${err instanceof ApiFailure ? err.message : ((err as Error).stack ?? String(err))}`.slice(0, 1500),
        );
      }
    }
    await receiver.up().catch(() => {});
    const result: ScenarioResult = {
      name: scenario.name,
      title: scenario.title,
      status,
      headline: out.headline,
      goal: scenario.goal,
      checks: out.checks,
      ratioToCeiling: out.ratioToCeiling,
      figures: out.figures,
      notes: out.notes,
      durationSeconds: Math.round((Date.now() - t0) / 100) / 10,
    };
    results.push(result);
    const shown = status === 'skipped' || status === 'error' ? out.notes[0]!.split('\n')[0] : out.headline;
    log(`  ${status.toUpperCase()} in ${result.durationSeconds} s: ${shown}`);
  }
} finally {
  await receiver.stop();
  removeDir(tls.dir);
}

const report: RunReport = {
  suite: 'sensorcloud-bench',
  mode: values.quick ? 'quick' : 'full',
  date: new Date(started).toISOString(),
  complete: selected.length === SCENARIOS.length,
  machine,
  settings,
  durationSeconds: Math.round((Date.now() - started) / 100) / 10,
  scenarios: results,
};
printSummary(report, log);
log(`results: ${writeResults(report)}`);
if (!values['no-docs'] && report.complete) log(`figures: ${rewriteDocs(report)}`);
else if (!report.complete) log('docs/benchmarks.md left alone (not every scenario ran)');
if (values.profile) log(`CPU profiles of the service: ${profileDir}`);
log(`done in ${report.durationSeconds.toFixed(0)} s`);
process.exit(0);
