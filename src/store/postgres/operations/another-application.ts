// The start-up refusal of a database that holds another application's tables: told by the server check and by a
// first migration that meets one of them (store/operations/open.ts), which must not load the driver to word it.

/** A database that holds another application's tables, by what gave it away. */
export const anotherApplication = (sign: string): string =>
  `the database holds another application's tables (${sign}): give the service a database of its own (createdb --encoding=UTF8 --locale=C --template=template0 NAME) and point the URL at it`;
