// The outputs of a run: the summary table on stdout, bench/results/latest.json, and the figures section of
// docs/benchmarks.md (between the bench:start/bench:end markers).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import type { ScenarioResult, Settings } from './context.ts';
import { BENCH_DIR, ROOT_DIR } from './procs.ts';

export interface Machine {
  nproc: number;
  cpuModel: string;
  memoryMB: number;
  node: string;
  kernel: string;
  loadAverageAtStart: number;
}

export function machineInfo(): Machine {
  let nproc = cpus().length;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim()) || nproc;
  } catch {
    // nproc missing: os.cpus() is close enough
  }
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpuModel;
  } catch {
    // not Linux
  }
  return {
    nproc,
    cpuModel,
    memoryMB: Math.round(totalmem() / 1048576),
    node: process.version,
    kernel: `Linux ${release()}`,
    loadAverageAtStart: Math.round(loadavg()[0]! * 100) / 100,
  };
}

export interface RunReport {
  suite: 'sensorcloud-bench';
  mode: 'full' | 'quick';
  date: string;
  complete: boolean;
  machine: Machine;
  settings: Settings;
  durationSeconds: number;
  scenarios: ScenarioResult[];
}

const MARK: Record<ScenarioResult['status'], string> = {
  pass: 'pass',
  fail: 'FAIL',
  info: '—',
  skipped: 'skipped',
  error: 'ERROR',
  incomplete: 'incomplete',
};

export function printSummary(report: RunReport, write: (line: string) => void): void {
  const rows = report.scenarios.map((s) => [
    s.title,
    s.status === 'skipped' || s.status === 'error' ? (s.notes[0] ?? '') : s.headline,
    s.goal ?? '',
    MARK[s.status],
  ]);
  const head = ['scenario', 'figure', 'goal', 'result'];
  const widths = head.map((h, i) => Math.min(70, Math.max(h.length, ...rows.map((r) => r[i]!.length))));
  const line = (cells: string[]) =>
    cells.map((c, i) => (c.length > widths[i]! ? `${c.slice(0, widths[i]! - 1)}…` : c.padEnd(widths[i]!))).join('  ');
  write('');
  write(line(head));
  write(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) write(line(r));
  write('');
}

export function writeResults(report: RunReport): string {
  const dir = join(BENCH_DIR, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'latest.json');
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  return file;
}

const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

function latencyTable(
  latency: Record<
    string,
    {
      ackLatency: { p50: number; p99: number; max: number };
      acked: number;
      missing: number;
      cpuPerEventUs?: { main: number; total: number } | null;
    }
  >,
): string[] {
  const out = [
    '| offered events/s | p50 | p99 | max | acknowledged | missing | CPU per event (main thread) |',
    '|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [rate, l] of Object.entries(latency)) {
    const ms = (x: number) =>
      `${x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US')} ms`;
    const cpu = l.cpuPerEventUs ? `${l.cpuPerEventUs.total} µs (${l.cpuPerEventUs.main} µs)` : '—';
    out.push(
      `| ${Number(rate).toLocaleString('en-US')} | ${ms(l.ackLatency.p50)} | ${ms(l.ackLatency.p99)} | ${ms(l.ackLatency.max)} | ${l.acked.toLocaleString('en-US')} | ${l.missing.toLocaleString('en-US')} | ${cpu} |`,
    );
  }
  return out;
}

export function figuresSection(report: RunReport): string {
  const m = report.machine;
  const lines: string[] = [START, '## Figures', ''];
  lines.push(
    `Run of ${report.date.slice(0, 10)} (${report.date}), **${report.mode === 'quick' ? 'quick mode: short runs and a tenth of the memory fixtures, for checking the harness only; not comparable with a full run' : 'full suite'}**, ${report.durationSeconds.toFixed(0)} s.`,
  );
  lines.push('');
  lines.push(
    `Machine: ${m.nproc} × ${m.cpuModel}, ${Math.round(m.memoryMB / 1024)} GB RAM, ${m.kernel}, Node ${m.node}; load average ${m.loadAverageAtStart} at start. Concurrency ${report.settings.concurrency}.`,
  );
  if (m.loadAverageAtStart > 0.5)
    lines.push(
      '',
      `> The machine was not idle when the run started (load ${m.loadAverageAtStart}); the figures are lower than this code can do.`,
    );
  lines.push('', '| Scenario | Figure | Goal | Result |', '|---|---|---|---|');
  for (const s of report.scenarios) {
    const figure = s.status === 'skipped' || s.status === 'error' ? (s.notes[0] ?? '') : s.headline;
    lines.push(`| ${s.title} | ${figure.replace(/\|/g, '/')} | ${s.goal ?? '—'} | ${MARK[s.status]} |`);
  }
  for (const s of report.scenarios) {
    lines.push('', `### ${s.title}`, '');
    if (s.status === 'skipped' || s.status === 'error') {
      lines.push(`${s.status}: ${s.notes[0] ?? ''}`);
      continue;
    }
    lines.push(`- ${s.headline}`);
    for (const c of s.checks)
      lines.push(
        `- ${c.what}: **${c.value ?? 'not measured'}** (goal ${c.goal}) — ${c.pass === null ? 'not measured' : c.pass ? 'pass' : 'fail'}`,
      );
    if (s.ratioToCeiling !== null) lines.push(`- ratio to the ceiling: ${s.ratioToCeiling}`);
    const latency = (s.figures as { latency?: Parameters<typeof latencyTable>[0] }).latency;
    const isLatencyMap =
      latency &&
      typeof latency === 'object' &&
      Object.values(latency).every((l) => typeof l === 'object' && l !== null && 'ackLatency' in l);
    if (isLatencyMap) lines.push('', 'Publish → acknowledgement latency:', '', ...latencyTable(latency), '');
    for (const n of s.notes) lines.push(`- note: ${n}`);
  }
  lines.push(
    '',
    'Reproduce (on an otherwise idle machine):',
    '',
    '```sh',
    'npm ci',
    'npm run bench              # whole suite, about 10 minutes',
    'npm run bench -- --quick   # harness check, under 2 minutes',
    'npm run bench -- --only e2e,api   # some scenarios (the ceiling is added when a ratio needs it)',
    '```',
    '',
    'Every figure of this run, with the settings, is in `bench/results/latest.json`.',
    END,
  );
  return lines.join('\n');
}

/** Replaces the figures section of docs/benchmarks.md (appends it when the markers are missing). */
export function rewriteDocs(report: RunReport): string {
  const file = join(ROOT_DIR, 'docs', 'benchmarks.md');
  const section = figuresSection(report);
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const a = current.indexOf(START);
  const b = current.indexOf(END);
  const next =
    a !== -1 && b > a
      ? current.slice(0, a) + section + current.slice(b + END.length)
      : `${current.trimEnd()}\n\n${section}\n`;
  writeFileSync(file, next);
  return file;
}
