// Every command's --help ends with an example, and docs/cli.md documents every command: both read off the same
// command tree the CLI runs (program.ts), so a new command without either fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { buildProgram } from '../../src/cli/program.ts';
import { ROOT } from '../helpers/serve-process.ts';
import { cliCommand } from './harness.ts';

const execFileAsync = promisify(execFile);

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
    for (const g of [
      'login',
      'organizations',
      'projects',
      'members',
      'invites',
      'roles',
      'service-accounts',
      'keys',
      'devices',
      'emulator',
      'events',
      'connectors',
      'rules',
      'alerts',
      'contacts',
      'listen',
      'completion',
      'serve',
    ]) {
      assert.ok(groups.has(g), g);
    }
  });

  it("every command's help ends with an example, groups included", () => {
    const every = (command: Command, path: string[] = []): Array<{ path: string; command: Command }> =>
      command.commands.flatMap((c) => [
        { path: [...path, c.name()].join(' '), command: c },
        ...every(c, [...path, c.name()]),
      ]);
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

  it('a client command loads none of the service: no fastify, better-sqlite3, pino or typebox (it takes the wire types as types)', () => {
    // What `node bin/sensorcloud.js projects list` loads before any lazy import: cli.js and the chunks it imports
    // statically; their source maps name every file bundled into them.
    const dir = join(ROOT, 'dist', 'service');
    cliCommand(); // dist/service/ is built and current
    const loaded = new Set<string>();
    const visit = (file: string) => {
      if (loaded.has(file)) return;
      loaded.add(file);
      for (const m of readFileSync(join(dir, file), 'utf8').matchAll(
        /^import\s*(?:[^'"]*?from\s*)?"\.\/([\w.-]+\.js)";?$/gm,
      ))
        visit(m[1]!);
    };
    visit('cli.js');
    const packages = new Set<string>();
    for (const file of loaded) {
      for (const source of (JSON.parse(readFileSync(join(dir, `${file}.map`), 'utf8')) as { sources: string[] })
        .sources) {
        const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source);
        if (m) packages.add(m[1]!);
      }
    }
    assert.ok(packages.has('commander'), `the check sees bundled packages: ${[...packages].join(', ')}`);
    for (const heavy of ['fastify', 'better-sqlite3', 'pino', 'pg', 'undici', 'typebox'])
      assert.ok(!packages.has(heavy), `${heavy} is loaded by every client command`);
    assert.doesNotMatch([...loaded].map((f) => readFileSync(join(dir, f), 'utf8')).join('\n'), /from "better-sqlite3"/);
  });

  it('./sensorcloud in the repository folder is the built command', async () => {
    cliCommand();
    const { stdout } = await execFileAsync(join(ROOT, 'sensorcloud'), ['--version'], { cwd: '/', encoding: 'utf8' });
    assert.equal(stdout.trim(), JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
  });

  it("every command's --help runs from the build, so every statically imported chunk resolves", {
    timeout: 120_000,
  }, async () => {
    const [node, ...cli] = cliCommand();
    const paths = [[], ...leaves(buildProgram()).map((l) => l.path.split(' '))];
    const failures: string[] = [];
    // Four at a time: each is a whole node process (~0.15 s).
    const queue = [...paths];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
          try {
            const { stdout } = await execFileAsync(node!, [...cli, ...path, '--help'], {
              encoding: 'utf8',
              timeout: 30_000,
            });
            if (!/Usage: sensorcloud/.test(stdout))
              failures.push(`sensorcloud ${path.join(' ')} --help printed no usage: ${stdout}`);
          } catch (err) {
            failures.push(`sensorcloud ${path.join(' ')} --help: ${(err as Error).message}`);
          }
        }
      }),
    );
    assert.deepEqual(failures, []);
  });
});
