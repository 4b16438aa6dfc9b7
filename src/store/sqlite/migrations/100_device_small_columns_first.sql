-- The devices table with its small columns first and the two that can be large (labels: up to 100 labels of 1,024
-- characters; reported: the latest data of each event type) last. SQLite reads a row's columns in order, and in a
-- row too big for its page every column past the page's share sits behind overflow pages that must be walked to
-- reach it: with latest_events and emulated after reported, the heartbeat scan read every emulated device in full
-- (2-6 s a minute with 1,500 devices of ~800 KB each). Now it reads the first few hundred bytes of each row.
CREATE TABLE devices_new (
  id             TEXT PRIMARY KEY,
  project_id     TEXT NOT NULL REFERENCES projects(id),
  type           TEXT NOT NULL,
  product_number TEXT NOT NULL,
  emulated       INTEGER NOT NULL,
  create_time    INTEGER NOT NULL,
  update_time    INTEGER NOT NULL,
  latest_events  TEXT NOT NULL DEFAULT '{}',
  labels         TEXT NOT NULL DEFAULT '{}',
  reported       TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO devices_new (id, project_id, type, product_number, emulated, create_time, update_time, latest_events, labels, reported)
  SELECT id, project_id, type, product_number, emulated, create_time, update_time, latest_events, labels, reported FROM devices;
DROP TABLE devices;
ALTER TABLE devices_new RENAME TO devices;
CREATE INDEX devices_by_project ON devices(project_id, id);
