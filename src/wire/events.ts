// Device events on the wire (contract §4.7, §4.8, §5.1): the event envelope, the history list and its query, and the
// stream queries and messages.
import { Type, type Static } from 'typebox';
import { PagingQuery } from './paging.ts';

/**
 * The event envelope, as stored, pushed and streamed. Key order is part of the wire contract: eventId, targetName,
 * eventType, data, timestamp (the pipeline builds it in that order; a type cannot say so).
 */
export const DeviceEventSchema = Type.Object({
  eventId: Type.String(),
  targetName: Type.String(),
  eventType: Type.String(),
  data: Type.Unknown(),
  timestamp: Type.String(),
});
export type DeviceEvent = Static<typeof DeviceEventSchema>;

export const DeviceEventListSchema = Type.Object({
  events: Type.Array(DeviceEventSchema),
  nextPageToken: Type.String(),
});
export type DeviceEventList = Static<typeof DeviceEventListSchema>;

export const EventHistoryParamsSchema = Type.Object({
  eventTypes: Type.Optional(Type.Array(Type.String(), { description: 'Only these event types (repeated key)' })),
  startTime: Type.Optional(Type.String({ description: 'RFC 3339, inclusive; default now minus 24 h' })),
  endTime: Type.Optional(Type.String({ description: 'RFC 3339, inclusive; default now' })),
  ...PagingQuery,
});
export type EventHistoryParams = Static<typeof EventHistoryParamsSchema>;

const StreamFilters = {
  deviceIds: Type.Optional(Type.Array(Type.String(), { description: 'Device IDs (repeated key)' })),
  deviceTypes: Type.Optional(Type.Array(Type.String(), { description: 'Device types (repeated key)' })),
  labelFilters: Type.Optional(
    Type.Array(Type.String(), { description: '`key=value` for an exact value, `key` for presence (repeated key)' }),
  ),
  productNumbers: Type.Optional(Type.Array(Type.String(), { description: 'Product numbers (repeated key)' })),
};
const StreamCommon = {
  eventTypes: Type.Optional(Type.Array(Type.String(), { description: 'Event types (repeated key)' })),
  pingInterval: Type.Optional(
    Type.String({ description: 'Seconds between pings: "10s", "1.5s" or a number; default 10, clamped to 1-60' }),
  ),
};

/** GET …/devices:stream: the filters of a device list (values ORed within a filter, filters ANDed). */
export const ProjectStreamQuerySchema = Type.Object({ ...StreamFilters, ...StreamCommon });
export type ProjectStreamQuery = Static<typeof ProjectStreamQuerySchema>;

/** GET …/devices/{d}:stream. */
export const DeviceStreamQuerySchema = Type.Object(StreamCommon);
export type DeviceStreamQuery = Static<typeof DeviceStreamQuerySchema>;

/** One NDJSON line or SSE message of a stream. */
export const StreamMessageSchema = Type.Object({
  result: Type.Object({
    event: DeviceEventSchema,
  }),
});
