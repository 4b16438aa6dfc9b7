// The console's static files (src/api/console-static.ts): security headers, caching, the SPA fallback for deep
// links, /docs/errors, and the API's own 404 for unknown /v2 paths.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { inject, type DispatchFunc } from 'light-my-request';
import { createApp, type App } from '../../src/api/app.ts';
import { createTestContext, type TestContext } from '../helpers/context.ts';

let t: TestContext;
let app: App;
let dir: string;
const INDEX =
  '<!doctype html><html lang="en"><title>console</title><script type="module" src="/assets/index-abc123.js"></script></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(2000))});`;

before(async () => {
  t = await createTestContext();
  dir = mkdtempSync(join(tmpdir(), 'sensorcloud-console-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'errors.html'), '<!doctype html><title>errors</title><h2 id="404">404</h2>');
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), SCRIPT);
  writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  app = await createApp(t.deps, { consoleDir: dir });
  await app.ready();
});
after(async () => {
  await app.close();
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = (url: string, headers: Record<string, string> = {}) =>
  inject(app.server.listeners('request')[0] as DispatchFunc, { method: 'GET', url, headers });

describe('happy', () => {
  it('/ is the console page with a strict CSP, nosniff, no framing and no caching', async () => {
    const res = await get('/');
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, INDEX);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    const csp = String(res.headers['content-security-policy']);
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "frame-ancestors 'none'",
      "object-src 'none'",
      "base-uri 'none'",
    ]) {
      assert.ok(csp.includes(directive), `${directive} missing from ${csp}`);
    }
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'));
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    assert.equal(res.headers['cache-control'], 'no-cache');
  });

  it('deep links get the console page (the browser routes), query strings included', async () => {
    for (const url of [
      '/projects/abc/devices',
      '/projects/abc/devices/emu1?range=24h',
      '/invite/sometoken',
      '/signin',
    ]) {
      const res = await get(url);
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.body, INDEX, url);
    }
  });

  it('hashed assets are immutable for a year and gzipped when accepted', async () => {
    const plain = await get('/assets/index-abc123.js');
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.body, SCRIPT);
    assert.equal(plain.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(plain.headers['content-encoding'], undefined);
    const gz = await get('/assets/index-abc123.js', { 'accept-encoding': 'gzip, br' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.ok(gz.rawPayload.length < SCRIPT.length / 4);
  });

  it('/docs/errors is the served error page', async () => {
    const res = await get('/docs/errors');
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /id="404"/);
    assert.ok(res.headers['content-security-policy']);
  });
});

describe('sad', () => {
  it('unknown /v2 and /oauth2 paths keep the API 404 body', async () => {
    for (const url of ['/v2/nothing', '/v2/projects/x/unknown/deeper', '/oauth2/nothing']) {
      const res = await get(url);
      assert.equal(res.statusCode, 404, url);
      assert.deepEqual(JSON.parse(res.body), {
        error: 'not found',
        code: 404,
        help: 'http://127.0.0.1:8080/docs/errors#404',
      });
    }
  });

  it('a missing asset is a 404, never the page', async () => {
    for (const url of ['/assets/gone-123.js', '/robots.txt']) {
      const res = await get(url);
      assert.equal(res.statusCode, 404, url);
      assert.doesNotMatch(res.body, /<html/);
    }
  });

  it('without a build the service still answers: a page saying how to build, and the API', async () => {
    const bare = await createApp(t.deps, { consoleDir: join(dir, 'missing') });
    try {
      await bare.ready();
      const listener = bare.server.listeners('request')[0] as DispatchFunc;
      const res = await inject(listener, { method: 'GET', url: '/' });
      assert.equal(res.statusCode, 503);
      assert.match(res.body, /npm run build/);
      assert.equal((await inject(listener, { method: 'GET', url: '/healthz' })).statusCode, 200);
    } finally {
      await bare.close();
    }
  });
});
