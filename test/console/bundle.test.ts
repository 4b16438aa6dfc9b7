// The console's first load stays small and CSP-clean: the JavaScript index.html loads is at most 150 KB
// gzipped (uPlot comes later, with the first chart), and the built pages carry no inline script or style.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { ensureConsoleBuilt } from '../helpers/console-browser.ts';
import { ROOT } from '../helpers/serve-process.ts';

const DIST = join(ROOT, 'dist', 'console');

describe('happy', () => {
  it('the first load is at most 150 KB of JavaScript gzipped', async () => {
    await ensureConsoleBuilt();
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
    const preloads = [...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(scripts.length >= 1);
    const gzipped = [...scripts, ...preloads].reduce(
      (sum, src) => sum + gzipSync(readFileSync(join(DIST, src)), { level: 9 }).length,
      0,
    );
    console.log(`# console: first-load JavaScript ${(gzipped / 1024).toFixed(1)} KB gzipped`);
    assert.ok(gzipped <= 150 * 1024, `${gzipped} bytes gzipped`);
  });

  it('the built pages have no inline script, style or event handler (the CSP would refuse them)', async () => {
    await ensureConsoleBuilt();
    for (const page of ['index.html', 'errors.html']) {
      const html = readFileSync(join(DIST, page), 'utf8');
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, `${page}: inline script`);
      assert.doesNotMatch(html, /<style|\sstyle="|\son[a-z]+="/i, `${page}: inline style or handler`);
    }
  });
});
