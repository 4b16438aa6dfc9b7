#!/usr/bin/env node
// Entry point: runs the service bundled into dist/service/ by `npm run build` (npm's `prepare`, so `npm ci` builds it).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/service/cli.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('sensorcloud: the compiled service is missing (dist/); run `npm ci` or `npm run build` first\n');
  process.exit(2);
}
await import(entry.href);
