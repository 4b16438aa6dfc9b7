// Builds the package sensorcloud-receiver into dist/ from the receiver kit's sources, src/receiver/ (the one copy
// of them): dist/index.js, the whole kit in one ES module (esbuild; it imports node:crypto only), and its type
// declarations, dist/*.d.ts (tsc, tsconfig.json here). Run by `npm pack` here (prepack) and by the repository's
// `npm run build` (scripts/build.mjs), which `npm ci` runs; it needs the repository's node_modules (esbuild and
// typescript are its devDependencies).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const STAGING = '.build-';

export async function buildReceiverPackage() {
  const dist = join(here, 'dist');
  mkdirSync(dist, { recursive: true });
  // Built in a folder of its own, then moved into dist/ one file at a time (a rename each) and never by emptying
  // dist/ first: `sensorcloud/receiver`, which the repository's examples import, is dist/index.js, also while a test
  // packs the package.
  const staging = mkdtempSync(join(dist, STAGING));
  try {
    const { build } = await import('esbuild');
    const { metafile } = await build({
      entryPoints: [join(here, '../../src/receiver/index.ts')],
      outfile: join(staging, 'index.js'),
      absWorkingDir: here,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      metafile: true,
      logLevel: 'warning',
    });
    // The package declares no dependency: the bundle holds the kit's own files, and imports node: built-ins only.
    const foreign = [
      ...Object.keys(metafile.inputs).filter((input) => !input.startsWith('../../src/receiver/')),
      ...Object.values(metafile.outputs)
        .flatMap((o) => o.imports.map((i) => i.path))
        .filter((path) => !path.startsWith('node:')),
    ];
    if (foreign.length > 0)
      throw new Error(
        `sensorcloud-receiver: the bundle would hold or import ${foreign.join(', ')}; the package has no dependencies`,
      );

    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json'), '--outDir', staging], {
      cwd: here,
      stdio: 'inherit',
    });
    // tsc keeps the sources' `./x.ts` specifiers in declarations; `./x.js` is what every TypeScript version resolves
    // (to ./x.d.ts).
    for (const name of readdirSync(staging).filter((n) => n.endsWith('.d.ts'))) {
      const file = join(staging, name);
      writeFileSync(file, readFileSync(file, 'utf8').replace(/(from '\.\/[\w-]+)\.ts';/g, "$1.js';"));
    }

    const built = readdirSync(staging);
    for (const name of built) renameSync(join(staging, name), join(dist, name));
    for (const name of readdirSync(dist)) {
      if (!built.includes(name) && !name.startsWith(STAGING))
        rmSync(join(dist, name), { recursive: true, force: true });
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildReceiverPackage();
