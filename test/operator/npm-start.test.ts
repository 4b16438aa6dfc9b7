// `npm start` is how the README and the deployment guide run the service, and a supervisor (systemd with
// KillMode=process, runit, `docker stop` on a container whose command is `npm start`, a plain `kill`) signals only
// the process it started: npm. npm hands SIGTERM to its script's shell, and a shell running a command does not hand
// it on, so the server went on running without a parent, holding its port and data dir, and the next start was
// refused. The script now execs node, so the signal reaches the server and it stops cleanly.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { until } from '../helpers/until.ts';
import { ROOT, freePort } from '../helpers/serve-process.ts';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('happy', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-npm-start-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('SIGTERM sent to `npm start` alone stops the server cleanly', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const env = {
      ...process.env,
      PORT: String(port),
      SENSORCLOUD_DATA_DIR: dataDir,
      SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
    };
    const npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    npm.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    npm.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    let server = 0;
    try {
      await until('the service listening', () => /listening on/.test(out) || npm.exitCode !== null, 30_000);
      const line = out.split('\n').find((l) => l.includes('listening on'));
      assert.ok(line, `the service did not start: ${out}`);
      server = (JSON.parse(line) as { pid: number }).pid;
      assert.notEqual(server, npm.pid, 'npm runs the server as a child');
      const exited = once(npm, 'exit');
      npm.kill('SIGTERM');
      const [code] = await exited;
      await until('the server gone', () => !alive(server), 10_000);
      assert.match(out, /"signal":"SIGTERM","msg":"shutting down"/);
      assert.equal(code, 0, out);
      // Nothing is left listening on its port.
      const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch((e: Error) => e);
      assert.ok(res instanceof Error, 'nothing listens on the port any more');
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      if (server && alive(server)) process.kill(server, 'SIGKILL');
    }
  });
});
