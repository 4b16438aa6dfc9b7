// Entry of the dispatcher thread (dispatcher-thread.ts). Plain JavaScript: a worker does not inherit the
// TypeScript loader of the main thread, so it registers tsx itself before loading the TypeScript host.
import { register } from 'tsx/esm/api';

register();
await import('./dispatcher-host.ts');
