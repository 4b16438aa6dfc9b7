// `sensorcloud` from source as a child process that runs to its end (a failed start, an admin command), and the
// environment such a child gets: the caller's without anything that would configure the service or the CLI.
import { spawn } from 'node:child_process';
import { after } from 'node:test';
import { outputOf, type Finished } from '../helpers/child-output.ts';
import { CLI_COMMAND, ROOT } from '../helpers/serve-process.ts';

export type { Finished } from '../helpers/child-output.ts';

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
export function runCli(
  args: string[],
  env: Record<string, string>,
  options: { input?: string; uid?: number; timeoutMs?: number } = {},
): Promise<Finished> {
  const child = spawn(CLI_COMMAND[0]!, [...CLI_COMMAND.slice(1), ...args], {
    cwd: ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.uid } : {}),
  });
  running.add(child);
  return outputOf(child, `sensorcloud ${args.join(' ')}`, options.input ?? '', options.timeoutMs ?? 60_000).finally(
    () => running.delete(child),
  );
}
