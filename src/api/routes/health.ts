// GET /healthz: 200 when the store answers and takes writes, 503 otherwise (contract §1.1).
import type { Deps } from '../../deps.ts';
import { checkHealth } from '../../services/operations.ts';
import type { App } from '../types.ts';

export function registerHealthRoutes(app: App, deps: Deps): void {
  app.get('/healthz', { config: { auth: false } }, async () => checkHealth(deps));
}
