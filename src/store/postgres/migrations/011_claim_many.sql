-- The claims of an engine's turn in one statement (DeliveryRepo.claimMany). Each connector's claim was a statement
-- of its own: with 32 endpoints that answer after 500 ms, ~9,000 claims in 30 s, each a round trip for ~6 rows,
-- about a third of the service's statements (pg_stat_statements). The connectors' claim locks are taken first, in
-- the order of `lock_order` (the callers sort the ids as every process sorts the locks it takes, write-behind's
-- included), so a statement holding some of them never waits for one held by a statement that waits for its own;
-- then each connector is claimed in the order given (the engine's rotation) by sensorcloud_claim (migration 004),
-- which takes the lock it already holds again, counts and leases, with what the connectors before it left of
-- `total`. The locks are held until the statement ends: a connector with rows due is claimed, and an event batch
-- does not take the lock of such a connector (migration 010).
CREATE FUNCTION sensorcloud_claim_many(connectors text[], lock_order text[], limits integer[], cap_max integer[],
  cap_hanging integer[], hanging_before bigint[], total integer, now bigint, enqueued_after bigint, new_lease bigint,
  ended bigint[], ended_connectors text[])
RETURNS SETOF deliveries LANGUAGE plpgsql VOLATILE
SET max_parallel_workers_per_gather = 0 AS $$
DECLARE
  left_over integer := total;
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('sensorcloud:claim:' || c.id, 0))
    FROM unnest(lock_order) WITH ORDINALITY AS c(id, i) ORDER BY c.i;
  FOR k IN 1 .. coalesce(array_length(connectors, 1), 0) LOOP
    EXIT WHEN left_over <= 0;
    RETURN QUERY SELECT * FROM sensorcloud_claim(connectors[k], now, enqueued_after, new_lease, least(limits[k], left_over),
      cap_max[k], cap_hanging[k], hanging_before[k],
      ARRAY(SELECT e.id FROM unnest(ended, ended_connectors) AS e(id, connector) WHERE e.connector = connectors[k]));
    GET DIAGNOSTICS n = ROW_COUNT;
    left_over := left_over - n;
  END LOOP;
END $$;
