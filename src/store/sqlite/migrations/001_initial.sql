-- Initial schema. All times are integer microseconds since the Unix epoch, written from the injected clock.
-- JSON columns hold compact JSON text.

CREATE TABLE organizations (
  id           TEXT PRIMARY KEY,
  display_name TEXT NOT NULL,
  create_time  INTEGER NOT NULL
);

CREATE TABLE projects (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id),
  display_name    TEXT NOT NULL,
  location        TEXT NOT NULL,          -- {"latitude":..,"longitude":..,"timeLocation":".."}
  labels          TEXT NOT NULL DEFAULT '{}',
  create_time     INTEGER NOT NULL,
  update_time     INTEGER NOT NULL
);
CREATE INDEX projects_by_organization ON projects(organization_id, id);

CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  email         TEXT NOT NULL UNIQUE,     -- lower case
  display_name  TEXT NOT NULL DEFAULT '',
  password_hash TEXT,                     -- scrypt; NULL while the invitation is pending
  active        INTEGER NOT NULL,         -- 0 = pending invitation
  create_time   INTEGER NOT NULL,
  update_time   INTEGER NOT NULL
);

CREATE TABLE service_accounts (
  id                TEXT PRIMARY KEY,
  project_id        TEXT NOT NULL REFERENCES projects(id),
  email             TEXT NOT NULL UNIQUE,
  display_name      TEXT NOT NULL,
  enable_basic_auth INTEGER NOT NULL,
  create_time       INTEGER NOT NULL,
  update_time       INTEGER NOT NULL
);
CREATE INDEX service_accounts_by_project ON service_accounts(project_id, id);

CREATE TABLE service_account_keys (
  id                 TEXT PRIMARY KEY,
  service_account_id TEXT NOT NULL REFERENCES service_accounts(id),
  secret_enc         TEXT NOT NULL,       -- AES-256-GCM under the master key
  create_time        INTEGER NOT NULL
);
CREATE INDEX keys_by_service_account ON service_account_keys(service_account_id, id);

-- Project and organization memberships of users and service accounts.
CREATE TABLE memberships (
  scope_type   TEXT NOT NULL CHECK (scope_type IN ('project', 'organization')),
  scope_id     TEXT NOT NULL,
  member_id    TEXT NOT NULL,             -- user id or service account id
  account_type TEXT NOT NULL CHECK (account_type IN ('USER', 'SERVICE_ACCOUNT')),
  roles        TEXT NOT NULL,             -- JSON array of role names
  status       TEXT NOT NULL CHECK (status IN ('ACCEPTED', 'PENDING')),
  create_time  INTEGER NOT NULL,
  PRIMARY KEY (scope_type, scope_id, member_id)
);
CREATE INDEX memberships_by_member ON memberships(member_id);
CREATE INDEX memberships_by_scope_time ON memberships(scope_type, scope_id, create_time, member_id);

CREATE TABLE invites (
  token_hash  TEXT PRIMARY KEY,           -- sha256 of the token; the token itself is never stored
  user_id     TEXT NOT NULL REFERENCES users(id),
  expire_time INTEGER NOT NULL,
  used_time   INTEGER
);

CREATE TABLE devices (
  id             TEXT PRIMARY KEY,
  project_id     TEXT NOT NULL REFERENCES projects(id),
  type           TEXT NOT NULL,
  product_number TEXT NOT NULL,
  labels         TEXT NOT NULL DEFAULT '{}',
  reported       TEXT NOT NULL DEFAULT '{}', -- latest data per event type (inner data[type] shape)
  reported_times TEXT NOT NULL DEFAULT '{}', -- event timestamp (micros) per reported type, for "not older" checks
  emulated       INTEGER NOT NULL,
  create_time    INTEGER NOT NULL,
  update_time    INTEGER NOT NULL
);
CREATE INDEX devices_by_project ON devices(project_id, id);

-- Event history. `body` is the event JSON exactly as served ({eventId,targetName,eventType,data,timestamp}).
CREATE TABLE events (
  id          TEXT PRIMARY KEY,
  project_id  TEXT NOT NULL,
  device_id   TEXT NOT NULL,
  event_type  TEXT NOT NULL,
  timestamp   INTEGER NOT NULL,           -- event time
  create_time INTEGER NOT NULL,           -- when stored; drives retention
  body        TEXT NOT NULL
);
CREATE INDEX events_by_device_time ON events(device_id, timestamp DESC, id DESC);
CREATE INDEX events_by_create_time ON events(create_time);

CREATE TABLE data_connectors (
  id               TEXT PRIMARY KEY,
  project_id       TEXT NOT NULL REFERENCES projects(id),
  display_name     TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('ACTIVE', 'USER_DISABLED', 'SYSTEM_DISABLED')),
  events           TEXT NOT NULL DEFAULT '[]',
  labels           TEXT NOT NULL DEFAULT '[]',
  url              TEXT NOT NULL,
  headers          TEXT NOT NULL DEFAULT '{}',
  signature_secret TEXT NOT NULL DEFAULT '',
  failing_since    INTEGER,               -- first failed attempt since the last success or activation
  create_time      INTEGER NOT NULL,
  update_time      INTEGER NOT NULL
);
CREATE INDEX data_connectors_by_project ON data_connectors(project_id, id);

-- The durable per-connector delivery queue. The push body is built once at enqueue time.
CREATE TABLE deliveries (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  connector_id  TEXT NOT NULL,
  event_id      TEXT NOT NULL,
  body          BLOB NOT NULL,
  enqueue_time  INTEGER NOT NULL,
  due_time      INTEGER NOT NULL,         -- next attempt
  attempts      INTEGER NOT NULL DEFAULT 0,
  lease_until   INTEGER                   -- claimed by a dispatcher until then
);
CREATE INDEX deliveries_due ON deliveries(due_time);
CREATE INDEX deliveries_by_connector ON deliveries(connector_id);

-- Connector metrics in time buckets (never one row per attempt kept forever).
CREATE TABLE connector_metrics (
  connector_id  TEXT NOT NULL,
  bucket_start  INTEGER NOT NULL,
  success_count INTEGER NOT NULL DEFAULT 0,
  error_count   INTEGER NOT NULL DEFAULT 0,
  latency_hist  TEXT NOT NULL DEFAULT '{}', -- log-bucketed histogram of successful response times
  PRIMARY KEY (connector_id, bucket_start)
);
