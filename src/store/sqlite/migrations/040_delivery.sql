-- Delivery engine: indexes for the claim (per-connector skip-scan over due rows), the 12-hour drop, the
-- :sync lookup of the latest event per device and type, and the service-wide delivery counters.

-- A claimed row has lease_until set and due_time pushed to the lease end, so "due" is just due_time <= now.
DROP INDEX IF EXISTS deliveries_by_connector;
CREATE INDEX deliveries_by_connector_due ON deliveries(connector_id, due_time, id);
CREATE INDEX deliveries_by_enqueue_time ON deliveries(enqueue_time);

-- :sync: the latest stored event of each type of a device is one index seek.
CREATE INDEX events_by_device_type_time ON events(device_id, event_type, timestamp DESC, id DESC);

CREATE INDEX connector_metrics_by_bucket ON connector_metrics(bucket_start);

-- Monotonic counters exported on GET /metrics, written in the same transaction as the outcomes they count.
CREATE TABLE delivery_counters (
  series TEXT PRIMARY KEY,                -- Prometheus series text, e.g. delivery_attempts_total{outcome="ack"}
  value  REAL NOT NULL
);
