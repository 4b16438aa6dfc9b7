// The sensor emulator in the /v2 API (contract §4.10): create, replace and delete emulated devices, publish events.
// Reading devices (GET) lives in devices.ts.
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { createEmulatedDevice, deleteEmulatedDevice, replaceEmulatedDevice } from '../../emulator/devices.ts';
import { requireProject } from '../../services/access.ts';
import { presentDevice } from '../../services/devices.ts';
import { publishAsCaller } from '../../services/publish.ts';
import { DeviceSchema } from '../../wire/devices.ts';
import {
  EmulatedDeviceInputSchema,
  EmulatedDeviceReplacementSchema,
  PublishRequestSchema,
} from '../../wire/emulator.ts';
import type { App } from '../types.ts';
import { noBodyIsEmpty, principalOf } from '../http.ts';

type Params = { project: string; device: string };
const paramsOf = (request: FastifyRequest) => request.params as Params;

const DEVICE_PATH = '/v2/projects/:project/devices/:device';

export function registerEmulatorRoutes(app: App, deps: Deps): void {
  app.post(
    '/v2/projects/:project/devices',
    {
      schema: { body: EmulatedDeviceInputSchema },
      config: { summary: 'Create an emulated device', response: DeviceSchema },
    },
    async (request) => {
      const { project } = paramsOf(request);
      await requireProject(deps, principalOf(request), project, 'emulator.create');
      return presentDevice(await createEmulatedDevice(deps, project, request.body));
    },
  );

  app.put(
    DEVICE_PATH,
    {
      schema: { body: EmulatedDeviceReplacementSchema },
      config: {
        summary: 'Replace the labels of an emulated device (emits labelsChanged when they change)',
        response: DeviceSchema,
      },
    },
    async (request) => {
      const { project, device } = paramsOf(request);
      await requireProject(deps, principalOf(request), project, 'emulator.update');
      return presentDevice(await replaceEmulatedDevice(deps, project, device, request.body));
    },
  );

  app.delete(
    DEVICE_PATH,
    {
      config: { summary: 'Delete an emulated device with its history', response: Type.Object({}) },
    },
    async (request) => {
      const { project, device } = paramsOf(request);
      await requireProject(deps, principalOf(request), project, 'emulator.delete');
      await deleteEmulatedDevice(deps, project, device);
      return {};
    },
  );

  app.post(
    `${DEVICE_PATH}/@publish`,
    {
      // No body is "no keys": the publish rules then name the problem (§5.3).
      preValidation: noBodyIsEmpty,
      schema: { body: PublishRequestSchema },
      config: { summary: 'Publish an event from an emulated device', response: Type.Object({}) },
    },
    async (request) => {
      const { project, device } = paramsOf(request);
      await publishAsCaller(deps, principalOf(request), project, device, request.body);
      return {};
    },
  );
}
