// The CLI under test as a real child process against a real `sensorcloud serve` on a loopback port, each test file
// with its own service, data dir and XDG_CONFIG_HOME. `api` calls the service directly (Basic Auth) to seed and to
// check what the CLI did.
//
// The CLI is the one users run, bin/sensorcloud.js on the built dist/ (helpers/serve-process.ts says why); it also
// starts in ~0.15 s where the sources through the tsx loader took ~0.65 s, and a file spawns it ~100 times.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { outputOf } from '../helpers/child-output.ts';
import { CLI_COMMAND, ROOT, assertServiceBuilt, freePort, serve } from '../helpers/serve-process.ts';

export interface Bootstrap {
  baseUrl: string;
  organization: string;
  project: string;
  serviceAccount: { name: string; email: string; keyId: string; secret: string };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Added to (or, with undefined values, removed from) the file's CLI environment. */
  env?: Record<string, string | undefined>;
  /** Written to the child's stdin, which is then closed. */
  input?: string;
  /** Default 30 s: the child is killed and the run fails after it. */
  timeoutMs?: number;
}

export interface Service {
  url: string;
  port: number;
  dataDir: string;
  boot: Bootstrap;
  projectId: string;
  /** The CLI's environment: a fresh XDG_CONFIG_HOME, no SENSORCLOUD_* variables of the caller. */
  cliEnv: Record<string, string>;
  configHome: string;
  run(args: string[], options?: RunOptions): Promise<RunResult>;
  /** Runs and parses stdout as one JSON document; fails with the output when the exit code is not 0. */
  json<T = any>(args: string[], options?: RunOptions): Promise<T>;
  /** A direct API call with the bootstrap key (Basic Auth); resolves to status and body. */
  api<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  /** Every stdout and stderr the CLI printed in this file, to check no secret leaked. */
  transcript: string[];
}

/** The caller's environment without anything that would configure the CLI or the service. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('SENSORCLOUD_') || k === 'NO_COLOR' || k === 'FORCE_COLOR') continue;
    env[k] = v;
  }
  return env;
}

// Registered at import (a file's top level): after() called inside a hook would run as soon as that hook ends.
const cleanups: Array<() => void> = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** The command line of the CLI under test, as a user runs it. */
export function cliCommand(): string[] {
  assertServiceBuilt();
  return [...CLI_COMMAND];
}

export function runCli(
  args: string[],
  env: Record<string, string | undefined>,
  options: RunOptions = {},
): Promise<RunResult> {
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...env, ...options.env })) if (v !== undefined) childEnv[k] = v;
  const [node, ...cli] = cliCommand();
  const child = spawn(node!, [...cli, ...args], { cwd: ROOT, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  return outputOf(child, `sensorcloud ${args.join(' ')}`, options.input ?? '', options.timeoutMs ?? 30_000).then(
    (r) => ({ ...r, code: r.code ?? -1 }),
  );
}

export async function startService(extraEnv: Record<string, string> = {}): Promise<Service> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-cli-'));
  const configHome = join(dataDir, 'config');
  const port = await freePort();
  const child = await serve({
    ...cleanEnv(),
    PORT: String(port),
    SENSORCLOUD_DATA_DIR: dataDir,
    SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
    LOG_LEVEL: 'error',
    SENSORCLOUD_RATE_LIMIT: 'off',
    ...extraEnv,
  });
  cleanups.push(() => {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')) as Bootstrap;
  const url = `http://127.0.0.1:${port}`;
  const cliEnv = { ...cleanEnv(), XDG_CONFIG_HOME: configHome };
  const transcript: string[] = [];
  const auth = `Basic ${Buffer.from(`${boot.serviceAccount.keyId}:${boot.serviceAccount.secret}`).toString('base64')}`;
  const service: Service = {
    url,
    port,
    dataDir,
    boot,
    projectId: boot.project.split('/')[1]!,
    cliEnv,
    configHome,
    transcript,
    async run(args, options) {
      const result = await runCli(args, cliEnv, options);
      transcript.push(result.stdout, result.stderr);
      return result;
    },
    async json(args, options) {
      const result = await service.run([...args, '--json'], options);
      if (result.code !== 0)
        throw new Error(
          `sensorcloud ${args.join(' ')} --json exited ${result.code}\n${result.stdout}\n${result.stderr}`,
        );
      try {
        return JSON.parse(result.stdout);
      } catch {
        throw new Error(`sensorcloud ${args.join(' ')} --json printed no single JSON document:\n${result.stdout}`);
      }
    },
    async api(method, path, body) {
      const res = await fetch(`${url}/v2/${path}`, {
        method,
        headers: { authorization: auth },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    },
  };
  return service;
}

/** Environment that points the CLI at the service with the bootstrap key, without any profile. */
export function envCredentials(s: Service): Record<string, string> {
  return {
    SENSORCLOUD_URL: s.url,
    SENSORCLOUD_KEY_ID: s.boot.serviceAccount.keyId,
    SENSORCLOUD_KEY_SECRET: s.boot.serviceAccount.secret,
    SENSORCLOUD_SERVICE_ACCOUNT: s.boot.serviceAccount.email,
  };
}

/** Waits for a value (test/helpers/until.ts); the CLI's tests import it from here with the rest of their harness. */
export { waitFor } from '../helpers/until.ts';
