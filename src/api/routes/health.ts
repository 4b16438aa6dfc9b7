// GET /healthz: 200 when the store answers, 503 otherwise (contract §1.1).
import type { Deps } from '../../deps.ts';
import { unavailable } from '../../domain/errors.ts';
import type { App } from '../app.ts';

export function registerHealthRoutes(app: App, deps: Deps): void {
  app.get('/healthz', { config: { auth: false } }, async () => {
    try {
      await deps.store.ping();
    } catch {
      throw unavailable('store unavailable');
    }
    return { status: 'ok' };
  });
}
