// GET /metrics: delivery metrics in the Prometheus text format, for operators (no auth, like /healthz).
import type { Deps } from '../../deps.ts';
import { renderPrometheus } from '../../services/operations.ts';
import type { App } from '../types.ts';

export function registerMetricsRoutes(app: App, deps: Deps): void {
  app.get(
    '/metrics',
    { config: { auth: false, summary: 'Delivery metrics (Prometheus text format)' } },
    async (_request, reply) => {
      reply.header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8');
      return renderPrometheus(deps);
    },
  );
}
