// `events tail` (and `listen`) against a server that is down: the first failed connection is said at once, with
// --quiet too, and every retry after it; a stopped server once looked like a command that hangs for 2.5 minutes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { freePort } from '../helpers/serve-process.ts';
import { cliCommand, waitFor } from './harness.ts';

describe('errors', () => {
  it('a server that is down is said at the first failure and at each retry, --quiet or not', {
    timeout: 60_000,
  }, async () => {
    const port = await freePort(); // nothing listens there
    for (const flags of [[], ['--quiet']]) {
      const [node, ...cli] = cliCommand();
      const child = spawn(node!, [...cli, 'events', 'tail', '--project', 'p1', ...flags], {
        env: {
          ...process.env,
          SENSORCLOUD_URL: `http://127.0.0.1:${port}`,
          SENSORCLOUD_KEY_ID: 'k',
          SENSORCLOUD_KEY_SECRET: 's',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      try {
        // The pauses are 0.5 s, then 1 s: two lines within 5 s.
        await waitFor(
          `two reconnect lines (${flags.join(' ')})`,
          () => (stderr.split('\n').length > 2 ? true : undefined),
          5_000,
        );
        const [first, second] = stderr.split('\n');
        assert.equal(
          first,
          `cannot reach http://127.0.0.1:${port}: ECONNREFUSED (is the server running?); reconnecting in 0.5 s (attempt 1 of 10, Ctrl-C to stop)`,
        );
        assert.equal(
          second,
          `cannot reach http://127.0.0.1:${port}: ECONNREFUSED; reconnecting in 1.0 s (attempt 2 of 10, Ctrl-C to stop)`,
        );
      } finally {
        child.kill('SIGINT');
        await once(child, 'exit');
      }
    }
  });
});
