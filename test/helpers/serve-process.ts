// Real `sensorcloud serve` processes for end-to-end tests, on a free loopback port, killed when the test file ends.
// Every test that starts the service or the CLI runs what users run: bin/sensorcloud.js on the dist/ that
// `npm run build` made (`npm test` rebuilds dist/service/ first when a source is newer). A crash once shipped in
// the built CLI while the tests, running a differently bundled one, passed.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { after } from 'node:test';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serviceBundleStale } from '../../scripts/build-service.mjs';
import { createTestDatabase } from './postgres.ts';
import { testStoreKind } from './store.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `sensorcloud` as shipped: node on bin/sensorcloud.js, no loader. */
export const CLI_COMMAND: readonly string[] = [process.execPath, join(ROOT, 'bin', 'sensorcloud.js')];

/** Set by `npm test`, which bundled the service if it was stale: a source saved during the run changes nothing. */
let checked = process.env.SENSORCLOUD_TEST_BUNDLE_CHECKED === '1';
/** Refuses to test a stale build: dist/service/ older than a source would test yesterday's code. */
export function assertServiceBuilt(): void {
  if (checked) return;
  const stale = serviceBundleStale();
  if (stale !== null)
    throw new Error(
      `${stale}: run \`npm run build\` (or \`npm test\`, which rebuilds it) before running this test file alone`,
    );
  checked = true;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * With SENSORCLOUD_TEST_STORE=postgres, a serve process uses a database of the test server: one per data dir, so a
 * restart on the same data dir finds its data again (the URL is kept in the data dir).
 */
async function withTestDatabase(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  if (testStoreKind() !== 'postgres' || env.SENSORCLOUD_DATABASE_URL || !env.SENSORCLOUD_DATA_DIR) return env;
  const file = join(env.SENSORCLOUD_DATA_DIR, 'postgres-url');
  if (!existsSync(file)) {
    mkdirSync(env.SENSORCLOUD_DATA_DIR, { recursive: true });
    writeFileSync(file, (await createTestDatabase()).url);
  }
  return { ...env, SENSORCLOUD_DATABASE_URL: readFileSync(file, 'utf8') };
}

const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** Spawns `sensorcloud <args>` from source; the child is SIGKILLed when the test file ends if still running. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  assertServiceBuilt();
  const child = spawn(CLI_COMMAND[0]!, [...CLI_COMMAND.slice(1), ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  return child;
}

/** Starts `sensorcloud serve` and resolves once it announces it is listening (within 30 s). */
export async function serve(env: NodeJS.ProcessEnv, args: string[] = []): Promise<ChildProcess> {
  const child = spawnCli(['serve', ...args], await withTestDatabase(env));
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start within 30 s: ${out}${err}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (/listening on/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code}: ${out}${err}`));
    });
  });
  return child;
}

/** The console's sign-in (the token endpoint's password grant): its status. */
export async function passwordGrant(base: string, email: string, password: string): Promise<number> {
  const res = await fetch(`${base}/oauth2/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'password', username: email, password }),
  });
  await res.arrayBuffer();
  return res.status;
}
