-- sensorcloud_devices_fresh: for a group-commit batch that runs without a transaction of its own (its devices all
-- read before, batching/device-versions.ts), locks each device it read, in id order, and checks that it still has
-- the version read then (xmin, update_time); a row changed meanwhile is checked again once its writer has committed
-- (read committed), and fails. Raises SC001 unless every device passes, so the statement fails as a whole and
-- nothing it wrote is kept; the process runs the batch again with the devices locked (isStale, write-behind.ts).
-- Called by the `ok` CTE of a batch's flush (batching/write-behind.ts), before the statement takes any other lock.
--
-- Why so: checked row by row inside the UPDATE, the devices were locked in whatever order the join produced, after
-- the connectors' claim locks, and two processes publishing for the same devices deadlocked (5,600 -> 41
-- delivered/s); in id order, after nothing else, as the locking batches take them (repos/devices.ts lockDevices),
-- no two batches wait for each other in a cycle (migration 006).
-- History: 006 (replacing migration 005's sensorcloud_fresh, which it dropped).
CREATE OR REPLACE FUNCTION sensorcloud_devices_fresh(ids text[], xmins text[], update_times bigint[]) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  n integer;
BEGIN
  IF cardinality(ids) = 0 THEN
    RETURN true;
  END IF;
  SELECT count(*) INTO n FROM (
    SELECT d.id FROM devices d JOIN unnest(ids, xmins, update_times) AS u(id, x, t) ON d.id = u.id
    WHERE d.xmin::text = u.x AND d.update_time = u.t
    ORDER BY d.id COLLATE "C" FOR NO KEY UPDATE OF d) fresh;
  IF n < cardinality(ids) THEN
    RAISE EXCEPTION 'a device changed since this process read it' USING ERRCODE = 'SC001';
  END IF;
  RETURN true;
END $$;
