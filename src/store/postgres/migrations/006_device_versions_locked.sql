-- The check of an unlocked batch (migration 005) in one function that first takes the devices' row locks, in id
-- order, before the statement takes any other lock. Checked row by row inside the UPDATE, the devices were locked
-- in whatever order the join produced them, after the connectors' claim locks: two processes publishing for the
-- same devices deadlocked, each waiting the second PostgreSQL takes to find a deadlock (two processes on this
-- machine: 5,600 -> 41 delivered/s). In id order, after nothing else, as the locking batches take them
-- (store/postgres/devices.ts lockDevices), no two batches wait for each other in a cycle.
--
-- Locks each device and checks that it still has the version the process read it at (xmin, update_time); a row
-- changed meanwhile is checked again once its writer has committed (read committed), and fails the check. Raises
-- SC001 unless every device passes; the statement fails as a whole and the process runs the batch again, locked.
CREATE FUNCTION sensorcloud_devices_fresh(ids text[], xmins text[], update_times bigint[]) RETURNS boolean
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

DROP FUNCTION sensorcloud_fresh(boolean);
