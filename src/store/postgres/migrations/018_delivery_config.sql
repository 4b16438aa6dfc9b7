-- Delivery controls of a data connector (extensions §X4; store/contract/connector-repos.ts DeliveryConfig): pushes
-- open at once, attempts per second (0 = none), label filters (a JSON object as text, like the other settings) and
-- the pause. Constant defaults add the columns without rewriting the table, and are what every connector did before;
-- a process of the release before names its columns in every write, so it keeps working in a rolling upgrade. The
-- config version's statement trigger (migration 002) covers the new columns too. connector_pacing holds where a
-- rate-limited connector's next attempt may start (micros), locked by a claim that takes start times from it, so
-- that the rate holds across every process (delivery/pacing.ts).
ALTER TABLE data_connectors ADD COLUMN max_concurrency integer NOT NULL DEFAULT 64;
ALTER TABLE data_connectors ADD COLUMN max_rate double precision NOT NULL DEFAULT 0;
ALTER TABLE data_connectors ADD COLUMN label_filters text NOT NULL DEFAULT '{}';
ALTER TABLE data_connectors ADD COLUMN paused boolean NOT NULL DEFAULT false;
CREATE TABLE connector_pacing (
  connector_id text PRIMARY KEY,
  next_start bigint NOT NULL
);
