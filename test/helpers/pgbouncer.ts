// A throwaway PgBouncer in front of a test PostgreSQL server (apt-get install pgbouncer): the pooler operators put
// between their processes and the database. It refuses to run as root, so as root it runs as the `postgres` user,
// which owns its temporary directory (config, pid file, log).
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './serve-process.ts';
import { sleep } from './until.ts';

const BIN = '/usr/sbin/pgbouncer';

export interface PgBouncerOptions {
  /** The server's port on 127.0.0.1 (trusting the `postgres` user there, as the test server does). */
  serverPort: number;
  /** The server's database the pooler's database of the same name leads to. */
  database: string;
  poolMode: 'session' | 'transaction';
  /**
   * Hand out the server connection used longest ago rather than the one used last (server_round_robin), with four
   * kept open (min_pool_size): two clients one after the other then get two different server sessions.
   */
  roundRobin?: boolean;
}

export interface PgBouncer {
  /** postgres://postgres@127.0.0.1:<its port>/<database>. */
  url: string;
  stop(): void;
}

export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  if (!existsSync(BIN)) throw new Error(`${BIN} not found: apt-get install -y pgbouncer`);
  const dir = mkdtempSync(join(tmpdir(), 'sensorcloud-pgbouncer-'));
  const asRoot = process.getuid?.() === 0;
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  const pidFile = join(dir, 'pgbouncer.pid');
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(
    ini,
    [
      '[databases]',
      `${options.database} = host=127.0.0.1 port=${options.serverPort} dbname=${options.database} user=postgres`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `pool_mode = ${options.poolMode}`,
      ...(options.roundRobin ? ['server_round_robin = 1', 'min_pool_size = 4'] : []),
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${pidFile}`,
      '',
    ].join('\n'),
  );
  if (asRoot) {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
    for (const path of [dir, ini, join(dir, 'users.txt')]) chownSync(path, id('-u'), id('-g'));
  }
  execFileSync(asRoot ? 'runuser' : BIN, asRoot ? ['-u', 'postgres', '--', BIN, '-d', ini] : ['-d', ini], {
    stdio: 'pipe',
  });
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM');
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  const url = `postgres://postgres@127.0.0.1:${port}/${options.database}`;
  // Daemonised: it listens once its pid file is written; a first statement through it says it is ready.
  for (let tries = 0; ; tries++) {
    const probe = new pg.Client({ connectionString: url });
    const ok = await probe
      .connect()
      .then(() => probe.query('SELECT 1'))
      .then(
        () => true,
        () => false,
      );
    await probe.end().catch(() => undefined);
    if (ok) break;
    if (tries === 100) {
      stop();
      throw new Error('PgBouncer did not answer within 5 s');
    }
    await sleep(50);
  }
  return { url, stop };
}
