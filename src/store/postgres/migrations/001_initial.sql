-- The PostgreSQL schema: the SQLite schema's tables and meaning (see ../sqlite/migrations), written for a
-- database that several processes share. All times are bigint microseconds since the Unix epoch from the
-- injected clock (never now()). JSON that is served as stored (labels in the order they were set) is text;
-- JSON only the database reads or merges is jsonb. Ids compare and sort byte by byte (COLLATE "C", as on SQLite),
-- whatever the database's locale, so keyset pages use their indexes.

CREATE TABLE organizations (
  id           text COLLATE "C" PRIMARY KEY,
  display_name text NOT NULL,
  create_time  bigint NOT NULL
);

CREATE TABLE projects (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations(id),
  display_name    text NOT NULL,
  location        text NOT NULL,
  labels          text NOT NULL DEFAULT '{}',
  create_time     bigint NOT NULL,
  update_time     bigint NOT NULL
);
CREATE INDEX projects_by_organization ON projects(organization_id, id);

CREATE TABLE users (
  id            text COLLATE "C" PRIMARY KEY,
  email         text NOT NULL UNIQUE,
  display_name  text NOT NULL DEFAULT '',
  password_hash text,
  active        boolean NOT NULL,
  create_time   bigint NOT NULL,
  update_time   bigint NOT NULL
);

CREATE TABLE service_accounts (
  id                text COLLATE "C" PRIMARY KEY,
  project_id        text COLLATE "C" NOT NULL REFERENCES projects(id),
  email             text NOT NULL UNIQUE,
  display_name      text NOT NULL,
  enable_basic_auth boolean NOT NULL,
  create_time       bigint NOT NULL,
  update_time       bigint NOT NULL
);
CREATE INDEX service_accounts_by_project ON service_accounts(project_id, id);

CREATE TABLE service_account_keys (
  id                 text COLLATE "C" PRIMARY KEY,
  service_account_id text COLLATE "C" NOT NULL REFERENCES service_accounts(id),
  secret_enc         text NOT NULL,
  create_time        bigint NOT NULL
);
CREATE INDEX keys_by_service_account ON service_account_keys(service_account_id, id);

CREATE TABLE memberships (
  scope_type   text NOT NULL CHECK (scope_type IN ('project', 'organization')),
  scope_id     text COLLATE "C" NOT NULL,
  member_id    text COLLATE "C" NOT NULL,
  account_type text NOT NULL CHECK (account_type IN ('USER', 'SERVICE_ACCOUNT')),
  roles        text NOT NULL,
  status       text NOT NULL CHECK (status IN ('ACCEPTED', 'PENDING')),
  create_time  bigint NOT NULL,
  PRIMARY KEY (scope_type, scope_id, member_id)
);
CREATE INDEX memberships_by_member ON memberships(member_id);
CREATE INDEX memberships_by_scope_time ON memberships(scope_type, scope_id, create_time, member_id);

CREATE TABLE invites (
  token_hash  text PRIMARY KEY,
  user_id     text COLLATE "C" NOT NULL REFERENCES users(id),
  expire_time bigint NOT NULL,
  used_time   bigint
);
CREATE INDEX invites_by_user ON invites(user_id);

CREATE TABLE devices (
  id             text COLLATE "C" PRIMARY KEY,
  project_id     text COLLATE "C" NOT NULL REFERENCES projects(id),
  type           text NOT NULL,
  product_number text NOT NULL,
  emulated       boolean NOT NULL,
  create_time    bigint NOT NULL,
  update_time    bigint NOT NULL,
  latest_events  text NOT NULL DEFAULT '{}',
  labels         text NOT NULL DEFAULT '{}',
  reported       text NOT NULL DEFAULT '{}'
);
CREATE INDEX devices_by_project ON devices(project_id, id);
CREATE INDEX devices_emulated ON devices(id) WHERE emulated;

