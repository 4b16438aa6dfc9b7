// pgpass (the password file reader node-postgres uses) ships no types: the one call made of it.
declare module 'pgpass' {
  function pgpass(
    connInfo: { host?: string; port?: number | string; database?: string; user?: string },
    cb: (password: string | undefined) => void,
  ): void;
  export default pgpass;
}
