// Devices and labels (contract §4.6): list, get, label CRUD, devices:batchUpdate and devices:transfer.
// The emulator endpoints, publish, history and streams live in their own route files.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { devicePageBody } from '../../services/device-json.ts';
import { listDeviceListing } from '../../services/device-query.ts';
import * as service from '../../services/devices.ts';
import {
  BatchUpdateDevicesRequestSchema,
  BatchUpdateDevicesResponseSchema,
  DeviceListParamsSchema,
  DeviceListSchema,
  DeviceSchema,
  LabelInputSchema,
  LabelPatchSchema,
  LabelSchema,
  TransferDevicesRequestSchema,
  TransferDevicesResponseSchema,
} from '../../wire/devices.ts';
import { UpdateMaskQuerySchema } from '../../wire/paging.ts';
import type { App } from '../types.ts';
import { parseUpdateMask, principalOf } from '../http.ts';

type Params = { project: string; device: string; key: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;

const DEVICE_PATH = '/v2/projects/:project/devices/:device';

export function registerDeviceRoutes(app: App, deps: Deps): void {
  app.get(
    '/v2/projects/:project/devices',
    {
      schema: { querystring: DeviceListParamsSchema },
      config: {
        summary: 'List devices (project "-" = every readable project of an organization or project list)',
        response: DeviceListSchema,
      },
    },
    async (request, reply) => {
      // Served as prebuilt UTF-8 (device-json.ts): the same bytes as serialising presentDevice objects, much cheaper.
      const { items, nextPageToken } = await listDeviceListing(
        deps,
        principalOf(request),
        paramsOf(request).project,
        request.query,
      );
      reply.type('application/json; charset=utf-8');
      return devicePageBody(items, nextPageToken);
    },
  );

  app.get(
    DEVICE_PATH,
    { config: { summary: 'Get a device (project "-" finds it in any readable project)', response: DeviceSchema } },
    async (request) => {
      const { project, device } = paramsOf(request);
      return service.presentDevice(await service.getDevice(deps, principalOf(request), project, device));
    },
  );

  app.post(
    `${DEVICE_PATH}/labels`,
    {
      schema: { body: LabelInputSchema },
      config: { summary: 'Add a label to a device (409 if the key exists)', response: LabelSchema },
    },
    async (request) => {
      const { project, device } = paramsOf(request);
      const r = await service.addLabel(deps, principalOf(request), project, device, request.body);
      return service.presentLabel(r.device, r.key, r.value);
    },
  );

  app.patch(
    `${DEVICE_PATH}/labels/:key`,
    {
      schema: { body: LabelPatchSchema, querystring: UpdateMaskQuerySchema },
      config: { summary: "Change a label's value", response: LabelSchema },
    },
    async (request) => {
      const { project, device, key } = paramsOf(request);
      const r = await service.updateLabel(
        deps,
        principalOf(request),
        project,
        device,
        key,
        request.body ?? {},
        parseUpdateMask(request.query.updateMask),
      );
      return service.presentLabel(r.device, r.key, r.value);
    },
  );

  app.delete(
    `${DEVICE_PATH}/labels/:key`,
    { config: { summary: 'Remove a label from a device', response: Type.Object({}) } },
    async (request) => {
      const { project, device, key } = paramsOf(request);
      await service.deleteLabel(deps, principalOf(request), project, device, key);
      return {};
    },
  );

  app.post(
    '/v2/projects/:project/devices/@batchUpdate',
    {
      schema: { body: BatchUpdateDevicesRequestSchema },
      config: { summary: 'Add and remove labels on many devices', response: BatchUpdateDevicesResponseSchema },
    },
    async (request) => service.batchUpdateLabels(deps, principalOf(request), paramsOf(request).project, request.body),
  );

  app.post(
    '/v2/projects/:project/devices/@transfer',
    {
      schema: { body: TransferDevicesRequestSchema },
      config: { summary: 'Move devices into this project', response: TransferDevicesResponseSchema },
    },
    async (request) => service.transferDevices(deps, principalOf(request), paramsOf(request).project, request.body),
  );
}
