-- Delivery controls of a data connector (extensions §X4; store/contract/connector-repos.ts DeliveryConfig): pushes
-- open at once, attempts per second (0 = none), label filters (a JSON object) and the pause. Every connector starts
-- with the defaults, which are what it did before. connector_pacing holds where a rate-limited connector's next
-- attempt may start (micros), for claims to take start times from (delivery/pacing.ts).
ALTER TABLE data_connectors ADD COLUMN max_concurrency INTEGER NOT NULL DEFAULT 64;
ALTER TABLE data_connectors ADD COLUMN max_rate REAL NOT NULL DEFAULT 0;
ALTER TABLE data_connectors ADD COLUMN label_filters TEXT NOT NULL DEFAULT '{}';
ALTER TABLE data_connectors ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
CREATE TABLE connector_pacing (
  connector_id TEXT PRIMARY KEY,
  next_start INTEGER NOT NULL
) WITHOUT ROWID;
