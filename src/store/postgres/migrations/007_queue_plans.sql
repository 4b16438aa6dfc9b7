-- The queue's functions (migrations 003 and 004) plan their queries once per connection, as generic plans, from
-- the table's statistics, and a queue's statistics can be far from what it holds: after one connector's backlog of
-- 400,000 rows, they still said every row was that connector's (ANALYZE keeps the old ones while the table is
-- empty, and the next backlog may come before autovacuum analyzes again). Planned from them, the probe for a
-- connector's due row ran as a sequential scan of the table, the count of its rows in flight as a bitmap scan
-- (which never marks the entries of deleted rows dead, so it reads them again at every call) or a parallel plan
-- (two worker processes started at every call): 8-16 ms for an event batch's count of 32 connectors instead of
-- 0.3 ms, while it holds their claim locks (docs/benchmarks.md). These queries each read a few entries of an index:
-- they are planned with index scans only, no parallel workers, and each probe reads the first entry of the
-- connector's part of an index, in that index's order. Same signatures and answers: processes of the release
-- before this one keep working during a rolling upgrade.
CREATE OR REPLACE FUNCTION sensorcloud_lock_in_flight(ids text[], nows bigint[], hanging_before bigint[], enqueued_after bigint[], ended bigint[])
RETURNS TABLE (connector_id text, n integer, hanging integer, due boolean) LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off SET max_parallel_workers_per_gather = 0 AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || id, 0)) FROM unnest(ids) AS id;
  RETURN QUERY SELECT u.id, f.n::integer, f.hanging::integer,
    coalesce((SELECT true FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until IS NULL AND d.due_time <= u.now AND d.enqueue_time > u.ea
        ORDER BY d.due_time LIMIT 1), false)
      OR coalesce((SELECT true FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until <= u.now AND d.enqueue_time > u.ea
        ORDER BY d.lease_until LIMIT 1), false)
  FROM unnest(ids, nows, hanging_before, enqueued_after) AS u(id, now, hb, ea)
  CROSS JOIN LATERAL (
    SELECT count(*) AS n, count(*) FILTER (WHERE d.lease_until <= u.hb) AS hanging
    FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until > u.now AND d.id <> ALL (ended)) f;
END $$;

-- The claim: no parallel workers either, but its plans are left to choose their scans. With index scans only, one
-- process worked off a backlog of 1,000,000 rows at 6,000-6,800 rows/s instead of 13,100-15,100 (two alternating
-- pairs of 45 s); after a large backlog the table's rewrite (store/postgres/queue-vacuum.ts) keeps its scans cheap.
ALTER FUNCTION sensorcloud_claim(text, bigint, bigint, bigint, integer, integer, integer, bigint, bigint[])
  SET max_parallel_workers_per_gather = 0;

-- Which connectors have rows due (DeliveryRepo.connectorsWithDue), with the same settings. Loose index scans: one
-- seek per connector that has rows waiting, and one per connector that has rows leased (a lease that has ended
-- makes its row due again), however long its backlog is. Then one probe per connector for a row due, the first
-- entry of the connector's part of an index in that index's order. Written as EXISTS in a statement of the store,
-- PostgreSQL planned the probes as a semi join that hashed every due row of the queue (25,000 rows due: 6.6 ms a
-- call); with LIMIT 1 and no order, as a sequential scan each; with the order, as a bitmap scan and a sort of the
-- connector's due rows, when the statistics were of a shorter queue.
CREATE FUNCTION sensorcloud_connectors_with_due(now bigint, enqueued_after bigint) RETURNS SETOF text
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
