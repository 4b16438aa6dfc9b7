-- bump_config_version: moves the config version (the one row of config_version) by one, in the writing transaction,
-- after any statement that writes projects, data_connectors or rules (the triggers projects_config and
-- data_connectors_config, migration 002; rules_config, migration 019). The read cache of projects, active connectors
-- and enabled rules (repos/config-cache.ts, index.ts) is valid while it stays put. A row apart from auth_version, so
-- that a connector's state change never waits on the lock of a key's write.
-- History: 002.
CREATE OR REPLACE FUNCTION bump_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE config_version SET value = value + 1;
  RETURN NULL;
END $$;
