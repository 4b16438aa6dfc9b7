-- Retention now finds old events through their time-ordered ids (events.ts, deleteStoredBefore); this index was
-- written on every event and read only by the retention pass.
DROP INDEX IF EXISTS events_by_create_time;
