#!/usr/bin/env node
// Entry point: runs the TypeScript sources through tsx so there is no build step to forget.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/index.ts');
