// Every process and temp dir the benchmark makes is registered here, so an exit, Ctrl-C or crash of the runner
// never leaves a service, receiver, relay or data dir behind.
import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let hooked = false;

export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT_DIR = join(BENCH_DIR, '..');

function killAll(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  children.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping every process it started\n`);
      killAll();
      process.exit(130);
    });
  }
  process.on('uncaughtException', (err) => {
    process.stderr.write(`bench: uncaught ${err.stack ?? err}\n`);
    killAll();
    process.exit(1);
  });
}

/** Registers a child for cleanup; it is forgotten once it exits. */
export function track(child: ChildProcess): ChildProcess {
  hookExit();
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Registers a temp dir to remove when the runner exits, however it exits (except SIGKILL). */
export function trackDir(dir: string): string {
  hookExit();
  tempDirs.add(dir);
  return dir;
}

/** Removes a temp dir now. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

/** Stops a child: SIGTERM, then SIGKILL after `graceMs`. Resolves when it has exited. */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

interface RpcReply {
  id: number;
  result?: unknown;
  error?: string;
}

/** A TypeScript helper process (receiver, relay, hello-world) driven over IPC. */
export class HelperProcess<Ready = unknown> {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  private constructor(
    readonly child: ChildProcess,
    readonly ready: Ready,
  ) {
    child.on('message', (msg: RpcReply) => {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error !== undefined) p.reject(new Error(msg.error));
      else p.resolve(msg.result);
    });
    child.once('exit', (code, signal) => {
      for (const p of this.pending.values()) p.reject(new Error(`helper exited (${code ?? signal})`));
      this.pending.clear();
    });
  }

  /** Forks `bench/lib/<file>` through tsx and waits for its `{ready}` message (30 s at most). */
  static async start<R>(file: string, args: string[] = []): Promise<HelperProcess<R>> {
    const child = track(
      fork(join(BENCH_DIR, 'lib', file), args, {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        cwd: ROOT_DIR,
      }),
    );
    const ready = await new Promise<R>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${file} did not become ready in 30 s`)), 30_000);
      child.once('message', (msg: { ready?: R }) => {
        clearTimeout(timer);
        resolve(msg.ready as R);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${file} exited with ${code} before it was ready`));
      });
    });
    return new HelperProcess<R>(child, ready);
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  call<T>(cmd: string, args: unknown = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, cmd, args });
    });
  }

  stop(): Promise<void> {
    return stopChild(this.child, 2000);
  }
}

/** Child side: answers `{id, cmd, args}` messages with the handler's result; exits when the parent goes away. */
export function serveHelper(ready: unknown, handlers: Record<string, (args: any) => unknown>): void {
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (msg: { id: number; cmd: string; args: unknown }) => {
    const handler = handlers[msg.cmd];
    try {
      if (!handler) throw new Error(`unknown command ${msg.cmd}`);
      const result = await handler(msg.args);
      process.send!({ id: msg.id, result: result ?? null });
    } catch (err) {
      process.send!({ id: msg.id, error: (err as Error).message });
    }
  });
  process.send!({ ready });
}

/** CPU time a process has used so far, in ms: its main thread alone, and all its threads (Linux /proc). */
export interface CpuTimes {
  mainMs: number;
  totalMs: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

function threadCpuMs(pid: number, tid: string): number {
  // Fields after the ")" that ends the command name: state is field 3, utime 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

export function cpuTimes(pid: number): CpuTimes | null {
  if (!pid) return null;
  try {
    let totalMs = 0;
    let mainMs = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const ms = threadCpuMs(pid, tid);
      totalMs += ms;
      if (tid === String(pid)) mainMs = ms;
    }
    return { mainMs, totalMs };
  } catch {
    return null;
  }
}

/**
 * CPU time (ms) a PostgreSQL server has used so far: the postmaster, every process it runs now, and those that have
 * exited (the postmaster's children's time, cutime and cstime: a connection closed meanwhile must not take its
 * backend's time out of the sum) (Linux /proc).
 */
export function postgresCpuMs(dataDir: string): number {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let ms = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the ")" that ends the command name: ppid is field 4, utime 14, stime 15, cutime 16, cstime 17
      // (10 ms ticks).
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(entry) === postmaster)
        ms += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
      else if (Number(fields[1]) === postmaster) ms += (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      // exited meanwhile
    }
  }
  return ms;
}

/** The machine's CPU ticks so far (Linux /proc/stat): idle (with I/O wait) and all. */
export function machineTicks(): { idle: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { idle: fields[3]! + fields[4]!, total: fields.reduce((a, b) => a + b, 0) };
}
