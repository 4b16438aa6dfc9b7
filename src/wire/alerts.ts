// Alerts on the wire (extensions §X5): an alert of a notification rule with its lifecycle and the notifications it
// sent, the list, and the answers of :acknowledge and :resolve (the alert). The webhook body and the stream's
// alertChanged event carry the alert without its notifications.
import { Type, type Static } from 'typebox';
import { PagingQuery } from './paging.ts';

export const AlertNotificationSchema = Type.Object({
  time: Type.String({ description: 'RFC 3339: when it was queued' }),
  level: Type.Integer({ description: 'the escalation level whose action sent it (0-based)' }),
  type: Type.String({ description: 'EMAIL or WEBHOOK' }),
  target: Type.String({ description: 'the addresses (comma-separated) or the URL' }),
  outcome: Type.String({ description: 'SENT, RETRYING or FAILED' }),
  error: Type.String({ description: 'why the last attempt failed; "" when none' }),
});
export type AlertNotification = Static<typeof AlertNotificationSchema>;

const ALERT_FIELDS = {
  name: Type.String({ description: 'projects/{p}/alerts/{alert}' }),
  rule: Type.String({ description: 'projects/{p}/rules/{rule}' }),
  targetName: Type.String({ description: 'the device or data connector the alert is about' }),
  state: Type.String({ description: 'TRIGGERED, ACKNOWLEDGED or RESOLVED' }),
  escalationLevel: Type.Integer({ description: "index of the rule's escalation level reached (0-based)" }),
  triggerTime: Type.String(),
  acknowledgeTime: Type.String({ description: '"" until acknowledged' }),
  acknowledgedBy: Type.String({ description: 'the e-mail of the user or service account; "" until acknowledged' }),
  resolveTime: Type.String({ description: '"" until resolved' }),
  lastValue: Type.Unknown({
    description: 'the last value that met the condition (a number, or a state such as "OPEN"); null when none',
  }),
};

/** An alert without its notifications: the webhook body's and the stream event's. */
export const AlertSummarySchema = Type.Object(ALERT_FIELDS);
export type AlertSummary = Static<typeof AlertSummarySchema>;

export const AlertSchema = Type.Object({ ...ALERT_FIELDS, notifications: Type.Array(AlertNotificationSchema) });
export type Alert = Static<typeof AlertSchema>;

export const AlertListSchema = Type.Object({ alerts: Type.Array(AlertSchema), nextPageToken: Type.String() });
export type AlertList = Static<typeof AlertListSchema>;

export const AlertListQuerySchema = Type.Object({
  state: Type.Optional(
    Type.Union([Type.String(), Type.Array(Type.String())], {
      description: 'TRIGGERED, ACKNOWLEDGED or RESOLVED; repeatable',
    }),
  ),
  rule: Type.Optional(Type.String({ description: 'a rule id or name' })),
  device: Type.Optional(Type.String({ description: 'a device id or name' })),
  ...PagingQuery,
});
export type AlertListQuery = Static<typeof AlertListQuerySchema>;
