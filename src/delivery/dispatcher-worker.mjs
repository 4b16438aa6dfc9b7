// Entry of the dispatcher thread when the service runs from its TypeScript sources (tests, the bench harness):
// Node 20 does not apply the main thread's --import loader to a worker's entry module, so this plain-JavaScript
// entry registers tsx itself before loading the TypeScript host. The compiled service (dist/) starts
// dispatcher-host.js directly, and the build does not copy this file.
import { register } from 'tsx/esm/api';

register();
await import('./dispatcher-host.ts');
