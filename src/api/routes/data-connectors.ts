// Data connectors (contract §3.9, §4.9): CRUD, :sync and :metrics.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import * as service from '../../services/data-connectors.ts';
import type { App } from '../types.ts';
import { PagingQuery, UpdateMaskQuery, noBodyIsEmpty, parseUpdateMask, principalOf } from '../http.ts';

const HttpConfigSchema = Type.Object({
  url: Type.String(), signatureSecret: Type.String(), headers: Type.Record(Type.String(), Type.String()),
});

export const DataConnectorSchema = Type.Object({
  name: Type.String(), displayName: Type.String(), type: Type.String(), status: Type.String(),
  events: Type.Array(Type.String()), labels: Type.Array(Type.String()), httpConfig: HttpConfigSchema,
  createTime: Type.String(), updateTime: Type.String(),
});

// Types only; the service validates meaning and names the field. Unknown keys (name, createTime, null configs
// of other connector types…) are allowed and ignored.
const DataConnectorBody = Type.Object({
  type: Type.Optional(Type.String({ description: 'HTTP_PUSH' })),
  displayName: Type.Optional(Type.String({ maxLength: service.MAX_DISPLAY_NAME_LENGTH })),
  status: Type.Optional(Type.String({ description: 'ACTIVE (default) or USER_DISABLED' })),
  events: Type.Optional(Type.Array(Type.String(), { description: 'event types to forward; [] = every type' })),
  labels: Type.Optional(Type.Array(Type.String(), { description: 'device label keys copied into each push' })),
  httpConfig: Type.Optional(Type.Object({
    url: Type.Optional(Type.String({ description: 'https:// endpoint' })),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    signatureSecret: Type.Optional(Type.String({ description: '"" = unsigned' })),
  })),
});

const MetricsSchema = Type.Object({
  metrics: Type.Object({ successCount: Type.Integer(), errorCount: Type.Integer(), latency99p: Type.String() }),
});

const MetricsHistorySchema = Type.Object({
  bucketDuration: Type.String({ description: 'length of each bucket, "60s"' }),
  buckets: Type.Array(Type.Object({
    startTime: Type.String({ description: 'start of the minute, RFC 3339' }),
    successCount: Type.Integer(),
    errorCount: Type.Integer(),
  }), { description: 'minutes of the last 3 hours that had attempts, oldest first (at most 181)' }),
});

type Params = { project: string; dc: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;
const DC_PATH = '/v2/projects/:project/dataconnectors/:dc';

export function registerDataConnectorRoutes(app: App, deps: Deps): void {
  app.get('/v2/projects/:project/dataconnectors', {
    schema: { querystring: Type.Object(PagingQuery) },
    config: { summary: 'List the data connectors of a project', response: Type.Object({ dataConnectors: Type.Array(DataConnectorSchema), nextPageToken: Type.String() }) },
  }, async (request) => service.listDataConnectors(deps, principalOf(request), paramsOf(request).project, request.query));

  app.post('/v2/projects/:project/dataconnectors', {
    preValidation: noBodyIsEmpty,
    schema: { body: DataConnectorBody },
    config: { summary: 'Create a data connector (HTTPS push of the project\'s device events)', response: DataConnectorSchema },
  }, async (request) => service.createDataConnector(deps, principalOf(request), paramsOf(request).project, request.body as service.DataConnectorInput));

  app.get(DC_PATH, { config: { summary: 'Get a data connector', response: DataConnectorSchema } }, async (request) => {
    const { project, dc } = paramsOf(request);
    return service.getDataConnector(deps, principalOf(request), project, dc);
  });

  app.patch(DC_PATH, {
    preValidation: noBodyIsEmpty,
    schema: { body: DataConnectorBody, querystring: Type.Object(UpdateMaskQuery) },
    config: { summary: 'Update a data connector; status ACTIVE/USER_DISABLED enables or disables it', response: DataConnectorSchema },
  }, async (request) => {
    const { project, dc } = paramsOf(request);
    const mask = parseUpdateMask(request.query.updateMask);
    return service.updateDataConnector(deps, principalOf(request), project, dc, request.body as service.DataConnectorInput, mask);
  });

  app.delete(DC_PATH, { config: { summary: 'Delete a data connector with its queue and metrics', response: Type.Object({}) } }, async (request) => {
    const { project, dc } = paramsOf(request);
    await service.deleteDataConnector(deps, principalOf(request), project, dc);
    return {};
  });

  // No body is expected and any body is ignored: rawBody keeps the JSON parser out of it.
  app.post(`${DC_PATH}/@sync`, {
    config: { rawBody: true, summary: 'Queue the latest event of each type of each device in the project for this connector', response: Type.Object({}) },
  }, async (request) => {
    const { project, dc } = paramsOf(request);
    await service.syncDataConnector(deps, principalOf(request), project, dc);
    return {};
  });

  app.get(`${DC_PATH}/@metrics`, { config: { summary: 'Delivery metrics of the last 3 hours', response: MetricsSchema } }, async (request) => {
    const { project, dc } = paramsOf(request);
    return { metrics: await service.getDataConnectorMetrics(deps, principalOf(request), project, dc) };
  });

  // Not a paged list: the window is fixed (3 hours) and holds at most 181 one-minute buckets.
  app.get(`${DC_PATH}/@metricsHistory`, {
    config: { summary: 'Per-minute success and error counts of the last 3 hours (the series behind :metrics)', response: MetricsHistorySchema },
  }, async (request) => {
    const { project, dc } = paramsOf(request);
    return { bucketDuration: '60s', buckets: await service.getDataConnectorMetricsHistory(deps, principalOf(request), project, dc) };
  });
}
