-- Rows queued already leased to the process that queued them (the engine's hand-off; NewDelivery.leaseIf), under
-- the cluster-wide per-connector limit. For each connector: its claim lock (the one claims try, deliveries.ts),
-- waited for in the order given (callers pass the ids sorted, so two inserting transactions never deadlock), held
-- until the commit; then its rows in flight (leased, lease not over), of them the hanging ones, and whether it has
-- a row due that must go first. VOLATILE, so the count's statement takes a snapshot after the locks were granted:
-- it sees every lease committed by the transaction that held a lock before.
CREATE FUNCTION sensorcloud_lock_in_flight(ids text[], nows bigint[], hanging_before bigint[], enqueued_after bigint[])
RETURNS TABLE (connector_id text, n integer, hanging integer, due boolean) LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || id, 0)) FROM unnest(ids) AS id;
  RETURN QUERY SELECT u.id, f.n::integer, f.hanging::integer,
    EXISTS (SELECT 1 FROM deliveries d WHERE d.connector_id = u.id AND d.due_time <= u.now AND d.enqueue_time > u.ea)
  FROM unnest(ids, nows, hanging_before, enqueued_after) AS u(id, now, hb, ea)
  CROSS JOIN LATERAL (
    SELECT count(*) AS n, count(*) FILTER (WHERE d.lease_until <= u.hb) AS hanging
    FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until > u.now) f;
END $$;

-- A claim under the same limit (DeliveryRepo.claim with a cap), in one statement: the connector's claim lock,
-- waited for, then what is in flight (a statement of its own in plpgsql, so its snapshot follows the lock), then
-- the due rows that fit, leased. A claim holds one connector's lock at a time (claim.ts), so waiting for it can
-- never close a cycle with the inserts, which take theirs in id order.
CREATE FUNCTION sensorcloud_claim(connector text, now bigint, enqueued_after bigint, new_lease bigint, lim integer,
  cap_max integer, cap_hanging integer, hanging_before bigint)
RETURNS SETOF deliveries LANGUAGE plpgsql VOLATILE AS $$
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
      SELECT d.id FROM deliveries d WHERE d.connector_id = connector AND d.due_time <= now AND d.enqueue_time > enqueued_after
      ORDER BY d.due_time, d.id LIMIT room FOR UPDATE SKIP LOCKED)
    RETURNING *;
END $$;
