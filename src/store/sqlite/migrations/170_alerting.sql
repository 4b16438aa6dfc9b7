-- Notification rules and alerts (extensions §X5; store/contract/alerting.ts): the rules, contact groups and contacts,
-- the alerts with their lifecycle, the pending conditions of rules with a trigger delay or count, and the outbox of
-- notifications to send. The tables and columns are PostgreSQL's (migration 019 there), so that copy-to-postgres copies
-- them by name.

-- A rule's settings are the API's JSON (spec), which the store keeps as given; display name and enabled flag are
-- columns, since lists and the fan-out of every published event read them.
CREATE TABLE rules (
  id           TEXT PRIMARY KEY,
  project_id   TEXT NOT NULL,
  display_name TEXT NOT NULL,
  enabled      INTEGER NOT NULL,
  spec         TEXT NOT NULL,
  create_time  INTEGER NOT NULL,
  update_time  INTEGER NOT NULL
);
CREATE INDEX rules_by_project ON rules(project_id, id);
-- The rules every published event is matched against (cached: repos/rules.ts).
CREATE INDEX rules_enabled_by_project ON rules(project_id, id) WHERE enabled = 1;

CREATE TABLE contact_groups (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  display_name    TEXT NOT NULL,
  description     TEXT NOT NULL,
  create_time     INTEGER NOT NULL,
  update_time     INTEGER NOT NULL
);
CREATE INDEX contact_groups_by_organization ON contact_groups(organization_id, id);

-- contact_group_id is '' for a contact in no group; deleting a group sets it so.
CREATE TABLE contacts (
  id               TEXT PRIMARY KEY,
  project_id       TEXT NOT NULL,
  contact_group_id TEXT NOT NULL,
  display_name     TEXT NOT NULL,
  email            TEXT NOT NULL,
  phone_number     TEXT NOT NULL,
  create_time      INTEGER NOT NULL,
  update_time      INTEGER NOT NULL
);
CREATE INDEX contacts_by_project ON contacts(project_id, id);
CREATE INDEX contacts_by_group ON contacts(contact_group_id, project_id, id);

-- An alert belongs to its rule: deleting the rule deletes its alerts, and their outbox rows (the cascades below), in
-- the same statement. notifications is a JSON array.
CREATE TABLE alerts (
  id               TEXT PRIMARY KEY,
  project_id       TEXT NOT NULL,
  rule_id          TEXT NOT NULL REFERENCES rules(id) ON DELETE CASCADE,
  target_id        TEXT NOT NULL,
  target_name      TEXT NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('TRIGGERED', 'ACKNOWLEDGED', 'RESOLVED')),
  escalation_level INTEGER NOT NULL,
  trigger_time     INTEGER NOT NULL,
  acknowledge_time INTEGER,
  acknowledged_by  TEXT NOT NULL,
  resolve_time     INTEGER,
  last_value       TEXT NOT NULL,
  notifications    TEXT NOT NULL,
  timer_due        INTEGER,
  create_time      INTEGER NOT NULL,
  update_time      INTEGER NOT NULL
);
-- A project's alerts newest first (ids grow with time), all of them or of some states (and the open ones' count);
-- of one rule (also the rule delete's cascade) or one target.
CREATE INDEX alerts_by_project ON alerts(project_id, id);
CREATE INDEX alerts_by_project_state ON alerts(project_id, state, id);
CREATE INDEX alerts_by_rule ON alerts(rule_id, id);
CREATE INDEX alerts_by_target ON alerts(target_id, id);
-- One open alert per rule and target: AlertRepo.createIfNone inserts with ON CONFLICT DO NOTHING on it.
CREATE UNIQUE INDEX alerts_open_by_rule_target ON alerts(rule_id, target_id) WHERE state <> 'RESOLVED';
-- The open alerts' timers (escalation, un-acknowledgement, reminder), earliest first.
CREATE INDEX alerts_timer_due ON alerts(timer_due, id) WHERE timer_due IS NOT NULL AND state <> 'RESOLVED';

-- A rule's condition holding for a target before its trigger delay or count is met; due is NULL while only the count
-- is awaited.
CREATE TABLE rule_conditions (
  rule_id    TEXT NOT NULL REFERENCES rules(id) ON DELETE CASCADE,
  target_id  TEXT NOT NULL,
  project_id TEXT NOT NULL,
  since      INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  due        INTEGER,
  last_value TEXT NOT NULL,
  PRIMARY KEY (rule_id, target_id)
) WITHOUT ROWID;
CREATE INDEX rule_conditions_due ON rule_conditions(due, rule_id, target_id) WHERE due IS NOT NULL;

-- Notifications to send (EMAIL, WEBHOOK), queued with the transition that caused them. A claim sets lease_until and
-- pushes due_time to the lease end, as the delivery queue's does, so "due" is due_time <= now and a row whose process
-- died mid-send comes due again by itself. AUTOINCREMENT: an id is never reused, so a late outcome never meets another
-- row under its id.
CREATE TABLE alert_outbox (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  alert_id     TEXT NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
  entry        INTEGER NOT NULL,
  type         TEXT NOT NULL CHECK (type IN ('EMAIL', 'WEBHOOK')),
  payload      TEXT NOT NULL,
  enqueue_time INTEGER NOT NULL,
  due_time     INTEGER NOT NULL,
  attempts     INTEGER NOT NULL DEFAULT 0,
  lease_until  INTEGER
);
CREATE INDEX alert_outbox_due ON alert_outbox(due_time, id);
CREATE INDEX alert_outbox_by_alert ON alert_outbox(alert_id);
