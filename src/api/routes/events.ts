// Event history (contract §4.7): GET /v2/projects/{p}/devices/{d}/events, newest first.
import type { Deps } from '../../deps.ts';
import { listDeviceEvents } from '../../services/event-history.ts';
import { DeviceEventListSchema, EventHistoryParamsSchema } from '../../wire/events.ts';
import type { App } from '../types.ts';
import { principalOf } from '../http.ts';

export function registerEventRoutes(app: App, deps: Deps): void {
  app.get(
    '/v2/projects/:project/devices/:device/events',
    {
      schema: { querystring: EventHistoryParamsSchema },
      config: { summary: 'Event history of a device, newest first', response: DeviceEventListSchema },
    },
    async (request) => {
      const { project, device } = request.params as { project: string; device: string };
      return listDeviceEvents(deps, principalOf(request), project, device, request.query);
    },
  );
}
