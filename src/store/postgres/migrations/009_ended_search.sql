-- The in-flight count leaves out the rows whose attempts here have ended (`ended`, migration 004). Written as
-- `d.id <> ALL (ended)`, every row the count read was compared with the ids of the whole array in turn (an array
-- that is a parameter is never hashed), and the array names the ended rows of every connector of the batch, so an
-- event batch's count grew with connectors × rows × ids. Measured in a loop of calls inside the server, each
-- connector with 64 rows in flight: 32 connectors with 5 ended rows each 1,082 µs a call, with 20 each 3,781 µs;
-- 100 connectors with 10 in flight and 3 ended each 1,231 µs; one connector with 150 ended 86 µs. Now the caller
-- sends the ids in ascending order and the count finds each row by binary search (`width_bucket` returns the
-- position of the largest id not above the row's): 365 µs, 584 µs, 535 µs and 46 µs. The event batch holds its
-- connectors' claim locks from this count to its commit, so the count's time is also time other processes' claims
-- of those connectors wait. An array not in order can only make the count keep a row it could have left out
-- (an id is left out only when it is found), never the reverse.
--
-- The claim (sensorcloud_claim) keeps its count as it was. Its queries are left to choose their plans (migration
-- 007), and with this predicate its calls took 1.7 ms instead of 0.55 ms while one process drained a backlog of
-- 1,000,000 rows after the benchmark's other phases (7,949 rows/s instead of 12,771; pg_stat_statements), though
-- not when the backlog was drained on a fresh database. Why was not found.
--
-- Same signature, settings and answers as in migration 007: processes of the release before this one keep working
-- during a rolling upgrade. (CREATE OR REPLACE replaces a function's settings too, so they are given again.)
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
    FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until > u.now
      AND coalesce(ended[width_bucket(d.id, ended)] <> d.id, true)) f;
END $$;
