-- The queue of a cluster, for rows queued already leased to the process that queued them (the engine's hand-off;
-- NewDelivery.leaseIf) under the cluster-wide per-connector limit, and for claims under the same limit.

-- Claims read a partial index of the rows waiting for an attempt (not leased), in the order they take them. A row
-- queued already leased, nearly every row below saturation, never enters it: one index fewer to write on the hot
-- path, and to clean after the row's deletion. A row whose lease ended without an outcome (its process died) is due
-- again; claims find those through deliveries_leased, by lease end.
DROP INDEX deliveries_by_connector_due;
CREATE INDEX deliveries_waiting ON deliveries (connector_id, due_time, id) WHERE lease_until IS NULL;

-- For each connector: its claim lock (the one claims take, below), waited for in the order given (callers pass the
-- ids sorted, so two writing transactions never deadlock), held until the commit; then its rows in flight (leased,
-- lease not over), of them the hanging ones, and whether it has a row due that must go first: a waiting row whose
-- due time has come, or a leased one whose lease has ended. plpgsql, VOLATILE: the count's statement takes a
-- snapshot after the locks were granted, so it sees every lease committed by the transaction that held a lock
-- before. Its queries take arrays and bind parameters; left to choose, PostgreSQL planned the count anew at every
-- call (98 µs of planning against 21 µs of execution, pg_stat_statements with track_planning): planned once.
CREATE FUNCTION sensorcloud_lock_in_flight(ids text[], nows bigint[], hanging_before bigint[], enqueued_after bigint[])
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

-- A claim under the same limit (DeliveryRepo.claim), in one statement: the connector's claim lock, waited for, then
-- what is in flight (a statement of its own, so its snapshot follows the lock), then the due rows that fit, leased:
-- candidates from both indexes, earliest due first (a leased row's due time is its lease end), locked and checked
-- again (SKIP LOCKED passes over rows another transaction holds, and a row leased meanwhile fails the check). A
-- claim holds one connector's lock at a time (claim.ts), so waiting for it can never close a cycle with the writes
-- of leased rows, which take theirs in id order.
CREATE FUNCTION sensorcloud_claim(connector text, now bigint, enqueued_after bigint, new_lease bigint, lim integer,
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

-- Vacuum never truncates the queue: its last pages are emptied all the time, and truncating them takes a lock that
-- stops every insert and delete of the table (the store's own vacuum, queue-vacuum.ts, waited up to 84 ms a time).
ALTER TABLE deliveries SET (vacuum_truncate = false);
