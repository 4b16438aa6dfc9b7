// Alerts (extensions §X5): the project's alerts, one alert, :acknowledge and :resolve.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { acknowledgeAlertAsUser, getAlert, listAlerts, resolveAlertAsUser } from '../../services/alerts.ts';
import { AlertListQuerySchema, AlertListSchema, AlertSchema } from '../../wire/alerts.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, principalOf } from '../http.ts';

type Params = { project: string; alert: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;
const ALERTS = '/v2/projects/:project/alerts';
const ALERT = `${ALERTS}/:alert`;
const EmptyBody = Type.Object({});

export function registerAlertRoutes(app: App, deps: Deps): void {
  app.get(
    ALERTS,
    {
      schema: { querystring: AlertListQuerySchema },
      config: {
        summary: "List the project's alerts, newest first (by state, rule, device)",
        response: AlertListSchema,
      },
    },
    async (request) => listAlerts(deps, principalOf(request), paramsOf(request).project, request.query),
  );

  app.get(
    ALERT,
    { config: { summary: 'Get an alert with its notifications', response: AlertSchema } },
    async (request) => {
      const { project, alert } = paramsOf(request);
      return getAlert(deps, principalOf(request), project, alert);
    },
  );

  app.post(
    `${ALERT}/@acknowledge`,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: EmptyBody },
      config: { summary: 'Acknowledge an alert: escalation stops until unacknowledgesAfter', response: AlertSchema },
    },
    async (request) => {
      const { project, alert } = paramsOf(request);
      return acknowledgeAlertAsUser(deps, principalOf(request), project, alert);
    },
  );

  app.post(
    `${ALERT}/@resolve`,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: EmptyBody },
      config: {
        summary: 'Resolve an alert (a resolved notification when the rule asks for it)',
        response: AlertSchema,
      },
    },
    async (request) => {
      const { project, alert } = paramsOf(request);
      return resolveAlertAsUser(deps, principalOf(request), project, alert);
    },
  );
}
