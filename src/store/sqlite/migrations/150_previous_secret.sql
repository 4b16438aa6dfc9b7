-- Signature secret rotation without a gap (extensions §X3; store/contract/connector-repos.ts): the previous signature
-- secret, sealed with the secret box like the current one, and the end of its overlap (micros). '' and NULL when
-- there is none, as every connector starts.
ALTER TABLE data_connectors ADD COLUMN previous_signature_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE data_connectors ADD COLUMN previous_signature_secret_expire_time INTEGER;
