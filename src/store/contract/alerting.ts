// Records and repositories of notification rules and alerts (extensions §X5): the rules themselves (their settings
// kept as the API's JSON, which the store does not read), contact groups and contacts, the alerts with their
// lifecycle, the pending conditions of rules with a trigger delay or count, and the durable outbox of notifications.
// Part of Repos, so a transition, its timers and the notifications it causes commit together or not at all.
import type { Range } from './range.ts';

export interface RuleRecord {
  id: string;
  projectId: string;
  displayName: string;
  enabled: boolean;
  /**
   * Everything else of the rule (trigger, devices, deviceLabels, projectLabels, escalationLevels, schedule,
   * triggerDelay, reminderNotifications, resolvedNotifications, unacknowledgesAfter), as JSON text written and read by
   * the alerts layer (alerts/rule-spec.ts). The store keeps it as given.
   */
  spec: string;
  createTime: number;
  updateTime: number;
}

export interface RuleRepo {
  create(r: RuleRecord): Promise<void>;
  get(id: string): Promise<RuleRecord | null>;
  /** Rules of the project in id order, keyset-paged. */
  listByProject(projectId: string, range: Range): Promise<RuleRecord[]>;
  countByProject(projectId: string): Promise<number>;
  /**
   * The project's enabled rules, in id order: read for every published event, so a store caches it, kept correct
   * after every write (on a store several processes share, checked against the config version as the active
   * connectors are).
   */
  listEnabledByProject(projectId: string): Promise<RuleRecord[]>;
  /** Every project's enabled rules in id order, keyset-paged (the periodic checks of rules that no event drives). */
  listEnabled(range: Range): Promise<RuleRecord[]>;
  /** Writes the display name, enabled flag, spec and update time; the project and create time stay. */
  update(r: RuleRecord): Promise<void>;
  /**
   * Deletes the rule with its alerts, conditions and queued notifications, those another process is writing meanwhile
   * included (createIfNone and ConditionRepo.put write nothing for a rule that is gone).
   */
  delete(id: string): Promise<void>;
}

export interface ContactGroupRecord {
  id: string;
  organizationId: string;
  displayName: string;
  description: string;
  createTime: number;
  updateTime: number;
}

export interface ContactRecord {
  id: string;
  projectId: string;
  /** The contact group's id (in the project's organization); '' for none. */
  contactGroupId: string;
  displayName: string;
  email: string;
  phoneNumber: string;
  createTime: number;
  updateTime: number;
}

export interface ContactRepo {
  createGroup(g: ContactGroupRecord): Promise<void>;
  getGroup(id: string): Promise<ContactGroupRecord | null>;
  /** Groups of the organization in id order, keyset-paged. */
  listGroups(organizationId: string, range: Range): Promise<ContactGroupRecord[]>;
  /** Writes the display name, description and update time. */
  updateGroup(g: ContactGroupRecord): Promise<void>;
  /** Deletes the group; its contacts stay, in no group. */
  deleteGroup(id: string): Promise<void>;
  /** Contacts of the group, in every project. */
  countInGroup(groupId: string): Promise<number>;
  create(c: ContactRecord): Promise<void>;
  get(id: string): Promise<ContactRecord | null>;
  /** Contacts of the project in id order, keyset-paged. */
  listByProject(projectId: string, range: Range): Promise<ContactRecord[]>;
  /** Contacts of the group in the project, in id order (an e-mail action's contactGroups expand to their addresses). */
  listInGroup(projectId: string, groupId: string): Promise<ContactRecord[]>;
  /** Writes everything but the project and create time. */
  update(c: ContactRecord): Promise<void>;
  delete(id: string): Promise<void>;
}

export type AlertState = 'TRIGGERED' | 'ACKNOWLEDGED' | 'RESOLVED';

/** One notification an alert sent or is sending, as listed on the alert. */
export interface AlertNotificationRecord {
  /** Micros: when it was queued. */
  time: number;
  /** The escalation level whose action sent it (0-based). */
  level: number;
  /** EMAIL or WEBHOOK. */
  type: string;
  /** The address or URL. */
  target: string;
  /** TRIGGERED, ESCALATED, REMINDER, UNACKNOWLEDGED or RESOLVED. */
  transition: string;
  outcome: 'SENT' | 'RETRYING' | 'FAILED';
  error: string;
}

export interface AlertRecord {
  id: string;
  projectId: string;
  ruleId: string;
  /** The device's or data connector's id. */
  targetId: string;
  /** Its resource name (projects/{p}/devices/{d} or projects/{p}/dataconnectors/{dc}). */
  targetName: string;
  state: AlertState;
  /** 0-based index into the rule's escalation levels. */
  escalationLevel: number;
  triggerTime: number;
  acknowledgeTime: number | null;
  /** The e-mail of the user or service account that acknowledged it; '' when none. */
  acknowledgedBy: string;
  resolveTime: number | null;
  /** JSON text of the last value that kept or made the condition hold; '' when none. */
  lastValue: string;
  notifications: AlertNotificationRecord[];
  /**
   * Micros: the alert's next timed transition (escalation, un-acknowledgement or reminder), which alerts/timers.ts
   * works out again at each transition; null when none is pending (always null once RESOLVED).
   */
  timerDue: number | null;
  createTime: number;
  updateTime: number;
}

