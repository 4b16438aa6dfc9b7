-- A counter that moves with every write to projects and data_connectors, by any process: the read cache of projects
-- and active connectors (store/postgres/config-cache.ts) is valid while it stays put. A row of its own, apart from
-- auth_version, so that a connector's state change never waits on the lock of a key's write.
CREATE TABLE config_version (
  one   boolean PRIMARY KEY DEFAULT true CHECK (one),
  value bigint NOT NULL
);
INSERT INTO config_version (value) VALUES (0);
CREATE FUNCTION bump_config_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE config_version SET value = value + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER projects_config AFTER INSERT OR UPDATE OR DELETE ON projects FOR EACH STATEMENT EXECUTE FUNCTION bump_config_version();
CREATE TRIGGER data_connectors_config AFTER INSERT OR UPDATE OR DELETE ON data_connectors FOR EACH STATEMENT EXECUTE FUNCTION bump_config_version();
