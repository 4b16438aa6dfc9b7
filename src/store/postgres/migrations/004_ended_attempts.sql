-- The cluster's per-connector limit counts attempts in flight at the endpoint. A row stays leased from its attempt's
-- end until its outcome commits (a few milliseconds later, in the next outcome batch), and counted as in flight it
-- held fresh rows back: at saturation with one process, 27 % of the rows were queued due and claimed back (a claim,
-- an UPDATE of each row and a NOTIFY; the claim was a quarter of the statements' time, pg_stat_statements). The
-- process that made those attempts knows they ended: it passes their row ids (`ended`), and the count leaves them
-- out. Safe: a row it names has no request open at the endpoint, and once the process stops naming it (its outcome
-- committed, or failed to be recorded) it counts again until its lease ends.
--
-- The same functions as in 003 with that one argument more. The versions of 003 stay, for processes of the release
-- before this one during a rolling upgrade.
CREATE FUNCTION sensorcloud_lock_in_flight(ids text[], nows bigint[], hanging_before bigint[], enqueued_after bigint[], ended bigint[])
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
    FROM deliveries d WHERE d.connector_id = u.id AND d.lease_until > u.now AND d.id <> ALL (ended)) f;
END $$;

CREATE FUNCTION sensorcloud_claim(connector text, now bigint, enqueued_after bigint, new_lease bigint, lim integer,
  cap_max integer, cap_hanging integer, hanging_before bigint, ended bigint[])
RETURNS SETOF deliveries LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $$
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
