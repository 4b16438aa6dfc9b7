// Notification rules on the wire (extensions §X5), exactly as the infrastructure client's `v2alpha` rules read and
// write them: the rule (every key always present; an unset pointer of that client is null, a list [], a map {}), its
// list, and the body of create, PUT and PATCH (types only: the rules service checks meaning and names the field).
// Durations are "<n>s" text and read back exactly as written: the client compares them as strings.
import { Type, type Static, type TSchema } from 'typebox';

const nullable = <T extends TSchema>(schema: T, description?: string) =>
  Type.Union([schema, Type.Null()], description === undefined ? {} : { description });

export const RuleRangeSchema = Type.Object({
  lower: nullable(Type.Number(), 'inclusive; null = unbounded below'),
  upper: nullable(Type.Number(), 'inclusive; null = unbounded above'),
  type: Type.String({ description: 'WITHIN (the condition holds inside the range) or OUTSIDE' }),
  filter: Type.Null({ description: 'always null: no range filter is supported' }),
});
export type RuleRange = Static<typeof RuleRangeSchema>;

export const RuleTriggerSchema = Type.Object({
  field: Type.String({
    description:
      'temperature, humidity, co2, pressure, objectPresent, waterPresent, motion, deskOccupancy, contact, touch, connectionStatus or dataConnector',
  }),
  range: nullable(RuleRangeSchema, 'for temperature, humidity, co2 and pressure'),
  presence: nullable(Type.String(), 'PRESENT or ABSENT, for objectPresent and waterPresent'),
  motion: nullable(Type.String(), 'MOTION_DETECTED or NO_MOTION_DETECTED, for motion'),
  occupancy: nullable(Type.String(), 'OCCUPIED or NOT_OCCUPIED, for deskOccupancy'),
  contact: nullable(Type.String(), 'OPEN or CLOSED, for contact'),
  connection: nullable(Type.String(), 'SENSOR_OFFLINE or CLOUD_CONNECTOR_OFFLINE, for connectionStatus'),
  triggerCount: Type.Integer({ description: 'events in a row that must meet the condition; 0 or 1 = the first' }),
});
export type RuleTrigger = Static<typeof RuleTriggerSchema>;

export const RuleEmailSchema = Type.Object({
  recipients: Type.Array(Type.String(), { description: 'e-mail addresses, in lower case' }),
  contactGroups: Type.Array(Type.String(), {
    description: "organizations/{o}/contactGroups/{g} of the project's organization: their contacts in the project",
  }),
  subject: Type.String(),
  body: Type.String(),
});
export type RuleEmail = Static<typeof RuleEmailSchema>;

/** signatureSecret and header values are "" for callers who may not change rules (as a connector's). */
export const RuleWebhookSchema = Type.Object({
  url: Type.String(),
  signatureSecret: Type.String({ description: '"" = unsigned' }),
  headers: Type.Record(Type.String(), Type.String()),
});
export type RuleWebhook = Static<typeof RuleWebhookSchema>;

export const RuleActionSchema = Type.Object({
  type: Type.String({ description: 'EMAIL or WEBHOOK' }),
  sms: Type.Null(),
  email: nullable(RuleEmailSchema, 'EMAIL actions'),
  corrigo: Type.Null(),
  serviceChannel: Type.Null(),
  webhook: nullable(RuleWebhookSchema, 'WEBHOOK actions'),
  phoneCall: Type.Null(),
  signalTower: Type.Null(),
});
export type RuleAction = Static<typeof RuleActionSchema>;

export const EscalationLevelSchema = Type.Object({
  displayName: Type.String(),
  actions: Type.Array(RuleActionSchema),
  escalateAfter: nullable(
    Type.String(),
    '"<n>s": an alert not acknowledged by then moves to the next level; null = never',
  ),
});
export type EscalationLevel = Static<typeof EscalationLevelSchema>;

