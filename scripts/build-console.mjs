// Builds the web console: type-checks console/ with its own tsconfig, then Vite writes dist/console/ (hashed
// assets, served by the API process). Run by `npm run build`, and by the console tests when the build is stale.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function buildConsole() {
  execFileSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'console', 'tsconfig.json')],
    { stdio: 'inherit' },
  );
  const { build } = await import('vite');
  await build({ configFile: join(root, 'console', 'vite.config.mjs') });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildConsole();
