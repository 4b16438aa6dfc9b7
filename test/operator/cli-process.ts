// `sensorcloud` from source as a child process that runs to its end (a failed start, an admin command), and the
// environment such a child gets: the caller's without anything that would configure the service or the CLI.
import { spawn } from 'node:child_process';
import { after } from 'node:test';
import { CLI_COMMAND, ROOT } from '../helpers/serve-process.ts';

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The test runner's environment without PORT, HOST, LOG_LEVEL and SENSORCLOUD_*, with heartbeats off. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('SENSORCLOUD_') || k === 'PORT' || k === 'HOST' || k === 'LOG_LEVEL') continue;
    env[k] = v;
  }
  return { ...env, SENSORCLOUD_HEARTBEAT_INTERVAL: '0', ...extra };
}

const running = new Set<ReturnType<typeof spawn>>();
after(() => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Runs `sensorcloud <args>` to its end (killed after `timeoutMs`, default 60 s). `uid` runs it as another user (the
 * tests that need a directory this user cannot write, when they run as root, for whom every directory is writable).
 */
export function runCli(args: string[], env: Record<string, string>, options: { input?: string; uid?: number; timeoutMs?: number } = {}): Promise<Finished> {
  const child = spawn(CLI_COMMAND[0]!, [...CLI_COMMAND.slice(1), ...args], {
    cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.uid } : {}),
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(options.input ?? '');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sensorcloud ${args.join(' ')} did not end within ${options.timeoutMs ?? 60_000} ms\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once('close', (code) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}
