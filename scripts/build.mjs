// `npm run build` (run by npm's `prepare`, so `npm ci` builds): compiles src/ to dist/ with tsc, copies the
// files tsc does not emit (SQL migrations, plain-JavaScript worker entries) beside the compiled modules, and
// builds the web console into dist/console/ (scripts/build-console.mjs).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildConsole } from './build-console.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

// dist/console/ is replaced by its own build below; leaving it in place until then keeps a console test that
// starts a service meanwhile from finding no console at all.
if (existsSync(dist)) for (const name of readdirSync(dist)) if (name !== 'console') rmSync(join(dist, name), { recursive: true, force: true });
execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

const ASSETS = /\.(sql|mjs)$/;
/** Entries used only when running from the TypeScript sources. */
const SOURCE_ONLY = new Set(['dispatcher-worker.mjs']);
function copyAssets(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) copyAssets(path);
    else if (ASSETS.test(name) && !SOURCE_ONLY.has(name)) cpSync(path, join(dist, relative(src, path)));
  }
}
copyAssets(src);
await buildConsole();
