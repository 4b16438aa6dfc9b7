// A throwaway PostgreSQL server for the tests and benchmarks: initdb into a temporary directory and pg_ctl start
// on a free loopback port, with its socket in that directory. PostgreSQL refuses to run as root, so as root both
// run as the `postgres` user (runuser), which owns the directory. Debian's server binaries are found in
// /usr/lib/postgresql/<version>/bin (apt-get install postgresql), or set SENSORCLOUD_PG_BIN.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sleep } from './until.ts';

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:<port>/postgres: a superuser on the maintenance database (with its password, if set). */
  url: string;
  port: number;
  dataDir: string;
  /** The directory of its Unix socket (host=<socketDir> in a URL). */
  socketDir: string;
  /** Stops the server (fast shutdown) and removes its files. Synchronous, so it can run at process exit. */
  stop(): void;
  /** pg_ctl stop / start with the same data: what an outage looks like to the service. */
  pause(): void;
  resume(): void;
}

export function postgresBin(): string {
  if (process.env.SENSORCLOUD_PG_BIN) return process.env.SENSORCLOUD_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error('PostgreSQL server binaries not found: apt-get install -y postgresql (or set SENSORCLOUD_PG_BIN)');
  return join(root, versions[0]!, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface StartOptions {
  /** Durable commits (benchmarks). Tests run with fsync off: nothing they check depends on surviving a power cut. */
  durable?: boolean;
  /** TLS on, with this certificate and key (PEM); `required`: TCP connections without TLS are refused (hostssl). */
  tls?: { cert: string; key: string; required?: boolean };
  /**
   * The `postgres` user gets this password, and every connection, TCP or Unix socket, must give it (scram-sha-256,
   * PostgreSQL 15's default method); the URL carries it.
   */
  password?: string;
}

/** Starts a new server; stop() it when done (also registered for process exit). */
export async function startPostgresServer(options: StartOptions = {}): Promise<PostgresServer> {
  const bin = postgresBin();
  const root = mkdtempSync(join(tmpdir(), 'sensorcloud-pg-'));
  const asRoot = process.getuid?.() === 0;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  const owner: [number, number] | null = asRoot ? [id('-u'), id('-g')] : null;
  if (owner) chownSync(root, ...owner);
  const run = (tool: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { stdio: 'pipe' })
      : execFileSync(join(bin, tool), args, { stdio: 'pipe' });
  const dataDir = join(root, 'data');
  run('initdb', ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  // The server reads its key only if no one else may (mode 0600, its own user's): written into its data dir.
  const owned = (name: string, text: string) => {
    const file = join(dataDir, name);
    writeFileSync(file, text, { mode: 0o600 });
    if (owner) chownSync(file, ...owner);
    return file;
  };
  const tls = options.tls
    ? [
        '-c ssl=on',
        `-c ssl_cert_file=${owned('server.crt', options.tls.cert)}`,
        `-c ssl_key_file=${owned('server.key', options.tls.key)}`,
      ]
    : [];
  if (options.tls?.required) {
    const hba = join(dataDir, 'pg_hba.conf');
    owned('pg_hba.conf', readFileSync(hba, 'utf8').replace(/^host(\s)/gm, 'hostssl$1'));
  }
  const port = await freePort();
  const settings = [
    `-p ${port}`,
    `-k ${root}`,
    '-c listen_addresses=127.0.0.1',
    '-c max_connections=400',
    ...(options.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
    ...tls,
  ].join(' ');
  const start = () => run('pg_ctl', ['-D', dataDir, '-o', settings, '-l', join(root, 'server.log'), '-w', 'start']);
  start();
  if (options.password !== undefined) {
    // Set while the socket still trusts this user, then required of everyone.
    const admin = new pg.Client({ host: root, port, user: 'postgres', database: 'postgres' });
    await admin.connect();
    await admin
      .query(`ALTER ROLE postgres PASSWORD '${options.password.replaceAll("'", "''")}'`)
      .finally(() => admin.end());
    const hba = join(dataDir, 'pg_hba.conf');
    owned('pg_hba.conf', readFileSync(hba, 'utf8').replace(/^(?!#)(.*\s)trust$/gm, '$1scram-sha-256'));
    run('pg_ctl', ['-D', dataDir, 'reload']);
    // The server reloads the file when it handles the signal: wait until a connection without the password fails.
    for (let tries = 0; ; tries++) {
      const probe = new pg.Client({ host: root, port, user: 'postgres', database: 'postgres', password: undefined });
      const refused = await probe.connect().then(
        () => false,
        () => true,
      );
      await probe.end().catch(() => undefined);
      if (refused) break;
      if (tries === 100) throw new Error('the server still takes connections without a password');
      await sleep(50);
    }
  }
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // already stopped
    }
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', stop);
  return {
    url: `postgres://postgres${options.password !== undefined ? `:${encodeURIComponent(options.password)}` : ''}@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    socketDir: root,
    stop,
    pause: () => run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']),
    resume: start,
  };
}
