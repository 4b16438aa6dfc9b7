// The import graph of src/ runs one way (docs/architecture.md): cli → main → api → services → events, delivery,
// auth, receiver → store → domain, runtime, wire. A module imports only from its own layer or below, and no chain of imports comes
// back to where it started. Read from the sources' own import statements (types included: a type import ties
// two modules as surely as a value import).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Layers from the top; a path prefix (relative to src/) belongs to the first layer that names it. */
export const LAYERS: ReadonlyArray<{ name: string; members: string[] }> = [
  { name: 'cli', members: ['cli/'] },
  { name: 'main', members: ['main.ts'] },
  { name: 'api', members: ['api/'] },
  { name: 'services', members: ['services/', 'emulator/', 'deps.ts'] },
  { name: 'engines', members: ['events/', 'delivery/', 'alerts/', 'auth/', 'receiver/'] },
  { name: 'store', members: ['store/'] },
  { name: 'base', members: ['domain/', 'runtime/', 'config.ts', 'wire/'] },
];

function layerOf(file: string): number {
  const rel = relative(SRC, file).split('\\').join('/');
  const i = LAYERS.findIndex((l) => l.members.some((m) => (m.endsWith('/') ? rel.startsWith(m) : rel === m)));
  assert.ok(i >= 0, `src/${rel} belongs to no layer: add it to LAYERS in test/unit/layers.test.ts`);
  return i;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|mjs)$/.test(name) ? [path] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

/** Every relative import of every source file, resolved to a file path. */
export function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const m of text.matchAll(IMPORT)) targets.push(resolve(dirname(file), m[1] ?? m[2]!));
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components with more than one file (or a file importing itself): the cycles. */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indices.get(w)!));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.map((f) => relative(SRC, f)).sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) visit(v);
  return out;
}

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('every import resolves to a file of src/', () => {
    const missing = [...graph].flatMap(([from, targets]) =>
      targets.filter((t) => !graph.has(t)).map((t) => `${relative(SRC, from)} → ${relative(SRC, t)}`),
    );
    assert.deepEqual(missing, []);
  });

  it('has no cycle', () => {
    assert.deepEqual(cycles(graph), []);
  });

  it('has no cycle between folders either (a folder is one piece to its neighbours)', () => {
    const folderOf = (file: string) => relative(SRC, file).split('/')[0]!;
    const folders = new Map<string, string[]>();
    for (const [from, targets] of graph) {
      const edges = folders.get(join(SRC, folderOf(from))) ?? [];
      for (const to of targets) if (folderOf(to) !== folderOf(from)) edges.push(join(SRC, folderOf(to)));
      folders.set(join(SRC, folderOf(from)), edges);
    }
    assert.deepEqual(cycles(folders), []);
  });

  it('has no import that runs upward', () => {
    const upward: string[] = [];
    for (const [from, targets] of graph) {
      for (const to of targets) {
        if (graph.has(to) && layerOf(to) < layerOf(from)) {
          upward.push(
            `${relative(SRC, from)} (${LAYERS[layerOf(from)]!.name}) → ${relative(SRC, to)} (${LAYERS[layerOf(to)]!.name})`,
          );
        }
      }
    }
    assert.deepEqual(upward, []);
  });
});
