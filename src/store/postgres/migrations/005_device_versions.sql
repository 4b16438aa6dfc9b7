-- A group-commit batch whose devices this process has read before (store/postgres/device-versions.ts) writes its
-- events without a transaction of its own: one statement, which updates each device only if the row still has the
-- version read then (its xmin and update_time), and must fail as a whole if one has not (another process changed
-- or deleted it meanwhile). This raises that failure from inside the statement, so nothing it wrote is kept; the
-- process then runs the batch again with the devices locked and read.
CREATE FUNCTION sensorcloud_fresh(ok boolean) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF NOT ok THEN
    RAISE EXCEPTION 'a device changed since this process read it' USING ERRCODE = 'SC001';
  END IF;
  RETURN true;
END $$;
