// Every command's --help ends with an example, and docs/cli.md documents every command: both read off the same
// command tree the CLI runs (program.ts), so a new command without either fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildProgram } from '../../src/cli/program.ts';
import { ROOT, freePort } from '../helpers/serve-process.ts';
import { cliCommand } from './harness.ts';

function leaves(command: Command, path: string[] = []): Array<{ path: string; command: Command }> {
  return command.commands.flatMap((c) => {
    const p = [...path, c.name()];
    return c.commands.length === 0 ? [{ path: p.join(' '), command: c }] : leaves(c, p);
  });
}

describe('happy', () => {
  const all = leaves(buildProgram());

  it('the tree has every group', () => {
    const groups = new Set(all.map((l) => l.path.split(' ')[0]));
    for (const g of ['login', 'organizations', 'projects', 'members', 'invites', 'roles', 'service-accounts', 'keys', 'devices', 'emulator', 'events', 'connectors', 'listen', 'completion', 'serve']) {
      assert.ok(groups.has(g), g);
    }
  });

  it('every command\'s help ends with an example, groups included', () => {
    const every = (command: Command, path: string[] = []): Array<{ path: string; command: Command }> =>
      command.commands.flatMap((c) => [{ path: [...path, c.name()].join(' '), command: c }, ...every(c, [...path, c.name()])]);
    for (const { path, command } of every(buildProgram())) {
      let text = '';
      command.configureOutput({ writeOut: (t) => (text += t), writeErr: () => undefined });
      command.outputHelp();
      assert.match(text, /\nExamples?:\n {2}\$ \S/, `sensorcloud ${path} --help`);
    }
  });

  it('docs/cli.md has a section for every client command', () => {
    const doc = readFileSync(`${ROOT}/docs/cli.md`, 'utf8');
    for (const { path } of all) {
      if (path === 'serve') continue;
      assert.match(doc, new RegExp(`^### \`sensorcloud ${path}[ \`]`, 'm'), path);
    }
  });

  it('a client command loads none of the service: no fastify, better-sqlite3 or pino', async () => {
    // CommonJS packages land in require.cache, which a preloaded probe prints when the process exits.
    const probe = join(mkdtempSync(join(tmpdir(), 'sensorcloud-probe-')), 'probe.cjs');
    writeFileSync(probe, "process.on('exit', () => process.stderr.write('\\nloaded: ' + Object.keys(require.cache).filter((p) => p.includes('node_modules')).map((p) => p.split('node_modules/').pop().split('/')[0]).join(',')));\n");
    const [node, ...cli] = cliCommand();
    const port = await freePort();
    let stderr = '';
    try {
      execFileSync(node!, ['--require', probe, ...cli, 'projects', 'list'], { env: { ...process.env, SENSORCLOUD_URL: `http://127.0.0.1:${port}`, SENSORCLOUD_KEY_ID: 'k', SENSORCLOUD_KEY_SECRET: 's' }, stdio: 'pipe' });
    } catch (err) {
      stderr = String((err as { stderr: Buffer }).stderr);
    }
    assert.match(stderr, /cannot reach/);
    const loaded = new Set(/loaded: (.*)$/.exec(stderr)![1]!.split(','));
    assert.ok(loaded.has('commander'), 'the probe sees packages');
    for (const heavy of ['fastify', 'better-sqlite3', 'pino']) assert.ok(!loaded.has(heavy), heavy);
  });
});
