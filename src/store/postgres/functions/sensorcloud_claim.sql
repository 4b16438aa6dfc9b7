-- sensorcloud_claim: one connector's claim under the cluster-wide per-connector limit, in one statement. Takes the
-- connector's claim lock (held until the commit; the same lock sensorcloud_lock_in_flight takes), counts its rows in
-- flight (leased, lease not over), leaving out the rows in `ended` (attempts of the calling process that have ended,
-- their outcomes not committed yet), and of them the hanging ones (lease ending at or before `hanging_before`), then
-- leases the due rows that fit under `lim` and the cap (`cap_hanging` while one hangs, else `cap_max`): candidates
-- from both indexes (waiting rows whose due time has come, leased rows whose lease has ended), earliest due first,
-- locked with FOR UPDATE SKIP LOCKED and checked again (a row leased meanwhile fails the check). Returns the rows
-- leased, their due_time and lease_until set to `new_lease`.
-- Called by DeliveryRepo.claim (repos/deliveries.ts, CLAIM), and once per connector by sensorcloud_claim_many.
--
-- Why so: the count is a statement of its own, so that its snapshot follows the lock and sees every lease committed
-- by the transaction that held it before (migration 003). Plans are generic (planned once per connection), without
-- parallel workers, but free to choose their scans: with index scans only, one process drained a backlog of
-- 1,000,000 rows at half the rate (migration 007). `ended` is compared row by row, not searched as
-- sensorcloud_lock_in_flight does: searched, its calls took 1.7 ms instead of 0.55 ms in one benchmark, for a reason
-- not found (migration 009).
-- History: 003 (first), 004 (`ended`), 007 (no parallel workers; an ALTER FUNCTION there, a SET here).
CREATE OR REPLACE FUNCTION sensorcloud_claim(connector text, now bigint, enqueued_after bigint, new_lease bigint, lim integer,
  cap_max integer, cap_hanging integer, hanging_before bigint, ended bigint[])
RETURNS SETOF deliveries LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET max_parallel_workers_per_gather = 0 AS $$
DECLARE
  n integer;
  hanging integer;
  room integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || connector, 0));
  SELECT count(*), count(*) FILTER (WHERE d.lease_until <= hanging_before) INTO n, hanging
    FROM deliveries d WHERE d.connector_id = connector AND d.lease_until > now AND d.id <> ALL (ended);
  room := least(lim, (CASE WHEN hanging > 0 THEN cap_hanging ELSE cap_max END) - n);
  IF room <= 0 THEN
    RETURN;
  END IF;
  RETURN QUERY UPDATE deliveries SET lease_until = new_lease, due_time = new_lease
    WHERE id IN (
      SELECT d.id FROM deliveries d
      WHERE d.id IN (
          (SELECT w.id FROM deliveries w
           WHERE w.connector_id = connector AND w.lease_until IS NULL AND w.due_time <= now AND w.enqueue_time > enqueued_after
           ORDER BY w.due_time, w.id LIMIT room)
          UNION ALL
          (SELECT e.id FROM deliveries e
           WHERE e.connector_id = connector AND e.lease_until <= now AND e.enqueue_time > enqueued_after
           ORDER BY e.lease_until LIMIT room))
        AND ((d.lease_until IS NULL AND d.due_time <= now) OR d.lease_until <= now)
      ORDER BY d.due_time, d.id LIMIT room FOR UPDATE SKIP LOCKED)
    RETURNING *;
END $$;

-- Migration 003's signature, without `ended`, which migration 004 kept for the processes of the release before it
-- during a rolling upgrade. Nothing of this release calls it; only a migration may drop it (README.md).
CREATE OR REPLACE FUNCTION sensorcloud_claim(connector text, now bigint, enqueued_after bigint, new_lease bigint, lim integer,
  cap_max integer, cap_hanging integer, hanging_before bigint)
RETURNS SETOF deliveries LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  n integer;
  hanging integer;
  room integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || connector, 0));
  SELECT count(*), count(*) FILTER (WHERE d.lease_until <= hanging_before) INTO n, hanging
    FROM deliveries d WHERE d.connector_id = connector AND d.lease_until > now;
  room := least(lim, (CASE WHEN hanging > 0 THEN cap_hanging ELSE cap_max END) - n);
  IF room <= 0 THEN
    RETURN;
  END IF;
  RETURN QUERY UPDATE deliveries SET lease_until = new_lease, due_time = new_lease
    WHERE id IN (
      SELECT d.id FROM deliveries d
      WHERE d.id IN (
          (SELECT w.id FROM deliveries w
           WHERE w.connector_id = connector AND w.lease_until IS NULL AND w.due_time <= now AND w.enqueue_time > enqueued_after
           ORDER BY w.due_time, w.id LIMIT room)
          UNION ALL
          (SELECT e.id FROM deliveries e
           WHERE e.connector_id = connector AND e.lease_until <= now AND e.enqueue_time > enqueued_after
           ORDER BY e.lease_until LIMIT room))
        AND ((d.lease_until IS NULL AND d.due_time <= now) OR d.lease_until <= now)
      ORDER BY d.due_time, d.id LIMIT room FOR UPDATE SKIP LOCKED)
    RETURNING *;
END $$;
