// A second in-process service over the database of a test context and its data dir (so the same master key), as
// a second process of a PostgreSQL cluster is: its own store connections, its own caches, the same clock. Only for a
// shared store: a SQLite store belongs to one process.
import { inject, type DispatchFunc } from 'light-my-request';
import { createApp } from '../../src/api/app.ts';
import { loadConfig } from '../../src/config.ts';
import { buildDeps, type BuiltDeps } from '../../src/main.ts';
import { createSilentLogger } from '../../src/runtime/logger.ts';
import type { TestContext } from './context.ts';
import { reopenTestStore } from './store.ts';

export interface SecondProcess {
  deps: BuiltDeps;
  /** A request with these headers only (no credentials added); the status and the parsed body. */
  request(
    method: string,
    url: string,
    headers?: Record<string, string>,
    payload?: string,
  ): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export async function openSecondProcess(t: TestContext, env: Record<string, string> = {}): Promise<SecondProcess> {
  if (t.deps.store.exclusive) throw new Error('a SQLite store belongs to one process: no second process on it');
  const config = loadConfig({
    SENSORCLOUD_RATE_LIMIT: 'off',
    SENSORCLOUD_HEARTBEAT_INTERVAL: '0',
    ...env,
    SENSORCLOUD_DATA_DIR: t.dataDir,
  });
  const deps = buildDeps(config, {
    clock: t.clock,
    logger: createSilentLogger(),
    store: await reopenTestStore(t.dataDir),
  });
  const app = await createApp(deps);
  await app.ready();
  const listener = app.server.listeners('request')[0] as DispatchFunc;
  return {
    deps,
    async request(method, url, headers = {}, payload) {
      const res = await inject(listener, { method: method as 'GET', url, headers, payload });
      return { status: res.statusCode, body: res.body === '' ? undefined : JSON.parse(res.body) };
    },
    async close() {
      await app.close();
      await deps.store.close();
    },
  };
}
