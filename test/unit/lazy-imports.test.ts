// A lazy `import('package')` in the sources survives the build only if the package is an ES module. esbuild, with
// code splitting, turns a CommonJS package imported dynamically into a chunk whose only export is `default`, so
// `const { Agent } = await import('undici')` worked from the sources and crashed in the shipped CLI. Load a module of
// ours lazily instead and let it import the package statically (src/cli/commands/listen.ts does).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '../helpers/serve-process.ts';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? sources(path) : /\.[cm]?ts$/.test(e.name) ? [path] : [];
  });
}

describe('happy', () => {
  it('every package imported lazily in src/ is an ES module', () => {
    const lazy: string[] = [];
    for (const file of sources(join(ROOT, 'src'))) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'([^'.][^']*)'\s*\)/g)) {
        const specifier = m[1]!;
        if (specifier.startsWith('node:')) continue;
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
        const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
          type?: string;
        };
        lazy.push(`${file.slice(ROOT.length)}: ${specifier}`);
        assert.equal(
          pkg.type,
          'module',
          `${file.slice(ROOT.length)} imports the CommonJS package ${specifier} lazily; its named exports are lost in the build`,
        );
      }
    }
    assert.ok(lazy.length > 0, 'the check sees the lazy imports (jose in the CLI client)');
  });
});