CREATE TABLE events (
  id          text COLLATE "C" PRIMARY KEY,
  project_id  text COLLATE "C" NOT NULL,
  device_id   text COLLATE "C" NOT NULL,
  event_type  text NOT NULL,
  timestamp   bigint NOT NULL,
  create_time bigint NOT NULL,
  body        text NOT NULL
);
CREATE INDEX events_by_device_time ON events(device_id, timestamp, id, event_type);

CREATE TABLE data_connectors (
  id               text COLLATE "C" PRIMARY KEY,
  project_id       text COLLATE "C" NOT NULL REFERENCES projects(id),
  display_name     text NOT NULL,
  status           text NOT NULL CHECK (status IN ('ACTIVE', 'USER_DISABLED', 'SYSTEM_DISABLED')),
  events           text NOT NULL DEFAULT '[]',
  labels           text NOT NULL DEFAULT '[]',
  url              text NOT NULL,
  headers          text NOT NULL DEFAULT '{}',
  signature_secret text NOT NULL DEFAULT '',
  failing_since    bigint,
  create_time      bigint NOT NULL,
  update_time      bigint NOT NULL
);
CREATE INDEX data_connectors_by_project ON data_connectors(project_id, id);

-- The durable per-connector delivery queue, shared by every process. A claim sets lease_until and pushes
-- due_time to the lease end (as on SQLite), so "due" is due_time <= now, and the rows of a process that died
-- mid-attempt come due again when its lease ends.
CREATE TABLE deliveries (
  id            bigserial PRIMARY KEY,
  connector_id  text COLLATE "C" NOT NULL,
  event_id      text COLLATE "C" NOT NULL,
  body          bytea NOT NULL,
  enqueue_time  bigint NOT NULL,
  due_time      bigint NOT NULL,
  attempts      integer NOT NULL DEFAULT 0,
  lease_until   bigint
);
CREATE INDEX deliveries_by_connector_due ON deliveries(connector_id, due_time, id);
-- Rows in flight, per connector: the cluster-wide per-connector limit counts them at every claim.
CREATE INDEX deliveries_leased ON deliveries(connector_id, lease_until) WHERE lease_until IS NOT NULL;

CREATE TABLE connector_metrics (
  connector_id  text COLLATE "C" NOT NULL,
  bucket_start  bigint NOT NULL,
  success_count bigint NOT NULL DEFAULT 0,
  error_count   bigint NOT NULL DEFAULT 0,
  latency_hist  jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (connector_id, bucket_start)
);
CREATE INDEX connector_metrics_by_bucket ON connector_metrics(bucket_start);

CREATE TABLE delivery_counters (
  series text PRIMARY KEY,
  value  double precision NOT NULL
);

-- The auth version (Store.authVersion): moved by every write to users, service accounts, keys and memberships
-- (project deletes delete memberships), in the writing transaction, so another process reads the new value only
-- once the change it announces is visible.
CREATE TABLE auth_version (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  value bigint NOT NULL
);
INSERT INTO auth_version (value) VALUES (0);
CREATE FUNCTION bump_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE auth_version SET value = value + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER users_auth AFTER INSERT OR UPDATE OR DELETE ON users FOR EACH STATEMENT EXECUTE FUNCTION bump_auth_version();
CREATE TRIGGER service_accounts_auth AFTER INSERT OR UPDATE OR DELETE ON service_accounts FOR EACH STATEMENT EXECUTE FUNCTION bump_auth_version();
CREATE TRIGGER keys_auth AFTER INSERT OR UPDATE OR DELETE ON service_account_keys FOR EACH STATEMENT EXECUTE FUNCTION bump_auth_version();
CREATE TRIGGER memberships_auth AFTER INSERT OR UPDATE OR DELETE ON memberships FOR EACH STATEMENT EXECUTE FUNCTION bump_auth_version();

-- What the cluster shares besides the data: a check value sealed under the master key (every process must
-- open it, or refuse to start), and the like.
CREATE TABLE cluster_settings (
  name  text PRIMARY KEY,
  value text NOT NULL
);
