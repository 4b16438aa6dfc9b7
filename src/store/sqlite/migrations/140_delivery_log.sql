-- The delivery log (extensions §X1; store/contract/delivery-log.ts, codes in store/sql/delivery-log-rows.ts).

-- What queued a row: 0 a published event (the default, so the live path's insert names no more columns than before),
-- 1 :sync, 2 :resend, 3 :replay. SQLite stores a 0 in the record header alone: no byte more per queued row.
ALTER TABLE deliveries ADD COLUMN trigger INTEGER NOT NULL DEFAULT 0;

-- One row per delivery from its first outcome on (a queued row without one is read from the queue, PENDING), under
-- its queue row's id (ids are never reused: deliveries is AUTOINCREMENT, and a TEST draws its id from the same
-- sequence). trigger and state are codes; attempts a JSON array of compact objects, oldest first.
CREATE TABLE delivery_log (
  id                INTEGER PRIMARY KEY,
  connector_id      TEXT NOT NULL,
  event_id          TEXT NOT NULL,
  event_type        TEXT NOT NULL,
  device_id         TEXT NOT NULL,
  trigger           INTEGER NOT NULL,
  state             INTEGER NOT NULL,
  attempt_count     INTEGER NOT NULL,
  create_time       INTEGER NOT NULL,
  update_time       INTEGER NOT NULL,
  next_attempt_time INTEGER,
  attempts          TEXT NOT NULL
);
-- A connector's deliveries of each state newest first (the index holds (connector_id, state, rowid), and the rowid is
-- the id): a page of any states is a merge of one range per state, however rare the state, and its count for the cap.
-- Retention walks the primary key: ids follow create_time (queue rows are inserted in enqueue-time order), so no
-- index on create_time is written for every delivery.
CREATE INDEX delivery_log_by_connector ON delivery_log(connector_id, state);
-- "Where is event X?" across a project's connectors, and :replay's onlyUndelivered; also in id order per connector.
CREATE INDEX delivery_log_by_event ON delivery_log(event_id, connector_id);
