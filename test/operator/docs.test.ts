// The documentation stands alone (issue 22): README.md and docs/**/*.md link only to files of the repository that
// exist (and to headings that exist in them), cite nothing outside it, list every setting of src/config.ts, and the
// API reference is what `npm run docs:api` writes from the served OpenAPI document. The code tour of
// docs/architecture.md names every folder of src/, and nothing that does not exist.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import { fetchOpenApiDocument, REFERENCE_FILE, renderApiReference } from '../../scripts/api-reference.ts';
import { ROOT as ROOT_URL_PATH } from '../helpers/serve-process.ts';

/** The repository folder, without the trailing separator. */
const ROOT = resolve(ROOT_URL_PATH);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const FILES = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];

/** The text outside fenced code blocks: links and citations in prose and tables. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/** Link targets: `[text](target)`, `![alt](target)` and `<https://…>` autolinks. */
function links(text: string): string[] {
  const body = prose(text).replace(/`[^`\n]*`/g, '');
  return [...body.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g), ...body.matchAll(/<(https?:\/\/[^>\s]+)>/g)].map(
    (m) => m[1]!,
  );
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchors(file: string): Set<string> {
  const text = prose(readFileSync(file, 'utf8'));
  return new Set([
    ...[...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)),
    ...[...text.matchAll(/<a id="([^"]+)">/g)].map((m) => m[1]!),
  ]);
}

/** Every folder under `dir`, as a path relative to ROOT with `/` separators and a trailing `/`. */
function folders(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (!statSync(path).isDirectory()) return [];
    return [`${relative(ROOT, path).split(sep).join('/')}/`, ...folders(path)];
  });
}

/**
 * The paths the code tour names: the items of the list under `## Code tour`, each starting with a path of src/ in
 * backticks (`src/api/` for a folder, `src/main.ts` for a file; a file's item may name more files after it).
 */
function tourEntries(text: string): string[] {
  const section = /^## Code tour\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(text)?.[1] ?? '';
  return [...section.matchAll(/^- (`src\/[^`]*`.*)$/gm)].flatMap((m) => {
    const first = /^`(src\/[^`]*)`/.exec(m[1]!)![1]!;
    return first.endsWith('/') ? [first] : [...m[1]!.matchAll(/`(src\/[^`]*\.[a-z]+)`/g)].map((f) => f[1]!);
  });
}

describe('happy', () => {
  it('every link of README.md and docs/ names a file of the repository that exists, and a heading that exists', () => {
    const broken: string[] = [];
    for (const file of FILES) {
      for (const target of links(readFileSync(file, 'utf8'))) {
        if (/^(https?:|mailto:)/.test(target)) continue;
        const [path, hash] = target.split('#') as [string, string | undefined];
        const resolved = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        const where = `${relative(ROOT, file)} → ${target}`;
        if (resolved !== ROOT && !resolved.startsWith(ROOT + sep)) broken.push(`${where}: outside the repository`);
        else if (!existsSync(resolved)) broken.push(`${where}: no such file`);
        else if (hash !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(hash))
          broken.push(`${where}: no such heading`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('no page cites a file outside the repository', () => {
    for (const file of FILES) {
      const text = readFileSync(file, 'utf8');
      for (const outside of [
        /api-contract\.md/,
        /\bshared\/(spec|DESIGN)/,
        /\bservice-spec\.md/,
        /\/work\//,
        /\]\((\.\.\/){2,}/,
      ]) {
        assert.doesNotMatch(text, outside, relative(ROOT, file));
      }
    }
  });

  it('the README and docs/configuration.md list every setting src/config.ts reads', () => {
    const source = readFileSync(join(ROOT, 'src', 'config.ts'), 'utf8');
    const names = new Set([
      ...[...source.matchAll(/pick(?:WithSource)?\([^)]*'([A-Z][A-Z0-9_]+)'\)/g)].map((m) => m[1]!),
      ...[...source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!),
    ]);
    for (const expected of ['PORT', 'HOST', 'SENSORCLOUD_DATA_DIR', 'SENSORCLOUD_DEMO', 'LOG_LEVEL'])
      assert.ok(names.has(expected), `the scan finds ${expected}`);
    for (const page of ['README.md', 'docs/configuration.md']) {
      const text = readFileSync(join(ROOT, page), 'utf8');
      for (const name of names)
        assert.match(text, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `${page} has a row for ${name}`);
    }
  });

  it('docs/api-reference.md is what npm run docs:api writes from /v2/openapi.json', async () => {
    const expected = renderApiReference(await fetchOpenApiDocument());
    assert.equal(
      readFileSync(REFERENCE_FILE, 'utf8'),
      expected,
      'docs/api-reference.md is stale: run npm run docs:api',
    );
    assert.match(expected, /### `POST \/v2\/projects\/\{project\}\/devices\/\{device\}:publish`/);
  });

  it('the code tour of docs/architecture.md names every folder of src/, and only folders and files that exist', () => {
    const named = tourEntries(readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8'));
    assert.ok(named.includes('src/api/') && named.includes('src/main.ts'), 'the tour is found and parsed');
    const missing = folders(join(ROOT, 'src')).filter((folder) => !named.includes(folder));
    assert.deepEqual(missing, [], 'folders of src/ the code tour does not name: add a line for each');
    const absent = named.filter(
      (path) => !existsSync(join(ROOT, path)) || statSync(join(ROOT, path)).isDirectory() !== path.endsWith('/'),
    );
    assert.deepEqual(absent, [], 'the code tour names folders or files that do not exist');
  });
});

describe('sad', () => {
  it('the link check finds what it must refuse', () => {
    const sample =
      '[a](missing.md) [b](../../etc/passwd) `[c](in-code.md)` <https://example.org/> [d](#here)\n```\n[e](in-fence.md)\n```\n';
    assert.deepEqual(links(sample), ['missing.md', '../../etc/passwd', '#here', 'https://example.org/']);
    assert.equal(
      anchorOf('`sensorcloud listen`: receive pushes on your laptop'),
      'sensorcloud-listen-receive-pushes-on-your-laptop',
    );
    assert.equal(anchorOf('Recovery: `sensorcloud admin`'), 'recovery-sensorcloud-admin');
  });

  it('the code tour parser reads only the list items of the tour that start with a path of src/', () => {
    const sample =
      '## Code tour\n\nIntro naming `src/nowhere/`.\n\n- `src/a/`: a folder, see `src/b/`.\n- `src/main.ts`: the root; `src/deps.ts` too.\n- not `src/c/`\n\n## Next\n\n- `src/d/`: another section\n';
    assert.deepEqual(tourEntries(sample), ['src/a/', 'src/main.ts', 'src/deps.ts']);
  });
});
