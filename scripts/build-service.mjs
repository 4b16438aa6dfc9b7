// Bundles the service with esbuild into dist/service/: the `sensorcloud` command (cli.js; `serve` and the client
// commands in chunks loaded as they are needed) and the dispatcher thread's entry, with the files a bundle cannot
// hold beside it (SQL files, the checkpoint worker). One bundle instead of ~900 modules (typebox alone is ~700)
// took `npm start` from ~1.0 s to ~0.4 s until /healthz answered, on an existing data dir. Run by `npm run build`,
// and by `npm test` when a source is newer than the bundle (serviceBundleStale), since every test that starts the
// service or the CLI runs this bundle, the artefact users run.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const service = join(root, 'dist', 'service');
/** Written last, so that its presence means a whole bundle, and its time when it was made. */
const marker = join(service, '.built');

function newestMtime(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

/** Why dist/service/ does not match the sources, or null when it does (by modification times, as make does). */
export function serviceBundleStale() {
  if (!existsSync(marker)) return 'dist/service/ is missing';
  const built = statSync(marker).mtimeMs;
  for (const input of ['src', 'package.json', 'scripts/build-service.mjs']) {
    if (newestMtime(join(root, input)) > built) return `${input} is newer than dist/service/`;
  }
  return null;
}

export async function buildService() {
  const started = new Date();
  rmSync(service, { recursive: true, force: true });
  await build({
    entryPoints: {
      cli: join(root, 'src/cli/index.ts'),
      'dispatcher-host': join(root, 'src/delivery/dispatcher-host.ts'),
    },
    outdir: service,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    // The native addon stays in node_modules; CommonJS dependencies bundled into ESM still call require().
    external: ['better-sqlite3', 'pg-native'],
    banner: {
      js: "import { createRequire as __sensorcloudRequire } from 'node:module'; const require = __sensorcloudRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  // Files the bundle finds beside itself (store/sqlite/db.ts, store/postgres/db.ts and checkpointer.ts name them
  // relative to their module).
  mkdirSync(join(service, 'migrations'));
  cpSync(join(root, 'src/store/sqlite/migrations'), join(service, 'migrations'), { recursive: true });
  cpSync(join(root, 'src/store/postgres/migrations'), join(service, 'postgres-migrations'), { recursive: true });
  cpSync(join(root, 'src/store/postgres/functions'), join(service, 'postgres-functions'), { recursive: true });
  cpSync(join(root, 'src/store/sqlite/operations/checkpoint-worker.mjs'), join(service, 'checkpoint-worker.mjs'));
  // Dated when the build started, so that a source saved during the build leaves the bundle stale.
  writeFileSync(marker, '');
  utimesSync(marker, started, started);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildService();
