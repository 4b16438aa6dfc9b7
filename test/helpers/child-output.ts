// What a child process that runs to its end printed: its input written, stdout and stderr gathered, and its exit
// code once it closes. Killed after `timeoutMs`, which fails the test with what it had printed.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function outputOf(
  child: ChildProcessWithoutNullStreams,
  what: string,
  input: string,
  timeoutMs: number,
): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not end within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
