// `npm test`: one throwaway PostgreSQL server for the whole run (test/helpers/postgres-server.ts), then
// 1. every suite, on SQLite (the default store), the PostgreSQL-only suites using that server too;
// 2. the suites that go through the Store (api, events, delivery, alerts, e2e) again with SENSORCLOUD_TEST_STORE=postgres.
// Arguments (files, or folders of test/) replace the file list of pass 1 (and skip pass 2): `npm test -- test/api/devices.test.ts`.
// Tests that start the service or the CLI run the built dist/service/ (test/helpers/serve-process.ts): it is
// bundled again first when a source is newer, so a developer's edit is what the tests run.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildService, serviceBundleStale } from './build-service.mjs';
import { startPostgresServer } from '../test/helpers/postgres-server.ts';

const root = join(import.meta.dirname, '..');
const files = (dirs: string[]) =>
  dirs
    .flatMap((d) =>
      readdirSync(join(root, 'test', d))
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => `test/${d}/${f}`),
    )
    .sort();
const allDirs = readdirSync(join(root, 'test'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== 'helpers')
  .map((d) => d.name);

// A file still running after this long is cancelled and fails, named in the summary, instead of holding the run
// (and CI) until something outside kills it: a test once waited, on a busy machine, for a message never sent, its
// open connection keeping the file alive. The longest file, the cluster's, takes about 2 minutes here (under load
// too); the limit leaves room for a machine several times slower.
const FILE_TIMEOUT_MS = 10 * 60_000;

const stale = serviceBundleStale();
if (stale !== null) {
  console.log(`# ${stale}: bundling the service again (scripts/build-service.mjs)`);
  await buildService();
}

// Each pass also writes its failures, one line each, to a file (scripts/failures-reporter.mjs); the run ends by
// printing them, so the last lines of a long log (all CI shows) name every failed test of both passes.
const failuresDir = mkdtempSync(join(tmpdir(), 'sensorcloud-test-failures-'));
const failed: { label: string; file: string }[] = [];
const server = await startPostgresServer();
const run = (label: string, list: string[], env: NodeJS.ProcessEnv): number => {
  console.log(`\n# ${label}`);
  const failures = join(failuresDir, `pass-${failed.length + 1}.txt`);
  failed.push({ label, file: failures });
  const reporters = [
    `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`,
    '--test-reporter-destination=stdout',
    `--test-reporter=${join(root, 'scripts', 'failures-reporter.mjs')}`,
    `--test-reporter-destination=${failures}`,
  ];
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', ...reporters, '--test-concurrency=2', `--test-timeout=${FILE_TIMEOUT_MS}`, ...list],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, SENSORCLOUD_TEST_PG_URL: server.url, SENSORCLOUD_TEST_BUNDLE_CHECKED: '1', ...env },
    },
  );
  return r.status ?? 1;
};

// The whole run (CI's) checks formatting and lint first (`npm run lint`, under a second), and goes on to the tests
// either way, so one run shows both; a run of chosen files leaves it to the editor.
const lint = (): number => {
  console.log('\n# formatting and lint (npm run lint)');
  const biome = join(root, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
  return spawnSync(process.execPath, [biome, 'check'], { cwd: root, stdio: 'inherit' }).status ?? 1;
};

let status = 0;
try {
  // A folder stands for its test files (node --test would find none in it on Node 20).
  const args = process.argv
    .slice(2)
    .flatMap((a) =>
      statSync(join(root, a), { throwIfNoEntry: false })?.isDirectory()
        ? files([a.replace(/^test\//, '').replace(/\/$/, '')])
        : [a],
    );
  const linted = args.length === 0 ? lint() : 0;
  status = run(
    'every suite (SQLite store; PostgreSQL-only suites on the test server)',
    args.length > 0 ? args : files(allDirs),
    {},
  );
  if (args.length === 0) {
    const second = run(
      'the API, event, delivery, alerts and end-to-end suites on PostgreSQL (SENSORCLOUD_TEST_STORE=postgres)',
      files(['api', 'events', 'delivery', 'alerts', 'e2e']),
      { SENSORCLOUD_TEST_STORE: 'postgres' },
    );
    status = status || second;
  }
  if (linted !== 0) {
    console.log(
      '\n# formatting or lint failed (above): `npm run format` fixes the formatting, `npm run lint` shows the rest',
    );
    status = status || linted;
  }
  for (const { label, file } of failed) {
    const lines = existsSync(file) ? readFileSync(file, 'utf8').trimEnd() : '';
    console.log(`\n# failed in: ${label}\n${lines === '' ? '(none)' : lines}`);
  }
} finally {
  server.stop();
  rmSync(failuresDir, { recursive: true, force: true });
}
process.exit(status);
