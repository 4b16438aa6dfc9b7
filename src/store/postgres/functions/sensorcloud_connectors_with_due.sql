-- sensorcloud_connectors_with_due: the connectors that have rows due (a waiting row whose due time has come, or a
-- leased one whose lease has ended) among the rows enqueued after `enqueued_after`. Loose index scans: one seek per
-- connector that has rows waiting and one per connector that has rows leased, however long its backlog, then one
-- probe per connector for a row due, the first entry of the connector's part of an index, in that index's order.
-- Called by DeliveryRepo.connectorsWithDue (repos/deliveries.ts, CONNECTORS_WITH_DUE).
--
-- Why so: written as EXISTS in a statement, PostgreSQL planned the probes as a semi join that hashed every due row
-- of the queue (25,000 rows due: 6.6 ms a call), or as sequential or bitmap scans when the statistics were of a
-- shorter queue; hence generic plans with index scans only and no parallel workers (migration 007).
-- History: 007.
CREATE OR REPLACE FUNCTION sensorcloud_connectors_with_due(now bigint, enqueued_after bigint) RETURNS SETOF text
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off SET max_parallel_workers_per_gather = 0 AS $$
BEGIN
  RETURN QUERY
  WITH RECURSIVE w(id) AS (
    (SELECT connector_id FROM deliveries WHERE lease_until IS NULL ORDER BY connector_id LIMIT 1)
    UNION ALL
    SELECT (SELECT connector_id FROM deliveries WHERE lease_until IS NULL AND connector_id > w.id ORDER BY connector_id LIMIT 1)
    FROM w WHERE w.id IS NOT NULL
  ), l(id) AS (
    (SELECT connector_id FROM deliveries WHERE lease_until IS NOT NULL ORDER BY connector_id LIMIT 1)
    UNION ALL
    SELECT (SELECT connector_id FROM deliveries WHERE lease_until IS NOT NULL AND connector_id > l.id ORDER BY connector_id LIMIT 1)
    FROM l WHERE l.id IS NOT NULL
  )
  SELECT w.id FROM w WHERE w.id IS NOT NULL
    AND (SELECT true FROM deliveries d WHERE d.connector_id = w.id AND d.lease_until IS NULL AND d.due_time <= $1 AND d.enqueue_time > $2
      ORDER BY d.due_time LIMIT 1)
  UNION
  SELECT l.id FROM l WHERE l.id IS NOT NULL
    AND (SELECT true FROM deliveries d WHERE d.connector_id = l.id AND d.lease_until <= $1 AND d.enqueue_time > $2
      ORDER BY d.lease_until LIMIT 1);
END $$;