export const TimeOfDaySchema = Type.Object({ hour: Type.Integer(), minute: Type.Integer() });

export const ScheduleSlotSchema = Type.Object({
  days: Type.Array(Type.String(), { description: 'Monday … Sunday' }),
  times: Type.Array(Type.Object({ start: TimeOfDaySchema, end: TimeOfDaySchema })),
});

export const ScheduleSchema = Type.Object({
  timezone: Type.String({ description: 'IANA time zone, e.g. Europe/Oslo' }),
  slots: Type.Array(ScheduleSlotSchema),
  inverse: Type.Boolean({ description: 'evaluate outside the slots instead of inside them' }),
});
export type Schedule = Static<typeof ScheduleSchema>;

export const RuleSchema = Type.Object({
  name: Type.String({ description: 'projects/{p}/rules/{rule}' }),
  enabled: Type.Boolean(),
  displayName: Type.String(),
  devices: Type.Array(Type.String(), { description: 'projects/{p}/devices/{d}; [] = every device of the project' }),
  deviceLabels: Type.Record(Type.String(), Type.String(), {
    description: 'every label must match; a value "" matches the key with any value',
  }),
  projectLabels: Type.Record(Type.String(), Type.String(), { description: 'stored, not used' }),
  trigger: RuleTriggerSchema,
  escalationLevels: Type.Array(EscalationLevelSchema),
  schedule: nullable(ScheduleSchema, 'null = always evaluated'),
  triggerDelay: nullable(Type.String(), '"<n>s" the condition must hold before an alert triggers; null = none'),
  reminderNotifications: Type.Boolean(),
  resolvedNotifications: Type.Boolean(),
  unacknowledgesAfter: nullable(Type.String(), '"<n>s"; null = the default, 14400s (4 hours)'),
  actions: Type.Array(RuleActionSchema, {
    description: 'deprecated: always []; given on a write without escalationLevels, they become the single level',
  }),
  createTime: Type.String(),
  updateTime: Type.String(),
});
export type Rule = Static<typeof RuleSchema>;

export const RuleListSchema = Type.Object({ rules: Type.Array(RuleSchema), nextPageToken: Type.String() });
export type RuleList = Static<typeof RuleListSchema>;

// The body of create, PUT and PATCH. Types only, and loose: null-valued keys are already dropped (contract §1.2), read-only
// keys (name, createTime, updateTime) and unknown ones are ignored, and the nested objects are checked field by field
// by the service, which names the field in its 400.
export const RuleInputSchema = Type.Object({
  enabled: Type.Optional(Type.Boolean({ description: 'default true' })),
  displayName: Type.Optional(Type.String()),
  devices: Type.Optional(Type.Array(Type.Unknown(), { description: 'device names or ids of the project' })),
  deviceLabels: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'label key → value; "" = the key with any value' }),
  ),
  projectLabels: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'stored, not used' })),
  trigger: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description:
        'required: {field, the criteria the field takes (range, presence, motion, occupancy, contact or connection), triggerCount}, as read',
    }),
  ),
  escalationLevels: Type.Optional(
    Type.Array(Type.Unknown(), { description: '1 to 10 of {displayName, actions (1 to 20), escalateAfter}, as read' }),
  ),
  schedule: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: '{timezone, slots, inverse}, as read; absent = always' }),
  ),
  triggerDelay: Type.Optional(Type.Unknown({ description: '"<n>s", whole seconds' })),
  reminderNotifications: Type.Optional(Type.Boolean()),
  resolvedNotifications: Type.Optional(Type.Boolean()),
  unacknowledgesAfter: Type.Optional(Type.Unknown({ description: '"<n>s", whole seconds; default 14400s' })),
  actions: Type.Optional(Type.Array(Type.Unknown(), { description: 'deprecated: one escalation level' })),
});
export type RuleInput = Static<typeof RuleInputSchema> & { [other: string]: unknown };
