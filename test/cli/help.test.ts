// Every command's --help ends with an example, and docs/cli.md documents every command: both read off the same
// command tree the CLI runs (program.ts), so a new command without either fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.ts';
import { ROOT } from '../helpers/serve-process.ts';

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

  it('every command\'s help ends with an example', () => {
    for (const { path, command } of all) {
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
});
