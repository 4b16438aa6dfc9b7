// Event history (contract §4.7): GET /v2/projects/{p}/devices/{d}/events, newest first.
import { Type } from 'typebox';
import type { Deps } from '../../deps.ts';
import { listDeviceEvents } from '../../services/event-history.ts';
import type { App } from '../types.ts';
import { PagingQuery, principalOf } from '../http.ts';

export const EventSchema = Type.Object({
  eventId: Type.String(), targetName: Type.String(), eventType: Type.String(), data: Type.Unknown(), timestamp: Type.String(),
});

const HistoryQuery = Type.Object({
  eventTypes: Type.Optional(Type.Array(Type.String(), { description: 'Only these event types (repeated key)' })),
  startTime: Type.Optional(Type.String({ description: 'RFC 3339, inclusive; default now minus 24 h' })),
  endTime: Type.Optional(Type.String({ description: 'RFC 3339, inclusive; default now' })),
  ...PagingQuery,
});

export function registerEventRoutes(app: App, deps: Deps): void {
  app.get('/v2/projects/:project/devices/:device/events', {
    schema: { querystring: HistoryQuery },
    config: { summary: 'Event history of a device, newest first', response: Type.Object({ events: Type.Array(EventSchema), nextPageToken: Type.String() }) },
  }, async (request) => {
    const { project, device } = request.params as { project: string; device: string };
    return listDeviceEvents(deps, principalOf(request), project, device, request.query);
  });
}
