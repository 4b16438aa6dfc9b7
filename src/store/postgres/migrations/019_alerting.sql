-- Notification rules and alerts (extensions §X5; store/contract/alerting.ts): the rules, contact groups and contacts,
-- the alerts with their lifecycle, the pending conditions of rules with a trigger delay or count, and the outbox of
-- notifications to send. The tables and columns are SQLite's (migration 170 there), so that copy-to-postgres copies
-- them by name; JSON is text, kept and served as given (no statement reads into it).

-- A rule's settings are the API's JSON (spec); display name and enabled flag are columns, since lists and the fan-out
-- of every published event read them. The enabled rules of a project are cached with projects and connectors
-- (repos/config-cache.ts), so the config version's statement trigger (migration 002) moves with every write here too.
CREATE TABLE rules (
  id           text COLLATE "C" PRIMARY KEY,
  project_id   text COLLATE "C" NOT NULL,
  display_name text NOT NULL,
  enabled      boolean NOT NULL,
  spec         text NOT NULL,
  create_time  bigint NOT NULL,
  update_time  bigint NOT NULL
);
CREATE INDEX rules_by_project ON rules (project_id, id);
CREATE INDEX rules_enabled_by_project ON rules (project_id, id) WHERE enabled;
CREATE TRIGGER rules_config AFTER INSERT OR UPDATE OR DELETE ON rules FOR EACH STATEMENT EXECUTE FUNCTION bump_config_version();

CREATE TABLE contact_groups (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL,
  display_name    text NOT NULL,
  description     text NOT NULL,
  create_time     bigint NOT NULL,
  update_time     bigint NOT NULL
);
CREATE INDEX contact_groups_by_organization ON contact_groups (organization_id, id);

-- contact_group_id is '' for a contact in no group; deleting a group sets it so.
CREATE TABLE contacts (
  id               text COLLATE "C" PRIMARY KEY,
  project_id       text COLLATE "C" NOT NULL,
  contact_group_id text COLLATE "C" NOT NULL,
  display_name     text NOT NULL,
  email            text NOT NULL,
  phone_number     text NOT NULL,
  create_time      bigint NOT NULL,
  update_time      bigint NOT NULL
);
CREATE INDEX contacts_by_project ON contacts (project_id, id);
CREATE INDEX contacts_by_group ON contacts (contact_group_id, project_id, id);

-- An alert belongs to its rule, and an outbox row to its alert: a rule's delete removes them by the cascades, which
-- run after the rule's row lock is had, on a snapshot of their own, so they also find what a transaction that held it
-- wrote meanwhile (an alert created, an outbox row queued by a transition, which locks its alert). Fixed-width columns
-- first, so no row pays for alignment padding.
CREATE TABLE alerts (
  escalation_level integer NOT NULL,
  trigger_time     bigint NOT NULL,
  create_time      bigint NOT NULL,
  update_time      bigint NOT NULL,
  acknowledge_time bigint,
  resolve_time     bigint,
  timer_due        bigint,
  id               text COLLATE "C" PRIMARY KEY,
  project_id       text COLLATE "C" NOT NULL,
  rule_id          text COLLATE "C" NOT NULL REFERENCES rules (id) ON DELETE CASCADE,
  target_id        text COLLATE "C" NOT NULL,
  target_name      text NOT NULL,
  state            text NOT NULL CHECK (state IN ('TRIGGERED', 'ACKNOWLEDGED', 'RESOLVED')),
  acknowledged_by  text NOT NULL,
  last_value       text NOT NULL,
  notifications    text NOT NULL
);
-- A project's alerts newest first (ids grow with time), all of them or of some states (and the open ones' count);
-- of one rule (also the rule delete's cascade) or one target.
CREATE INDEX alerts_by_project ON alerts (project_id, id);
CREATE INDEX alerts_by_project_state ON alerts (project_id, state, id);
CREATE INDEX alerts_by_rule ON alerts (rule_id, id);
CREATE INDEX alerts_by_target ON alerts (target_id, id);
-- One open alert per rule and target, whichever process writes it: AlertRepo.createIfNone inserts with ON CONFLICT
-- DO NOTHING on this index, so of two racing, the second waits for the first's commit and writes nothing.
CREATE UNIQUE INDEX alerts_open_by_rule_target ON alerts (rule_id, target_id) WHERE state <> 'RESOLVED';
-- The open alerts' timers (escalation, un-acknowledgement, reminder), earliest first.
CREATE INDEX alerts_timer_due ON alerts (timer_due, id) WHERE timer_due IS NOT NULL AND state <> 'RESOLVED';

-- A rule's condition holding for a target before its trigger delay or count is met; due is NULL while only the count
-- is awaited.
CREATE TABLE rule_conditions (
  since      bigint NOT NULL,
  due        bigint,
  count      integer NOT NULL,
  rule_id    text COLLATE "C" NOT NULL REFERENCES rules (id) ON DELETE CASCADE,
  target_id  text COLLATE "C" NOT NULL,
  project_id text COLLATE "C" NOT NULL,
  last_value text NOT NULL,
  PRIMARY KEY (rule_id, target_id)
);
CREATE INDEX rule_conditions_due ON rule_conditions (due, rule_id, target_id) WHERE due IS NOT NULL;

-- Notifications to send (EMAIL, WEBHOOK), queued with the transition that caused them and sent by every process. A
-- claim takes due rows with FOR UPDATE SKIP LOCKED, sets lease_until and pushes due_time to the lease end, as the
-- delivery queue's does, so "due" is due_time <= now and a row whose process died mid-send comes due again by itself.
CREATE TABLE alert_outbox (
  id           bigserial PRIMARY KEY,
  enqueue_time bigint NOT NULL,
  due_time     bigint NOT NULL,
  lease_until  bigint,
  entry        integer NOT NULL,
  attempts     integer NOT NULL DEFAULT 0,
  alert_id     text COLLATE "C" NOT NULL REFERENCES alerts (id) ON DELETE CASCADE,
  type         text NOT NULL CHECK (type IN ('EMAIL', 'WEBHOOK')),
  payload      text NOT NULL
);
CREATE INDEX alert_outbox_due ON alert_outbox (due_time, id);
CREATE INDEX alert_outbox_by_alert ON alert_outbox (alert_id);
