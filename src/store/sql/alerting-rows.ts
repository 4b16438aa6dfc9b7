// Rows of the alerting tables as both SQL backends return them, and the records made from them (contract/alerting.ts).
// The two schemas name and shape these columns alike: the rule's spec, an alert's notifications and an outbox row's
// payload are JSON text, times are integers. The enabled flag arrives as 0/1 from SQLite and as a boolean from
// PostgreSQL.
import type {
  AlertNotificationRecord,
  AlertRecord,
  AlertState,
  ConditionRecord,
  ContactGroupRecord,
  ContactRecord,
  OutboxRecord,
  RuleRecord,
} from '../contract/alerting.ts';

export interface RuleRow {
  id: string;
  project_id: string;
  display_name: string;
  enabled: number | boolean;
  spec: string;
  create_time: number;
  update_time: number;
}
export const toRule = (r: RuleRow): RuleRecord => ({
  id: r.id,
  projectId: r.project_id,
  displayName: r.display_name,
  enabled: r.enabled === true || r.enabled === 1,
  spec: r.spec,
  createTime: r.create_time,
  updateTime: r.update_time,
});

export interface ContactGroupRow {
  id: string;
  organization_id: string;
  display_name: string;
  description: string;
  create_time: number;
  update_time: number;
}
export const toContactGroup = (r: ContactGroupRow): ContactGroupRecord => ({
  id: r.id,
  organizationId: r.organization_id,
  displayName: r.display_name,
  description: r.description,
  createTime: r.create_time,
  updateTime: r.update_time,
});

export interface ContactRow {
  id: string;
  project_id: string;
  contact_group_id: string;
  display_name: string;
  email: string;
  phone_number: string;
  create_time: number;
  update_time: number;
}
export const toContact = (r: ContactRow): ContactRecord => ({
  id: r.id,
  projectId: r.project_id,
  contactGroupId: r.contact_group_id,
  displayName: r.display_name,
  email: r.email,
  phoneNumber: r.phone_number,
  createTime: r.create_time,
  updateTime: r.update_time,
});

export interface AlertRow {
  id: string;
  project_id: string;
  rule_id: string;
  target_id: string;
  target_name: string;
  state: AlertState;
  escalation_level: number;
  trigger_time: number;
  acknowledge_time: number | null;
  acknowledged_by: string;
  resolve_time: number | null;
  last_value: string;
  /** JSON text: an array of AlertNotificationRecord. */
  notifications: string;
  timer_due: number | null;
  create_time: number;
  update_time: number;
}
export const toAlert = (r: AlertRow): AlertRecord => ({
  id: r.id,
  projectId: r.project_id,
  ruleId: r.rule_id,
  targetId: r.target_id,
  targetName: r.target_name,
  state: r.state,
  escalationLevel: r.escalation_level,
  triggerTime: r.trigger_time,
  acknowledgeTime: r.acknowledge_time,
  acknowledgedBy: r.acknowledged_by,
  resolveTime: r.resolve_time,
  lastValue: r.last_value,
  notifications: JSON.parse(r.notifications) as AlertNotificationRecord[],
  timerDue: r.timer_due,
  createTime: r.create_time,
  updateTime: r.update_time,
});

/**
 * An alert's columns and each one's value (notifications as JSON text), in one table so that the INSERT's and the
 * UPDATE's lists cannot drift apart. `fixed`: set when the alert is made, never by a transition.
 */
const ALERT_FIELDS: ReadonlyArray<{ column: string; value: (a: AlertRecord) => unknown; fixed?: true }> = [
  { column: 'id', value: (a) => a.id, fixed: true },
  { column: 'project_id', value: (a) => a.projectId, fixed: true },
  { column: 'rule_id', value: (a) => a.ruleId, fixed: true },
  { column: 'target_id', value: (a) => a.targetId, fixed: true },
  { column: 'target_name', value: (a) => a.targetName },
  { column: 'state', value: (a) => a.state },
  { column: 'escalation_level', value: (a) => a.escalationLevel },
  { column: 'trigger_time', value: (a) => a.triggerTime },
  { column: 'acknowledge_time', value: (a) => a.acknowledgeTime },
  { column: 'acknowledged_by', value: (a) => a.acknowledgedBy },
  { column: 'resolve_time', value: (a) => a.resolveTime },
  { column: 'last_value', value: (a) => a.lastValue },
  { column: 'notifications', value: (a) => JSON.stringify(a.notifications) },
  { column: 'timer_due', value: (a) => a.timerDue },
  { column: 'create_time', value: (a) => a.createTime, fixed: true },
  { column: 'update_time', value: (a) => a.updateTime },
];
const UPDATED = ALERT_FIELDS.filter((f) => f.fixed !== true);

/** Every column of an alert (both stores' INSERT), and its values in that order. */
export const ALERT_COLUMNS = ALERT_FIELDS.map((f) => f.column).join(', ');
export const alertValues = (a: AlertRecord): unknown[] => ALERT_FIELDS.map((f) => f.value(a));

/** What a transition changes of an alert (both stores' UPDATE … WHERE id): these columns, then the id. */
export const ALERT_UPDATE_COLUMNS: readonly string[] = UPDATED.map((f) => f.column);
export const alertUpdateValues = (a: AlertRecord): unknown[] => [...UPDATED.map((f) => f.value(a)), a.id];

export interface ConditionRow {
  rule_id: string;
  target_id: string;
  project_id: string;
  since: number;
  count: number;
  due: number | null;
  last_value: string;
}
export const toCondition = (r: ConditionRow): ConditionRecord => ({
  ruleId: r.rule_id,
  targetId: r.target_id,
  projectId: r.project_id,
  since: r.since,
  count: r.count,
  due: r.due,
  lastValue: r.last_value,
});

export interface OutboxRow {
  id: number;
  alert_id: string;
  entry: number;
  type: OutboxRecord['type'];
  payload: string;
  enqueue_time: number;
  due_time: number;
  attempts: number;
  lease_until: number | null;
}
export const toOutbox = (r: OutboxRow): OutboxRecord => ({
  id: r.id,
  alertId: r.alert_id,
  entry: r.entry,
  type: r.type,
  payload: r.payload,
  enqueueTime: r.enqueue_time,
  dueTime: r.due_time,
  attempts: r.attempts,
  leaseUntil: r.lease_until,
});