export interface AlertFilter {
  projectId: string;
  states?: AlertState[];
  ruleId?: string;
  targetId?: string;
}

export interface AlertRepo {
  /**
   * Writes a new alert unless the rule already has an open one (not RESOLVED) for the target: one open alert per rule
   * and target, across every process. Returns whether it was written (false too when the rule is gone: see
   * RuleRepo.delete).
   */
  createIfNone(a: AlertRecord): Promise<boolean>;
  get(id: string): Promise<AlertRecord | null>;
  /** get(), locking the row until the transaction ends on a store several processes share (a transition). */
  getForUpdate(id: string): Promise<AlertRecord | null>;
  /** The rule's open alert of the target, locked as getForUpdate; null when none. */
  openFor(ruleId: string, targetId: string): Promise<AlertRecord | null>;
  /** Every open alert of the target (of any rule), locked as getForUpdate: one read for all the rules of an event. */
  openForTarget(targetId: string): Promise<AlertRecord[]>;
  /** Writes the alert; its project, rule, target and create time stay. */
  update(a: AlertRecord): Promise<void>;
  /**
   * Newest first (by id, descending), keyset-paged: `range.after` is the last id of the page before. `states` empty or
   * absent: every state.
   */
  list(filter: AlertFilter, range: Range): Promise<AlertRecord[]>;
  /** Ids of open alerts whose timerDue is at or before `now`, earliest first. */
  due(now: number, limit: number): Promise<string[]>;
  /** Open alerts of the project, of every rule (the console's badge). */
  countOpen(projectId: string): Promise<number>;
}

/** A rule's condition holding for a target, not yet an alert: its trigger delay or count is not yet met. */
export interface ConditionRecord {
  ruleId: string;
  targetId: string;
  projectId: string;
  /** Micros: when the condition began to hold. */
  since: number;
  /** Consecutive events that met it so far. */
  count: number;
  /** Micros: when the delay is over and the alert triggers if it still holds; null while the count is not met. */
  due: number | null;
  /** JSON text of the value that last met it. */
  lastValue: string;
}

export interface ConditionRepo {
  get(ruleId: string, targetId: string): Promise<ConditionRecord | null>;
  /** Every pending condition of the target (of any rule): one read for all the rules of an event. */
  listForTarget(targetId: string): Promise<ConditionRecord[]>;
  /** Writes it, replacing the one of the same rule and target; nothing when the rule is gone (RuleRepo.delete). */
  put(c: ConditionRecord): Promise<void>;
  /** Removes it; whether it was there (of two processes firing it, one removes it). */
  delete(ruleId: string, targetId: string): Promise<boolean>;
  /** Conditions whose due is at or before `now`, earliest first (then by rule and target). */
  due(now: number, limit: number): Promise<ConditionRecord[]>;
}

/** A notification to send: queued in the transition's transaction, sent and retried by alerts/notifier.ts. */
export interface OutboxRecord {
  id: number;
  alertId: string;
  /** The index of its entry in the alert's notifications (its outcome is written there). */
  entry: number;
  type: 'EMAIL' | 'WEBHOOK';
  /** JSON text: for EMAIL {to, subject, text}; for WEBHOOK {url, headers, signatureSecretSealed, body}. */
  payload: string;
  enqueueTime: number;
  dueTime: number;
  attempts: number;
  leaseUntil: number | null;
}

export interface OutboxRepo {
  /** Queues notifications; returns their ids in order. */
  add(rows: Array<Omit<OutboxRecord, 'id' | 'attempts' | 'leaseUntil'>>): Promise<number[]>;
  /**
   * Leases up to `limit` due rows (earliest due first, then by id), answered in that order, until `leaseUntil`; a row is
   * leased by one claim only, across every process, until its lease ends. A claimed row's dueTime is its lease end: a
   * row whose outcome is never written (its process died) comes due again then.
   */
  claim(now: number, leaseUntil: number, limit: number): Promise<OutboxRecord[]>;
  /** Removes a sent (or given up) row, only while it holds the lease it was claimed under. */
  delete(id: number, leaseUntil: number): Promise<boolean>;
  /** A failed attempt: the new count and due time, lease released; only while it holds `leaseUntil`. */
  reschedule(id: number, attempts: number, dueTime: number, leaseUntil: number): Promise<boolean>;
  count(): Promise<number>;
}
