-- Sessions that end (docs/authentication.md): an access token carries its user's token generation when it was minted
-- and is refused once the generation has moved on, which signing out and a password reset do (UserRepo.endSessions).
-- The users trigger moves the auth version with it, so every process's authentication cache sees the change.
ALTER TABLE users ADD COLUMN token_generation integer NOT NULL DEFAULT 0;

-- JWT-bearer assertions already exchanged, by key and jti (a SHA-256 of it), each until it could no longer pass the
-- expiry check: an assertion is taken once, by whichever process gets it first (the primary key decides). The
-- retention job deletes the rows past their time.
CREATE TABLE used_assertions (
  key_id      text COLLATE "C" NOT NULL,
  jti         text COLLATE "C" NOT NULL,
  expire_time bigint NOT NULL,
  PRIMARY KEY (key_id, jti)
);
CREATE INDEX used_assertions_by_expiry ON used_assertions (expire_time);

-- The last :sync of each connector: its rows' id range and enqueue time, and what it covered. A :sync while one of
-- those rows is still queued queues nothing more (delivery/sync.ts); the connector's row lock, which :sync takes
-- first, orders two at once, in any processes.
CREATE TABLE connector_syncs (
  connector_id text COLLATE "C" PRIMARY KEY REFERENCES data_connectors(id) ON DELETE CASCADE,
  first_id     bigint NOT NULL,
  last_id      bigint NOT NULL,
  enqueue_time bigint NOT NULL,
  scope        text NOT NULL
);
