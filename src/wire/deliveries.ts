// The delivery log and recovery on the wire (extensions §X1, §X2): a delivery with its attempts, the log's list and
// its query, and the bodies and answers of :resend, :replay and :test.
import { Type, type Static } from 'typebox';
import { PagingQuery } from './paging.ts';

/** One push attempt of a delivery. */
export const DeliveryAttemptSchema = Type.Object({
  attemptTime: Type.String({ description: 'when the attempt started, RFC 3339' }),
  duration: Type.String({ description: 'until the answer\'s headers arrived or the attempt failed, "0.123s"' }),
  outcome: Type.String({
    description:
      'SUCCESS, HTTP_ERROR, TIMEOUT, CONNECTION_REFUSED, CONNECTION_RESET, TLS_ERROR, DNS_ERROR, BLOCKED_ADDRESS (no request was made) or OTHER',
  }),
  httpStatus: Type.Integer({ description: '0 when there was no HTTP answer' }),
  responseBody: Type.String({
    description: 'the first 1,024 bytes of the answer, decoded as UTF-8 (invalid bytes replaced by U+FFFD)',
  }),
  responseBodyTruncated: Type.Boolean({
    description: 'the answer was longer than responseBody, or did not arrive whole',
  }),
  error: Type.String({ description: 'one short line; "" on success' }),
});
export type DeliveryAttempt = Static<typeof DeliveryAttemptSchema>;

const DeliveryFields = {
  name: Type.String({ description: 'projects/{p}/dataconnectors/{dc}/deliveries/{id}' }),
  eventId: Type.String(),
  eventType: Type.String(),
  targetName: Type.String({ description: 'the device, projects/{p}/devices/{d}' }),
  trigger: Type.String({ description: 'EVENT (published), SYNC, RESEND, REPLAY or TEST' }),
  state: Type.String({
    description:
      'PENDING (queued or in flight), RETRYING (next attempt scheduled), DELIVERED, EXPIRED (not acknowledged within 12 h), DISCARDED (connector disabled or deleted) or FAILED (a TEST whose attempt failed)',
  }),
  attemptCount: Type.Integer(),
  createTime: Type.String({ description: 'enqueued' }),
  updateTime: Type.String({ description: 'last change of state' }),
  nextAttemptTime: Type.String({
    description:
      'when the next attempt is due (PENDING, RETRYING); "" while an attempt is in flight and in final states',
  }),
};

/** A delivery as listed: no `attempts` key. */
export const DeliverySummarySchema = Type.Object(DeliveryFields);
export type DeliverySummary = Static<typeof DeliverySummarySchema>;

/** One delivery read alone (GET …/deliveries/{id}, :resend, :test): with its attempts, oldest first. */
export const DeliverySchema = Type.Object({
  ...DeliveryFields,
  attempts: Type.Array(DeliveryAttemptSchema, { description: 'oldest first' }),
});
export type Delivery = Static<typeof DeliverySchema>;

export const DeliveryListSchema = Type.Object({
  deliveries: Type.Array(DeliverySummarySchema, { description: 'newest first' }),
  nextPageToken: Type.String(),
});
export type DeliveryList = Static<typeof DeliveryListSchema>;

/** Query parameters of GET …/dataconnectors/{dc}/deliveries, after camel-casing (src/api/query.ts). */
export const DeliveryListParamsSchema = Type.Object({
  ...PagingQuery,
  state: Type.Optional(Type.Array(Type.String(), { description: 'Only deliveries in these states (repeated key)' })),
  trigger: Type.Optional(Type.String({ description: 'Only deliveries of this trigger' })),
  eventId: Type.Optional(Type.String({ description: 'Only deliveries of this event' })),
  device: Type.Optional(
    Type.String({ description: 'Only deliveries of this device: its id or projects/{p}/devices/{d}' }),
  ),
  startTime: Type.Optional(Type.String({ description: 'RFC 3339; created at or after' })),
  endTime: Type.Optional(Type.String({ description: 'RFC 3339; created before' })),
});
export type DeliveryListParams = Static<typeof DeliveryListParamsSchema>;

/** :resend takes no fields; any given are ignored. */
export const ResendBodySchema = Type.Object({});

/** :resend and :test: the delivery made. */
export const DeliveryAnswerSchema = Type.Object({ delivery: DeliverySchema });
export type DeliveryAnswer = Static<typeof DeliveryAnswerSchema>;

// Types only; the service validates meaning and names the field.
export const ReplayBodySchema = Type.Object({
  startTime: Type.Optional(Type.String({ description: 'RFC 3339, inclusive (on the event timestamp); required' })),
  endTime: Type.Optional(Type.String({ description: 'RFC 3339, exclusive; required, after startTime' })),
  onlyUndelivered: Type.Optional(
    Type.Boolean({
      description: 'only events without a DELIVERED delivery to this connector in the log (default false)',
    }),
  ),
  eventTypes: Type.Optional(
    Type.Array(Type.String(), { description: "only these event types (within the connector's events filter)" }),
  ),
});
export type ReplayBody = Static<typeof ReplayBodySchema>;

export const ReplayAnswerSchema = Type.Object({
  replayedCount: Type.Integer({ description: 'events queued again as REPLAY deliveries' }),
});
export type ReplayAnswer = Static<typeof ReplayAnswerSchema>;

export const TestPushBodySchema = Type.Object({
  eventType: Type.Optional(Type.String({ description: 'the event type of the example event (default touch)' })),
});
export type TestPushBody = Static<typeof TestPushBodySchema>;
