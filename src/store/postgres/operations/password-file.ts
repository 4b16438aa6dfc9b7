// The password of a connection whose URL names none, found as PostgreSQL's own tools (libpq) find it: PGPASSWORD
// first (node-postgres reads it before asking here), then the password file, ~/.pgpass or the file PGPASSFILE
// names, read only when no one but its owner may read it (mode 0600; otherwise it is ignored, with libpq's warning on
// stderr). node-postgres 8 reads that file itself too, but prints a deprecation warning at the first password it
// finds there (its support goes in pg 9), so the service asks pgpass, the reader it uses, itself.
import pg from 'pg';
import pgpass from 'pgpass';

/** The file's password for this host, port, database and user, or undefined. */
function passwordFromFile(params: {
  host?: string;
  port?: number;
  database?: string;
  user?: string;
}): Promise<string | undefined> {
  // A socket's directory matches the file's `localhost` lines, as in libpq.
  const host = params.host?.startsWith('/') ? 'localhost' : params.host;
  return new Promise((resolve) => pgpass({ ...params, host }, resolve));
}

/**
 * Every connection of this process whose URL names no password, and no PGPASSWORD, asks passwordFromFile when the
 * server asks for one (node-postgres's default password, which it takes after the URL and PGPASSWORD).
 */
export function usePasswordFile(): void {
  pg.defaults.password = passwordFromFile as unknown as () => Promise<string>;
}
