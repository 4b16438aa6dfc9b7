-- sensorcloud_claim_many: the claims of an engine's turn in one statement. Takes the claim locks of the connectors in
-- `lock_order` first, in that order (callers sort the ids as every process sorts the locks it takes, write-behind's
-- included, so a statement holding some never waits for one held by a statement that waits for its own), then claims
-- each of `connectors` in the order given (the engine's rotation) with sensorcloud_claim, which takes the lock it
-- holds already again, counts and leases, with what the connectors before it left of `total`; `ended` holds the
-- ended rows of all of them, `ended_connectors` the connector of each. The locks are held until the commit.
-- Returns the rows leased.
-- Called by DeliveryRepo.claimMany (repos/deliveries.ts, CLAIM_MANY).
--
-- Why so: each claim a statement of its own was a third of the service's statements with slow endpoints
-- (migration 011).
-- History: 011.
CREATE OR REPLACE FUNCTION sensorcloud_claim_many(connectors text[], lock_order text[], limits integer[], cap_max integer[],
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
