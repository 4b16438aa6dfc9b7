-- sensorcloud_lock_in_flight: what the cluster-wide per-connector limit needs to queue rows already leased (the
-- engine's hand-off, NewDelivery.leaseIf), one row per connector of `ids`. A connector with a row due (a waiting row
-- whose due time has come, or a leased one whose lease has ended) is answered `due` at once, without its lock: its
-- new rows are queued due, after those. The others are locked with their claim locks (the ones sensorcloud_claim
-- takes), in the order of `ids`, held until the commit, and counted: their rows in flight (`n`, leased, lease not
-- over, leaving out the rows in `ended`) and of them the hanging ones (`hanging`, lease ending at or before
-- `hanging_before`). Callers sort `ids` byte-wise, as every process sorts the locks it takes, so two writing
-- transactions never deadlock; and `ended` ascending, since the count finds each row in it by binary search
-- (`width_bucket`; an array out of order only keeps a row it could have left out).
-- Called by the `flight` CTE of the statement repos/deliveries.ts builds (queueRowsSql), which queues rows under a
-- cap: DeliveryRepo.add, and a group-commit batch's flush (batching/write-behind.ts).
--
-- Why so: plpgsql and VOLATILE, so that the count's statement takes its snapshot after the locks were granted
-- (migration 003). Generic plans, index scans only, no parallel workers, each probe reading the first entry of the
-- connector's part of an index in that index's order: planned from a queue's statistics, which can be far from what
-- it holds, the count took 8-16 ms instead of 0.3 ms while holding the locks (migration 007). `ended` searched, not
-- compared with every row (migration 009: 1.1-3.8 ms a call down to 0.4-0.6 ms). Rows due looked for before the
-- locks, so that an event batch no longer waits for the claims of connectors whose rows go due anyway (migration 010).
-- History: 003 (first), 004 (`ended`), 007 (plans), 009 (`ended` searched), 010 (rows due first). Their comments
-- hold the measurements.
CREATE OR REPLACE FUNCTION sensorcloud_lock_in_flight(ids text[], nows bigint[], hanging_before bigint[], enqueued_after bigint[], ended bigint[])
RETURNS TABLE (connector_id text, n integer, hanging integer, due boolean) LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_bitmapscan = off SET max_parallel_workers_per_gather = 0 AS $$
DECLARE
  waiting boolean[];
BEGIN
  SELECT array_agg(
      coalesce((SELECT true FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until IS NULL AND d.due_time <= u.now AND d.enqueue_time > u.ea
          ORDER BY d.due_time LIMIT 1), false)
        OR coalesce((SELECT true FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until <= u.now AND d.enqueue_time > u.ea
          ORDER BY d.lease_until LIMIT 1), false)
      ORDER BY u.i)
    INTO waiting
    FROM unnest(ids, nows, enqueued_after) WITH ORDINALITY AS u(id, now, ea, i);
  -- In the order of `ids` (the callers sort them), so that the locks are taken in one order everywhere.
  PERFORM pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || u.id, 0))
    FROM unnest(ids, waiting) WITH ORDINALITY AS u(id, w, i) WHERE NOT u.w ORDER BY u.i;
  RETURN QUERY SELECT u.id, 0, 0, true FROM unnest(ids, waiting) AS u(id, w) WHERE u.w
  UNION ALL
  SELECT u.id, f.n::integer, f.hanging::integer, false
  FROM unnest(ids, nows, hanging_before, waiting) AS u(id, now, hb, w)
  CROSS JOIN LATERAL (
    SELECT count(*) AS n, count(*) FILTER (WHERE d.lease_until <= u.hb) AS hanging
    FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until > u.now
      AND coalesce(ended[width_bucket(d.id, ended)] <> d.id, true)) f
  WHERE NOT u.w;
END $$;

-- Migration 003's signature, without `ended`, which migration 004 kept for the processes of the release before it
-- during a rolling upgrade. Nothing of this release calls it; only a migration may drop it (README.md).
CREATE OR REPLACE FUNCTION sensorcloud_lock_in_flight(ids text[], nows bigint[], hanging_before bigint[], enqueued_after bigint[])
RETURNS TABLE (connector_id text, n integer, hanging integer, due boolean) LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || id, 0)) FROM unnest(ids) AS id;
  RETURN QUERY SELECT u.id, f.n::integer, f.hanging::integer,
    EXISTS (SELECT 1 FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until IS NULL AND d.due_time <= u.now AND d.enqueue_time > u.ea)
      OR EXISTS (SELECT 1 FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until <= u.now AND d.enqueue_time > u.ea)
  FROM unnest(ids, nows, hanging_before, enqueued_after) AS u(id, now, hb, ea)
  CROSS JOIN LATERAL (
    SELECT count(*) AS n, count(*) FILTER (WHERE d.lease_until <= u.hb) AS hanging
    FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until > u.now) f;
END $$;
