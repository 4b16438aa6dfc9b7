// `npm run build` (run by npm's `prepare`, so `npm ci` builds):
// 1. type-checks the whole project (sources, tests, benchmarks) with tsc;
// 2. bundles the service with esbuild into dist/service/ (scripts/build-service.mjs);
// 3. builds the receiver kit's package, sensorcloud-receiver, into packages/receiver/dist/ (one ES module and its
//    type declarations; packages/receiver/build.mjs, which its `npm pack` runs too): `sensorcloud/receiver` here;
// 4. builds the web console into dist/console/ (scripts/build-console.mjs).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildReceiverPackage } from '../packages/receiver/build.mjs';
import { buildConsole } from './build-console.mjs';
import { buildService } from './build-service.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const tsc = (...args) =>
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], {
    cwd: root,
    stdio: 'inherit',
  });

// dist/console/ is replaced by its own build below; leaving it in place until then keeps a console test that
// starts a service meanwhile from finding no console at all.
if (existsSync(dist))
  for (const name of readdirSync(dist))
    if (name !== 'console') rmSync(join(dist, name), { recursive: true, force: true });

tsc('--noEmit', '-p', join(root, 'tsconfig.json'));

await buildService();
await buildReceiverPackage();
await buildConsole();
