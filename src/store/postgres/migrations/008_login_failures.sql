-- Failed password logins, shared by every process of a cluster (the login throttle, contract §2.5: 10 failures for
-- one email within 15 minutes refuse it until the window has passed). Kept per process, N processes behind a load
-- balancer allowed N times the attempts. A row per failure, by lower-cased email; rows leave the window and are
-- deleted by the next failure (store/postgres/cluster.ts).
CREATE TABLE login_failures (
  email text COLLATE "C" NOT NULL,
  at    bigint NOT NULL
);
CREATE INDEX login_failures_by_email ON login_failures (email, at);
CREATE INDEX login_failures_by_time ON login_failures (at);
