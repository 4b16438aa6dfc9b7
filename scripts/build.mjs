// `npm run build` (run by npm's `prepare`, so `npm ci` builds):
// 1. type-checks the whole project (sources, tests, benchmarks) with tsc;
// 2. bundles the service with esbuild into dist/service/: the `sensorcloud` command (cli.js; `serve` and the
//    client commands in chunks loaded as they are needed) and the dispatcher thread's entry, with the files a
//    bundle cannot hold beside it (SQL migrations, the checkpoint worker). One bundle instead of ~900 modules
//    (typebox alone is ~700) took `npm start` from ~1.0 s to ~0.4 s until /healthz answered, on an existing data dir;
// 3. compiles the receiver kit (`sensorcloud/receiver`) with its type declarations into dist/receiver/;
// 4. builds the web console into dist/console/ (scripts/build-console.mjs).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { buildConsole } from './build-console.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const tsc = (...args) => execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], { cwd: root, stdio: 'inherit' });

// dist/console/ is replaced by its own build below; leaving it in place until then keeps a console test that
// starts a service meanwhile from finding no console at all.
if (existsSync(dist)) for (const name of readdirSync(dist)) if (name !== 'console') rmSync(join(dist, name), { recursive: true, force: true });

tsc('--noEmit', '-p', join(root, 'tsconfig.json'));

const service = join(dist, 'service');
await build({
  entryPoints: { cli: join(root, 'src/cli/index.ts'), 'dispatcher-host': join(root, 'src/delivery/dispatcher-host.ts') },
  outdir: service,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  // The native addon stays in node_modules; CommonJS dependencies bundled into ESM still call require().
  external: ['better-sqlite3', 'pg-native'],
  banner: { js: "import { createRequire as __sensorcloudRequire } from 'node:module'; const require = __sensorcloudRequire(import.meta.url);" },
  logLevel: 'warning',
});
// Files the bundle finds beside itself (store/sqlite/db.ts and checkpointer.ts name them relative to their module).
mkdirSync(join(service, 'migrations'));
cpSync(join(root, 'src/store/sqlite/migrations'), join(service, 'migrations'), { recursive: true });
cpSync(join(root, 'src/store/postgres/migrations'), join(service, 'postgres-migrations'), { recursive: true });
cpSync(join(root, 'src/store/sqlite/checkpoint-worker.mjs'), join(service, 'checkpoint-worker.mjs'));

tsc('-p', join(root, 'tsconfig.build.json'));
await buildConsole();
