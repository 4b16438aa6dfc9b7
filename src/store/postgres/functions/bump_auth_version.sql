-- bump_auth_version: moves the auth version (the one row of auth_version) by one, in the writing transaction, after
-- any statement that writes users, service_accounts, service_account_keys or memberships (the triggers users_auth,
-- service_accounts_auth, keys_auth and memberships_auth, migration 001). Every process reads the row
-- (Store.authVersion, index.ts) to know when its authentication cache is out of date, and reads the new value only
-- once the change it announces is visible.
-- History: 001.
CREATE OR REPLACE FUNCTION bump_auth_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE auth_version SET value = value + 1;
  RETURN NULL;
END $$;
