-- Password logins counted before their password is checked (the login throttle, auth/login-throttle.ts): one row per
-- key (a client address and an email, or an email), holding the times of its attempts in the window, oldest first.
-- login_failures (migration 008) was read before the slow password check and written after it, so 60 wrong
-- passwords sent at once were all checked; here an attempt is counted by an upsert that locks the key's row and
-- adds its time only while the row holds fewer than the limit (store/postgres/cluster.ts), so of attempts racing
-- in any number of processes no more than the limit pass. `last` is the latest time, by which the rows whose window
-- has passed are deleted.
-- login_failures stays for the processes of the release before, which use it until they are upgraded (each release
-- then throttles on its own table); a later release can drop it.
CREATE TABLE login_attempts (
  key   text COLLATE "C" PRIMARY KEY,
  times bigint[] NOT NULL,
  last  bigint NOT NULL
);
CREATE INDEX login_attempts_by_last ON login_attempts (last);
