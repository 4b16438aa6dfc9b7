// Devices and labels (contract §4.6): list, get, label CRUD, devices:batchUpdate and devices:transfer.
// The emulator endpoints, publish, history and streams live in their own route files.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { devicePageBody } from '../../services/device-json.ts';
import { listDeviceListing, type DeviceListParams } from '../../services/device-query.ts';
import * as service from '../../services/devices.ts';
import type { App } from '../types.ts';
import { PagingQuery, UpdateMaskQuery, parseUpdateMask, principalOf } from '../http.ts';

export const DeviceSchema = Type.Object({
  name: Type.String(), type: Type.String(), productNumber: Type.String(),
  labels: Type.Record(Type.String(), Type.String()), reported: Type.Record(Type.String(), Type.Unknown()),
});
export const LabelSchema = Type.Object({ name: Type.String(), key: Type.String(), value: Type.String() });
export const BatchErrorSchema = Type.Object({
  device: Type.String(), status: Type.Object({ code: Type.String(), message: Type.String() }),
});

const Strings = (description: string) => Type.Optional(Type.Array(Type.String(), { description }));
const DeviceListQuery = Type.Object({
  ...PagingQuery,
  deviceIds: Strings('Device ids (repeated key; ORed)'),
  deviceTypes: Strings('Device types (repeated key; ORed)'),
  productNumbers: Strings('Product numbers (repeated key; ORed)'),
  labelFilters: Strings('key=value (exact) or key (present); all must hold'),
  query: Type.Optional(Type.String({ description: 'Case-insensitive substring of the id, type, or any label key or value' })),
  orderBy: Type.Optional(Type.String({ description: 'name|id, type, productNumber, labels.<key>, reported.<eventType>.<field>; "-" prefix = descending' })),
  organization: Type.Optional(Type.String({ description: 'organizations/{o}; only with the wildcard project "-"' })),
  projects: Strings('projects/{p} (repeated key); only with the wildcard project "-"'),
});

const LabelBody = Type.Object({ key: Type.String(), value: Type.Optional(Type.String()) });
const LabelPatchBody = Type.Object({ key: Type.Optional(Type.String()), value: Type.Optional(Type.String()) });
const BatchUpdateBody = Type.Object({
  devices: Type.Array(Type.String(), { description: 'projects/{p}/devices/{d} or bare device ids' }),
  addLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
  removeLabels: Type.Optional(Type.Array(Type.String())),
});
const TransferBody = Type.Object({ devices: Type.Array(Type.String(), { description: 'projects/{source}/devices/{d}' }) });

type Params = { project: string; device: string; key: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;

const DEVICE_PATH = '/v2/projects/:project/devices/:device';

export function registerDeviceRoutes(app: App, deps: Deps): void {
  app.get('/v2/projects/:project/devices', {
    schema: { querystring: DeviceListQuery },
    config: { summary: 'List devices (project "-" = every readable project of an organization or project list)', response: Type.Object({ devices: Type.Array(DeviceSchema), nextPageToken: Type.String() }) },
  }, async (request, reply) => {
    // Served as prebuilt UTF-8 (device-json.ts): the same bytes as serialising presentDevice objects, much cheaper.
    const { items, nextPageToken } = await listDeviceListing(deps, principalOf(request), paramsOf(request).project, request.query as DeviceListParams);
    reply.type('application/json; charset=utf-8');
    return devicePageBody(items, nextPageToken);
  });

  app.get(DEVICE_PATH, { config: { summary: 'Get a device (project "-" finds it in any readable project)', response: DeviceSchema } }, async (request) => {
    const { project, device } = paramsOf(request);
    return service.presentDevice(await service.getDevice(deps, principalOf(request), project, device));
  });

  app.post(`${DEVICE_PATH}/labels`, {
    schema: { body: LabelBody },
    config: { summary: 'Add a label to a device (409 if the key exists)', response: LabelSchema },
  }, async (request) => {
    const { project, device } = paramsOf(request);
    const r = await service.addLabel(deps, principalOf(request), project, device, request.body);
    return service.presentLabel(r.device, r.key, r.value);
  });

  app.patch(`${DEVICE_PATH}/labels/:key`, {
    schema: { body: LabelPatchBody, querystring: Type.Object(UpdateMaskQuery) },
    config: { summary: "Change a label's value", response: LabelSchema },
  }, async (request) => {
    const { project, device, key } = paramsOf(request);
    const r = await service.updateLabel(deps, principalOf(request), project, device, key, request.body ?? {}, parseUpdateMask(request.query.updateMask));
    return service.presentLabel(r.device, r.key, r.value);
  });

  app.delete(`${DEVICE_PATH}/labels/:key`, { config: { summary: 'Remove a label from a device', response: Type.Object({}) } }, async (request) => {
    const { project, device, key } = paramsOf(request);
    await service.deleteLabel(deps, principalOf(request), project, device, key);
    return {};
  });

  app.post('/v2/projects/:project/devices/@batchUpdate', {
    schema: { body: BatchUpdateBody },
    config: { summary: 'Add and remove labels on many devices', response: Type.Object({ batchErrors: Type.Array(BatchErrorSchema) }) },
  }, async (request) => service.batchUpdateLabels(deps, principalOf(request), paramsOf(request).project, request.body));

  app.post('/v2/projects/:project/devices/@transfer', {
    schema: { body: TransferBody },
    config: { summary: 'Move devices into this project', response: Type.Object({ transferredDevices: Type.Array(Type.String()), transferErrors: Type.Array(BatchErrorSchema) }) },
  }, async (request) => service.transferDevices(deps, principalOf(request), paramsOf(request).project, request.body));
}
