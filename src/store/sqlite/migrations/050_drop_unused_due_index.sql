-- Every claim query walks deliveries_by_connector_due; the plain due_time index was written on every enqueue,
-- claim and retry but read by nothing.
DROP INDEX IF EXISTS deliveries_due;
