// One process per data dir (issue 22): a second server on the same data dir stops before it listens, with one line
// and exit 2; the lock is the operating system's, so it goes with the first process even when that is SIGKILLed.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort, serve } from '../helpers/serve-process.ts';
import { cleanEnv, runCli } from './cli-process.ts';

describe('sad', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-lock-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a second server is refused while the first runs, and starts once the first was SIGKILLed', {
    timeout: 120_000,
  }, async () => {
    const env = (port: number) => cleanEnv({ PORT: String(port), SENSORCLOUD_DATA_DIR: dataDir, LOG_LEVEL: 'error' });
    const first = await serve(env(await freePort()));
    const boot = readFileSync(join(dataDir, 'bootstrap.json'), 'utf8');
    try {
      const secondPort = await freePort();
      const second = await runCli(['serve'], env(secondPort));
      assert.equal(second.code, 2);
      assert.equal(
        second.stderr,
        `sensorcloud: another Sensor Cloud process (a server or an admin command) is using the data dir ${dataDir}: stop it first, or point SENSORCLOUD_DATA_DIR at another directory\n`,
      );
      // Refused before it listened.
      await assert.rejects(fetch(`http://127.0.0.1:${secondPort}/healthz`));
    } finally {
      first.kill('SIGKILL');
      if (first.exitCode === null && first.signalCode === null) await once(first, 'exit');
    }
    const port = await freePort();
    const third = await serve(env(port));
    try {
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
      assert.equal(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'), boot, 'the installation is the same one');
    } finally {
      third.kill('SIGTERM');
      await once(third, 'exit');
    }
  });
});
