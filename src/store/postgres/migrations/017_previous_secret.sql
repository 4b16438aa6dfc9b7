-- Signature secret rotation without a gap (extensions §X3; store/contract/connector-repos.ts): the previous signature
-- secret, sealed with the secret box like the current one, and the end of its overlap (micros). '' and NULL when
-- there is none. Constant defaults add the columns without rewriting the table, and a process of the release before
-- (a rolling upgrade) names its columns in every write, so it keeps working; its settings PATCH leaves an overlap
-- running, which ends by itself. The config version's statement trigger (migration 002) covers the new columns too.
ALTER TABLE data_connectors ADD COLUMN previous_signature_secret text NOT NULL DEFAULT '';
ALTER TABLE data_connectors ADD COLUMN previous_signature_secret_expire_time bigint;
