// Vite build of the web console into dist/console/ (served by the API process, src/api/console-static.ts).
// Two pages: the console (index.html, a single-page app) and the served error reference (errors.html, no script).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  publicDir: 'public',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console/', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The strict CSP allows no inline script: keep Vite from inlining the module-preload helper.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    rollupOptions: { input: { index: `${root}index.html`, errors: `${root}errors.html` } },
  },
});
