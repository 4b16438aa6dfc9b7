// Data connectors on the wire (contract §3.9, §4.9): the connector (every key always present), its list, the body
// of create and patch, the :metrics and :metricsHistory answers, :rotateSecret's body and answer (extensions §X3)
// and the delivery controls (§X4).
import { Type, type Static } from 'typebox';

export const MAX_DISPLAY_NAME_LENGTH = 256;

/** signatureSecret and header values are "" for callers without dataconnector.update (contract §7 #1). */
export const HttpConfigSchema = Type.Object({
  url: Type.String(),
  signatureSecret: Type.String(),
  headers: Type.Record(Type.String(), Type.String()),
  // Extensions §X3: not a secret, shown to every reader. Read-only: create and PATCH ignore it.
  previousSignatureSecretExpireTime: Type.String({
    description:
      'RFC 3339: until then every push is also signed with the previous secret (X-Service-Signature-Previous), after a :rotateSecret; "" when no overlap runs',
  }),
});
export type HttpConfig = Static<typeof HttpConfigSchema>;

/** Extensions §X4: delivery controls, every key always present on a read. */
export const DeliveryConfigSchema = Type.Object({
  maxConcurrency: Type.Integer({ description: 'pushes of this connector open at once, across every process: 1 to 64' }),
  maxRate: Type.Number({
    description: 'push attempts started per second, at most 10,000; 0 = no limit. Events over it wait in the queue',
  }),
  labelFilters: Type.Record(Type.String(), Type.String(), {
    description:
      'only events of devices carrying every listed label, decided when the event is published; a value "" = the key is present',
  }),
  paused: Type.Boolean({ description: 'events keep queueing (within the 12-hour expiry) and none is pushed' }),
});
export type DeliveryConfig = Static<typeof DeliveryConfigSchema>;

export const DataConnectorSchema = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  type: Type.String(),
  status: Type.String(),
  events: Type.Array(Type.String()),
  labels: Type.Array(Type.String()),
  httpConfig: HttpConfigSchema,
  deliveryConfig: DeliveryConfigSchema,
  createTime: Type.String(),
  updateTime: Type.String(),
});
export type DataConnector = Static<typeof DataConnectorSchema>;

export const DataConnectorListSchema = Type.Object({
  dataConnectors: Type.Array(DataConnectorSchema),
  nextPageToken: Type.String(),
});
export type DataConnectorList = Static<typeof DataConnectorListSchema>;

export const HttpConfigInputSchema = Type.Object({
  url: Type.Optional(Type.String({ description: 'https:// endpoint' })),
  headers: Type.Optional(Type.Record(Type.String(), Type.String())),
  signatureSecret: Type.Optional(Type.String({ description: '"" = unsigned' })),
});
export type HttpConfigInput = Static<typeof HttpConfigInputSchema>;

/** Extensions §X4: merged key by key on PATCH; `labelFilters` given replaces the filters whole. */
export const DeliveryConfigInputSchema = Type.Object({
  maxConcurrency: Type.Optional(Type.Number({ description: 'a whole number, 1 to 64 (default 64)' })),
  maxRate: Type.Optional(Type.Number({ description: 'attempts per second, above 0 and at most 10,000; 0 = no limit' })),
  labelFilters: Type.Optional(
    Type.Record(Type.String(), Type.String(), { description: 'label key → value; "" = the key is present' }),
  ),
  paused: Type.Optional(Type.Boolean()),
});
export type DeliveryConfigInput = Static<typeof DeliveryConfigInputSchema>;

// Types only; the service validates meaning and names the field. Unknown keys (name, createTime, null configs
// of other connector types…) are allowed and ignored.
export const DataConnectorInputSchema = Type.Object({
  type: Type.Optional(Type.String({ description: 'HTTP_PUSH' })),
  displayName: Type.Optional(Type.String({ maxLength: MAX_DISPLAY_NAME_LENGTH })),
  status: Type.Optional(Type.String({ description: 'ACTIVE (default) or USER_DISABLED' })),
  events: Type.Optional(Type.Array(Type.String(), { description: 'event types to forward; [] = every type' })),
  labels: Type.Optional(Type.Array(Type.String(), { description: 'device label keys copied into each push' })),
  httpConfig: Type.Optional(HttpConfigInputSchema),
  deliveryConfig: Type.Optional(DeliveryConfigInputSchema),
});
/** The body of create and patch, null-valued keys already dropped (contract §1.2); other keys pass unchecked. */
export type DataConnectorInput = Static<typeof DataConnectorInputSchema> & { [other: string]: unknown };

export const ConnectorMetricsSchema = Type.Object({
  successCount: Type.Integer(),
  errorCount: Type.Integer(),
  /** "<seconds>s" with 3 decimals; "0.000s" when there was no successful attempt. */
  latency99p: Type.String(),
});
export type ConnectorMetrics = Static<typeof ConnectorMetricsSchema>;

/** :metrics: attempts of the last 3 hours. */
export const DataConnectorMetricsSchema = Type.Object({ metrics: ConnectorMetricsSchema });
export type DataConnectorMetrics = Static<typeof DataConnectorMetricsSchema>;

/** One minute of a connector's delivery attempts. */
export const MetricsHistoryBucketSchema = Type.Object({
  startTime: Type.String({ description: 'start of the minute, RFC 3339' }),
  successCount: Type.Integer(),
  errorCount: Type.Integer(),
});
export type MetricsHistoryBucket = Static<typeof MetricsHistoryBucketSchema>;

/** :metricsHistory: the series behind :metrics, one bucket per minute that had attempts. */
export const MetricsHistorySchema = Type.Object({
  bucketDuration: Type.String({ description: 'length of each bucket, "60s"' }),
  buckets: Type.Array(MetricsHistoryBucketSchema, {
    description: 'minutes of the last 3 hours that had attempts, oldest first (at most 181)',
  }),
});
export type MetricsHistory = Static<typeof MetricsHistorySchema>;

/** :rotateSecret (extensions §X3). Types only; the service checks the secret and the overlap and names the field. */
export const RotateSecretBodySchema = Type.Object({
  signatureSecret: Type.Optional(
    Type.String({ description: 'the new secret, at most 256 characters; absent: 32 hex characters are generated' }),
  ),
  overlap: Type.Optional(
    Type.String({
      description:
        'how long pushes are also signed with the current secret (X-Service-Signature-Previous): "0s" to "604800s" (7 days), default "86400s"; "0s" keeps no previous secret',
    }),
  ),
});
export type RotateSecretBody = Static<typeof RotateSecretBodySchema>;

export const RotateSecretAnswerSchema = Type.Object({
  dataConnector: DataConnectorSchema,
  signatureSecret: Type.String({ description: 'the new secret (the one given, or the one generated)' }),
});
export type RotateSecretAnswer = Static<typeof RotateSecretAnswerSchema>;
