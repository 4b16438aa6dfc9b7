-- An event batch's rows for a connector that has rows due are queued due whatever its count says (they go first),
-- yet the count (migration 009) took every such connector's claim lock first, waiting for the claims that hold it,
-- and counted its rows in flight. Where endpoints are slower than the events that reach them, nearly every
-- connector of every batch has rows due: with 32 connectors whose endpoints answer after 500 ms, the batch's lock
-- waited 0.44 ms and its count ran 1.4 ms a call, and each claim waited 0.88 ms for its lock (pg_stat_statements,
-- one process). Rows due are now looked for first, without the lock, and a connector that has some is answered
-- due at once; the others are locked and counted as before. That is safe: a row queued due is never over the
-- limit. What the look may miss are rows made due by a statement that commits after it: a fresh row may then be
-- leased ahead of them, as it could before when they committed just after the count.
--
-- Same signature, settings and answers: processes of the release before this one keep working during a rolling
-- upgrade. (CREATE OR REPLACE replaces a function's settings too, so they are given again.)
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
