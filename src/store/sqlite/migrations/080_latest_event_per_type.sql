-- Each device keeps its latest event of each type (what :sync pushes) on its own row, as
-- latest_events = {"<eventType>": [<timestamp>, "<eventId>"], …}, instead of finding it through an index on
-- events(device_id, event_type, timestamp, id). That index was one more B-tree written by every event, and with
-- one leaf page per device and type it added ~10 pages to every commit at saturation. The pipeline writes
-- latest_events in the same UPDATE that moves `reported` forward (events/pipeline.ts), so it costs no statement.
-- It replaces reported_times: the timestamps there are the ones latest_events now holds.
ALTER TABLE devices ADD COLUMN latest_events TEXT NOT NULL DEFAULT '{}';

-- Per type the device has reported or has history of: its newest stored event, if that is still the newest the
-- device ever had (reported_times holds that event's time); otherwise retention has deleted it, and the entry
-- keeps the time with an empty id (latestPerType then looks for an older event stored after it).
UPDATE devices SET latest_events = (
  SELECT json_group_object(k.type, CASE WHEN r.value IS NOT NULL AND (e.timestamp IS NULL OR r.value > e.timestamp)
                                        THEN json_array(r.value, '') ELSE json_array(e.timestamp, e.id) END)
  FROM (SELECT key AS type FROM json_each(devices.reported_times)
        UNION SELECT DISTINCT event_type FROM events WHERE device_id = devices.id) k
  LEFT JOIN json_each(devices.reported_times) r ON r.key = k.type
  LEFT JOIN events e ON e.id = (SELECT x.id FROM events x WHERE x.device_id = devices.id AND x.event_type = k.type
                                ORDER BY x.timestamp DESC, x.id DESC LIMIT 1)
);

ALTER TABLE devices DROP COLUMN reported_times;
DROP INDEX IF EXISTS events_by_device_type_time;

-- History filtered by event type walks the device's time index; with the type in the index, entries of other
-- types are skipped without reading their rows.
DROP INDEX IF EXISTS events_by_device_time;
CREATE INDEX events_by_device_time ON events(device_id, timestamp DESC, id DESC, event_type);
