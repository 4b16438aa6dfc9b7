// Starts the real service (`node bin/sensorcloud.js serve`) as a separate process on a fresh temp data dir and a
// free loopback port, waits for /healthz, reads bootstrap.json, and stops it (SIGTERM, then SIGKILL).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { removeDir, ROOT_DIR, stopChild, track, trackDir } from './procs.ts';
import type { BootstrapFile } from '../../src/services/bootstrap.ts';

/** bootstrap.json, as the service writes it. */
export type Bootstrap = BootstrapFile;

export interface ServiceOptions {
  caFile: string;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  env?: Record<string, string>;
  /** Another process of a cluster already set the database up: its bootstrap.json (this one writes none). */
  joining?: Bootstrap;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const a = s.address();
  const port = typeof a === 'object' && a ? a.port : 0;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ServiceProcess {
  child: ChildProcess | null = null;
  bootstrap!: Bootstrap;
  /** Pool for setup and load, concurrency set by the runner. */
  pool!: Pool;
  private stderrTail: string[] = [];
  /** Warnings and errors the service logged on stdout (pino level 40 and up, or a line that is not pino's). */
  private logCount = 0;
  private logFirst: string[] = [];
  private logPartial = '';
  /** Milliseconds the last start took until /healthz answered. */
  startMs = 0;

  private constructor(
    readonly dataDir: string,
    readonly port: number,
    private readonly options: ServiceOptions,
    private readonly connections: number,
  ) {}

  static async start(options: ServiceOptions, connections: number): Promise<ServiceProcess> {
    const dataDir = trackDir(mkdtempSync(join(tmpdir(), 'sc-bench-data-')));
    const svc = new ServiceProcess(dataDir, await freePort(), options, connections);
    await svc.launch();
    return svc;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get pid(): number {
    return this.child?.pid ?? 0;
  }
  get project(): string {
    return this.bootstrap.project;
  }
  get basicAuth(): string {
    const sa = this.bootstrap.serviceAccount;
    return `Basic ${Buffer.from(`${sa.keyId}:${sa.secret}`).toString('base64')}`;
  }
  get dbFile(): string {
    return join(this.dataDir, 'sensorcloud.db');
  }
  /** How many warnings and errors the service logged since it was first started, and the first 100 of them. */
  logged(): { count: number; first: string[] } {
    return { count: this.logCount, first: [...this.logFirst] };
  }
  tail(): string {
    return this.stderrTail.join('').slice(-2000);
  }

  private async launch(): Promise<void> {
    const t0 = performance.now();
    this.stderrTail = [];
    const child = track(
      spawn(process.execPath, [...(this.options.nodeArgs ?? []), join(ROOT_DIR, 'bin', 'sensorcloud.js'), 'serve'], {
        cwd: ROOT_DIR,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          PORT: String(this.port),
          HOST: '127.0.0.1',
          SENSORCLOUD_DATA_DIR: this.dataDir,
          SENSORCLOUD_RATE_LIMIT: 'off',
          SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
          SENSORCLOUD_CA_FILE: this.options.caFile,
          SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
          LOG_LEVEL: 'warn',
          ...this.options.env,
        },
      }),
    );
    this.child = child;
    const keep = (chunk: Buffer) => {
      this.stderrTail.push(chunk.toString('utf8'));
      if (this.stderrTail.length > 50) this.stderrTail.shift();
    };
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (this.logPartial + chunk.toString('utf8')).split('\n');
      this.logPartial = lines.pop()!;
      for (const line of lines) {
        const level = /^\{"level":(\d+)/.exec(line);
        if (line === '' || (level && Number(level[1]) < 40)) continue;
        this.logCount++;
        if (this.logFirst.length < 100) this.logFirst.push(line.slice(0, 2000));
      }
    });
    child.stderr!.on('data', keep);

    this.pool = new Pool(this.url, { connections: this.connections, pipelining: 1, keepAliveTimeout: 30_000 });
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`service exited during start (${child.exitCode ?? child.signalCode}): ${this.tail()}`);
      }
      try {
        const r = await this.pool.request({ path: '/healthz', method: 'GET', headersTimeout: 2000, bodyTimeout: 2000 });
        await r.body.dump();
        if (r.statusCode === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`service did not answer /healthz within 60 s: ${this.tail()}`);
      await sleep(100);
    }
    this.startMs = performance.now() - t0;
    if (this.options.joining) {
      this.bootstrap = this.options.joining;
      return;
    }
    const file = join(this.dataDir, 'bootstrap.json');
    if (!existsSync(file)) throw new Error('service started but wrote no bootstrap.json');
    this.bootstrap = JSON.parse(readFileSync(file, 'utf8')) as Bootstrap;
  }

  /** Graceful stop (the service checkpoints and closes its store); the data dir stays. */
  async stop(): Promise<void> {
    await this.pool?.destroy().catch(() => {});
    if (this.child) await stopChild(this.child, 15_000);
    this.child = null;
  }

  /** SIGKILLs the service (no shutdown work at all) and starts it again on the same data dir and port. */
  async crash(): Promise<void> {
    const child = this.child;
    if (child) {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null)
        await new Promise((resolve) => child.once('exit', resolve));
    }
    await this.pool?.destroy().catch(() => {});
    this.child = null;
    await this.launch();
  }

  /** Stops and starts again on the same data dir and port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  /** Resident set size of the service process in bytes (VmRSS), 0 when not running. */
  rss(): number {
    return readRss(this.pid);
  }

  /** Stops the service and removes its data dir. */
  async dispose(): Promise<void> {
    await this.stop();
    removeDir(this.dataDir);
  }
}

export function readRss(pid: number): number {
  if (!pid) return 0;
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples a process's RSS every `everyMs` until stopped; returns peak and last. */
export function sampleRss(
  pid: () => number,
  everyMs = 200,
): { stop(): { peak: number; last: number; samples: number } } {
  let peak = 0;
  let last = 0;
  let samples = 0;
  const tick = () => {
    last = readRss(pid());
    if (last > peak) peak = last;
    samples++;
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    stop() {
      clearInterval(timer);
      tick();
      return { peak, last, samples };
    },
  };
}
