-- Sessions that end (docs/authentication.md): an access token carries its user's token generation when it was minted
-- and is refused once the generation has moved on, which signing out and a password reset do (UserRepo.endSessions).
ALTER TABLE users ADD COLUMN token_generation INTEGER NOT NULL DEFAULT 0;

-- JWT-bearer assertions already exchanged, by key and jti (a SHA-256 of it), each until it could no longer pass the
-- expiry check: an assertion is taken once. The retention job deletes the rows past their time.
CREATE TABLE used_assertions (
  key_id      TEXT NOT NULL,
  jti         TEXT NOT NULL,
  expire_time INTEGER NOT NULL,
  PRIMARY KEY (key_id, jti)
);
CREATE INDEX used_assertions_by_expiry ON used_assertions(expire_time);

-- The last :sync of each connector: its rows' id range and enqueue time, and what it covered. A :sync while one of
-- those rows is still queued queues nothing more (delivery/sync.ts): 100 calls queued 100 times the rows before.
CREATE TABLE connector_syncs (
  connector_id TEXT PRIMARY KEY REFERENCES data_connectors(id) ON DELETE CASCADE,
  first_id     INTEGER NOT NULL,
  last_id      INTEGER NOT NULL,
  enqueue_time INTEGER NOT NULL,
  scope        TEXT NOT NULL
);
