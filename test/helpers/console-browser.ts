// Browser tests of the web console: a real `serve` process from source (with a console build made here when
// the committed sources are newer than dist/console/), Debian's Chromium driven by playwright-core, axe-core,
// screenshots. Screenshots go to test-artifacts/console/ (gitignored), or to docs/console/ with
// UPDATE_DOCS_SCREENSHOTS=1, where docs/console.md shows them.
import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ROOT, freePort, serve } from './serve-process.ts';
import { testTls } from './tls.ts';
import { sleep } from './until.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SCREENSHOT_DIR =
  process.env.UPDATE_DOCS_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'console') : join(ROOT, 'test-artifacts', 'console');
/** Generous bound for anything the console waits on (the machine may be busy with other test files). */
export const UI_TIMEOUT = 20_000;

/** Teardown of what this file started, in reverse order, once the test file ends. */
const cleanups: (() => unknown)[] = [];
/** CSP violations and uncaught script errors seen on any page. */
const problems: string[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  assert.deepEqual(problems, [], 'the console logged CSP violations or script errors');
});

function newestMtime(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

const LOCK = join(ROOT, 'dist', '.console-build-lock');

/**
 * dist/console/ as `npm ci` leaves it; rebuilt only when a console source is newer (a developer's checkout).
 * Test files run two at a time: a lock directory (mkdir is atomic) keeps them from building over each other.
 */
export async function ensureConsoleBuilt(): Promise<void> {
  const marker = join(ROOT, 'dist', 'console', 'index.html');
  const fresh = () => existsSync(marker) && statSync(marker).mtimeMs >= newestMtime(join(ROOT, 'console'));
  for (let i = 0; i < 240 && !fresh(); i++) {
    try {
      mkdirSync(join(ROOT, 'dist'), { recursive: true });
      mkdirSync(LOCK);
    } catch {
      await sleep(500); // another file is building
      continue;
    }
    try {
      if (!fresh())
        execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-console.mjs')], { cwd: ROOT, stdio: 'pipe' });
    } finally {
      rmSync(LOCK, { recursive: true, force: true });
    }
  }
  assert.ok(fresh(), 'the console build is missing or stale: run npm run build');
}

export interface ConsoleServer {
  url: string;
  dataDir: string;
  boot: any;
  child: ChildProcess;
  /** A /v2 call as the bootstrap service account (organization admin), to check results through the API. */
  api(method: string, path: string, body?: unknown): Promise<any>;
}

/** `sensorcloud serve` from source on a free loopback port, with its own data dir; stopped when the file ends. */
export async function startConsoleServer(env: Record<string, string> = {}): Promise<ConsoleServer> {
  await ensureConsoleBuilt();
  const dataDir = mkdtempSync(join(tmpdir(), 'sensorcloud-console-test-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const child = await serve({
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    SENSORCLOUD_DATA_DIR: dataDir,
    SENSORCLOUD_RATE_LIMIT: 'off',
    SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
    SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.0/8',
    SENSORCLOUD_CA_FILE: testTls().caFile,
    LOG_LEVEL: 'error',
    ...env,
  });
  cleanups.push(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const url = `http://127.0.0.1:${port}`;
  const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
  const auth = `Basic ${Buffer.from(`${boot.serviceAccount.keyId}:${boot.serviceAccount.secret}`).toString('base64')}`;
  return {
    url,
    dataDir,
    boot,
    child,
    async api(method, path, body) {
      const res = await fetch(`${url}/v2${path}`, {
        method,
        headers: { authorization: auth },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = await res.json();
      assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(json)}`);
      return json;
    },
  };
}

export async function launchBrowser(): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  cleanups.push(() => browser.close());
  return browser;
}

/**
 * A fresh browser context (its own cookies) at 1280×800 or 390×844, following the given colour scheme. Every page
 * of it fails the test on a CSP violation or an uncaught script error.
 */
export async function newContext(
  browser: Browser,
  options: { mobile?: boolean; dark?: boolean } = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({
    viewport: options.mobile ? { width: 390, height: 844 } : { width: 1280, height: 800 },
    deviceScaleFactor: 1,
    colorScheme: options.dark ? 'dark' : 'light',
  });
  context.setDefaultTimeout(UI_TIMEOUT);
  context.on('page', (page) => watchPage(page));
  return context;
}

function watchPage(page: Page): void {
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy|Refused to/.test(msg.text()))
      problems.push(`CSP: ${msg.text()}`);
  });
}

export async function signIn(
  page: Page,
  server: ConsoleServer,
  email = server.boot.user.email,
  password = server.boot.user.password,
): Promise<void> {
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname !== '/signin');
}

/** Saves a full-page screenshot as an artefact (or as a docs image); returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  // From the top: a full-page capture of a scrolled page draws the sticky header where the view was, mid-page.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path, fullPage: true, animations: 'disabled' });
  return path;
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe-core on the page and fails on serious or critical violations. axe is evaluated through the DevTools
 * protocol, which the page's CSP does not govern, so the CSP stays on for the page under test.
 */
export async function expectAccessible(page: Page, screen: string): Promise<void> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v: any) =>
          `${v.id} (${v.impact}): ${v.help} — ${v.nodes
            .slice(0, 3)
            .map((n: any) => n.target.join(' '))
            .join(', ')}`,
      );
  });
  assert.deepEqual(violations, [], `axe-core on ${screen}`);
}
