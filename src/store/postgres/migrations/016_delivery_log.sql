-- The delivery log (extensions §X1; store/contract/delivery-log.ts, codes in store/sql/delivery-log-rows.ts).

-- What queued a row: 0 a published event (the default: the live path's statements, queueRowsSql, name no more
-- columns than before), 1 :sync, 2 :resend, 3 :replay. A constant default adds the column without rewriting the
-- table. The queue's functions return its rows (SETOF deliveries), so their answers carry it too; a process of the
-- release before reads its columns by name and never sees it.
ALTER TABLE deliveries ADD COLUMN trigger smallint NOT NULL DEFAULT 0;

-- One row per delivery from its first outcome on (a queued row without one is read from the queue, PENDING), under
-- its queue row's id (a TEST draws its id from the queue's sequence: ids never meet). Fixed-width columns first, so
-- no row pays for alignment padding; trigger and state are codes, attempts a jsonb array of compact objects, oldest
-- first.
CREATE TABLE delivery_log (
  id                bigint PRIMARY KEY,
  create_time       bigint NOT NULL,
  update_time       bigint NOT NULL,
  next_attempt_time bigint,
  attempt_count     integer NOT NULL,
  trigger           smallint NOT NULL,
  state             smallint NOT NULL,
  connector_id      text COLLATE "C" NOT NULL,
  event_id          text COLLATE "C" NOT NULL,
  event_type        text NOT NULL,
  device_id         text COLLATE "C" NOT NULL,
  attempts          jsonb NOT NULL
);
-- A connector's deliveries of each state newest first: a page of any states is a merge of one range per state,
-- however rare the state, and its count for the cap. Retention walks the primary key: ids follow create_time (queue
-- rows are inserted in enqueue-time order), so no index on create_time is written per delivery.
CREATE INDEX delivery_log_by_connector ON delivery_log (connector_id, state, id);
-- "Where is event X?" across a project's connectors, and :replay's onlyUndelivered.
CREATE INDEX delivery_log_by_event ON delivery_log (event_id, connector_id);
