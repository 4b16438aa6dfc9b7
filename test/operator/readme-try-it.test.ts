// The README's "Try it" works as written (issue 22). Its first block is followed: its commands before `npm start`
// run in bash (the example receiver's certificate), and the service is started from source with the settings the
// `npm start` line gives. Its second block is then pasted into bash as it is, in a folder laid out like the
// repository's (`examples/` and `data/`), with one rewrite: the receiver's port 8443 becomes a free port, which the
// receiver reads from PORT as the other examples do, since a fixed port may be taken on a shared machine. The block
// must end with a push that reached the receiver, signed and verified.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { ROOT, freePort, serve } from '../helpers/serve-process.ts';
import { cleanEnv } from './cli-process.ts';

/** The fenced sh blocks of the README's "## Try it" section. */
function tryItBlocks(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Try it\n');
  assert.ok(start >= 0, 'the README has a "Try it" section');
  const end = readme.indexOf('\n## ', start + 1);
  return [...readme.slice(start, end).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** `A=1 B=two npm start` → { A: '1', B: 'two' }. */
function startSettings(line: string): Record<string, string> {
  const words = line.replace(/#.*$/, '').trim().split(/\s+/);
  const settings: Record<string, string> = {};
  for (const word of words) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(word);
    if (!m) break;
    settings[m[1]!] = m[2]!;
  }
  assert.deepEqual(words.slice(Object.keys(settings).length), ['npm', 'start'], line);
  return settings;
}

describe('happy', () => {
  const folder = mkdtempSync(join(tmpdir(), 'sensorcloud-try-it-'));
  after(() => rmSync(folder, { recursive: true, force: true }));

  it('the Try it blocks run as written in bash against a real server, and the data connector delivers', {
    timeout: 180_000,
  }, async () => {
    const [startBlock, tryBlock] = tryItBlocks();
    assert.ok(startBlock && tryBlock, 'two blocks: starting the service, then the walk-through');
    symlinkSync(join(ROOT, 'examples'), join(folder, 'examples'));

    // The first block: what comes before `npm start` runs as it is, then the service starts with its settings.
    const lines = startBlock.split('\n').filter((l) => l.trim() !== '');
    const startLine = lines.findIndex((l) => /\bnpm start\b/.test(l));
    const before = spawnSync('bash', ['-e', '-c', lines.slice(0, startLine).join('\n')], {
      cwd: folder,
      env: cleanEnv(),
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(before.status, 0, `${before.stdout}${before.stderr}`);
    const settings = startSettings(lines[startLine]!);
    // The service runs from the repository (serve-process.ts): a file the block made is in the reader's folder.
    for (const [name, value] of Object.entries(settings))
      if (existsSync(resolve(folder, value))) settings[name] = resolve(folder, value);
    const server = await serve(
      cleanEnv({
        ...settings,
        PORT: String(await freePort()),
        SENSORCLOUD_DATA_DIR: join(folder, 'data'),
        LOG_LEVEL: 'error',
      }),
    );
    after(() => server.kill('SIGKILL'));

    // The second block, pasted into bash; its own process group, so that the receiver it starts in the background
    // goes with it at the end.
    const receiverPort = await freePort();
    assert.match(tryBlock, /8443/);
    const shell = spawn('bash', ['-e', '-o', 'pipefail', '-c', tryBlock.replaceAll('8443', String(receiverPort))], {
      cwd: folder,
      env: cleanEnv({ PORT: String(receiverPort) }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    shell.stdout.on('data', (d: Buffer) => (out += d.toString()));
    shell.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const group = shell.pid!;
    after(() => {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // the group has ended already
      }
    });
    const code = await new Promise<number | null>((done) => shell.once('exit', done));
    assert.equal(code, 0, out);
    assert.doesNotMatch(out, /"error"|undefined/, out);
    assert.match(out, /"projects":\[/, 'the projects were listed');
    assert.match(out, /"secret":"[0-9a-f]{32}"/, 'the new service account got a key');
    assert.match(out, /"roles":\["roles\/project\.developer"\]/, 'and a role');
    assert.match(out, /"temperature":\{"value":21\.5/, 'the device reports the published value');
    assert.match(out, /"events":\[\{/, 'the history holds it');
    assert.match(out, /"successCount"/, 'the connector metrics were read');
    // The push reached the receiver, which checked its signature, before the block stopped the receiver.
    assert.match(
      out,
      /receiver: verified temperature event \S+ from projects\/\S+\/devices\/emu\S+ \{"temperature":\{"value":21\.5/,
      `no verified push reached the receiver:\n${out}`,
    );
    // The walk-through ends clean: no connector left pushing, and the receiver it started is gone.
    const boot = JSON.parse(readFileSync(join(folder, 'data', 'bootstrap.json'), 'utf8'));
    const auth = `Basic ${Buffer.from(`${boot.serviceAccount.keyId}:${boot.serviceAccount.secret}`).toString('base64')}`;
    const connectors = (await (
      await fetch(`${boot.baseUrl}/${boot.project}/dataconnectors`, { headers: { authorization: auth } })
    ).json()) as { dataConnectors: unknown[] };
    assert.deepEqual(connectors.dataConnectors, [], 'the block deletes the connector it made');
    await assert.rejects(
      fetch(`https://127.0.0.1:${receiverPort}/hook`, { method: 'POST' }),
      'the receiver was stopped',
    );
  });
});
