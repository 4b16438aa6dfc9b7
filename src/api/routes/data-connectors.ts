// Data connectors (contract §3.9, §4.9): CRUD, :sync, :metrics and :rotateSecret (extensions §X3).
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import * as service from '../../services/data-connectors.ts';
import { rotateSignatureSecret } from '../../services/secret-rotation.ts';
import {
  DataConnectorInputSchema,
  DataConnectorListSchema,
  DataConnectorMetricsSchema,
  DataConnectorSchema,
  MetricsHistorySchema,
  RotateSecretAnswerSchema,
  RotateSecretBodySchema,
} from '../../wire/data-connectors.ts';
import { PageQuerySchema, UpdateMaskQuerySchema } from '../../wire/paging.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';

type Params = { project: string; dc: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;
const DC_PATH = '/v2/projects/:project/dataconnectors/:dc';

export function registerDataConnectorRoutes(app: App, deps: Deps): void {
  app.get(
    '/v2/projects/:project/dataconnectors',
    {
      schema: { querystring: PageQuerySchema },
      config: { summary: 'List the data connectors of a project', response: DataConnectorListSchema },
    },
    async (request) => service.listDataConnectors(deps, principalOf(request), paramsOf(request).project, request.query),
  );

  app.post(
    '/v2/projects/:project/dataconnectors',
    {
      preValidation: noBodyIsEmpty,
      schema: { body: DataConnectorInputSchema },
      config: {
        summary: "Create a data connector (HTTPS push of the project's device events)",
        response: DataConnectorSchema,
      },
    },
    async (request) => service.createDataConnector(deps, principalOf(request), paramsOf(request).project, request.body),
  );

  app.get(DC_PATH, { config: { summary: 'Get a data connector', response: DataConnectorSchema } }, async (request) => {
    const { project, dc } = paramsOf(request);
    return service.getDataConnector(deps, principalOf(request), project, dc);
  });

  app.patch(
    DC_PATH,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: DataConnectorInputSchema, querystring: UpdateMaskQuerySchema },
      config: {
        summary: 'Update a data connector; status ACTIVE/USER_DISABLED enables or disables it',
        response: DataConnectorSchema,
      },
    },
    async (request) => {
      const { project, dc } = paramsOf(request);
      const mask = parseUpdateMask(request.query.updateMask);
      return service.updateDataConnector(deps, principalOf(request), project, dc, request.body, mask);
    },
  );

  app.delete(
    DC_PATH,
    { config: { summary: 'Delete a data connector with its queue and metrics', response: Type.Object({}) } },
    async (request) => {
      const { project, dc } = paramsOf(request);
      await service.deleteDataConnector(deps, principalOf(request), project, dc);
      return {};
    },
  );

  // No body is expected and any body is ignored: rawBody keeps the JSON parser out of it.
  app.post(
    `${DC_PATH}/@sync`,
    {
      config: {
        rawBody: true,
        summary: 'Queue the latest event of each type of each device in the project for this connector',
        response: Type.Object({}),
      },
    },
    async (request) => {
      const { project, dc } = paramsOf(request);
      await service.syncDataConnector(deps, principalOf(request), project, dc);
      return {};
    },
  );

  app.get(
    `${DC_PATH}/@metrics`,
    { config: { summary: 'Delivery metrics of the last 3 hours', response: DataConnectorMetricsSchema } },
    async (request) => {
      const { project, dc } = paramsOf(request);
      return { metrics: await service.getDataConnectorMetrics(deps, principalOf(request), project, dc) };
    },
  );

  // Not a paged list: the window is fixed (3 hours) and holds at most 181 one-minute buckets.
  app.get(
    `${DC_PATH}/@metricsHistory`,
    {
      config: {
        summary: 'Per-minute success and error counts of the last 3 hours (the series behind :metrics)',
        response: MetricsHistorySchema,
      },
    },
    async (request) => {
      const { project, dc } = paramsOf(request);
      return {
        bucketDuration: '60s',
        buckets: await service.getDataConnectorMetricsHistory(deps, principalOf(request), project, dc),
      };
    },
  );

  app.post(
    `${DC_PATH}/@rotateSecret`,
    {
      preValidation: noBodyIsEmpty,
      schema: { body: RotateSecretBodySchema },
      config: {
        summary:
          'Switch to a new signature secret; during the overlap every push is also signed with the previous one (X-Service-Signature-Previous)',
        response: RotateSecretAnswerSchema,
      },
    },
    async (request) => {
      const { project, dc } = paramsOf(request);
      return rotateSignatureSecret(deps, principalOf(request), project, dc, request.body);
    },
  );
}
