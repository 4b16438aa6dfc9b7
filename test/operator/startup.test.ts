// The first start of an operator (issue 22): every start-up mistake is one line on stderr that says what is wrong
// and what to do, exit code 2, no stack trace, and leaves no credentials behind (the port is bound before the
// database, the master key and bootstrap.json are created); a start that succeeds writes a bootstrap.json that
// names the port it listens on, and announces itself in one JSON log line with its URLs.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createSqliteStore } from '../../src/store/sqlite/index.ts';
import { startPgBouncer } from '../helpers/pgbouncer.ts';
import { createTestDatabase, testPostgresUrl, withDatabase } from '../helpers/postgres.ts';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres-server.ts';
import { freePort, serve, spawnCli } from '../helpers/serve-process.ts';
import { testTls } from '../helpers/tls.ts';
import { cleanEnv, runCli, type Finished } from './cli-process.ts';
import { until } from '../helpers/until.ts';

const root = mkdtempSync(join(tmpdir(), 'sensorcloud-startup-'));
after(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const newDir = () => join(root, `d${++dirs}`);

/** A failed start: exit code 2 and exactly one line on stderr, without a stack trace; returns that line. */
function oneLine(result: Finished): string {
  assert.equal(result.code, 2, `exit code 2 expected: ${result.stdout}${result.stderr}`);
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `one line expected on stderr:\n${result.stderr}`);
  assert.doesNotMatch(result.stderr, /\n\s+at |Error:/, 'no stack trace');
  assert.match(lines[0]!, /^sensorcloud: /);
  return lines[0]!;
}

/** The test server's URL for another of its databases. */
const at = async (database: string): Promise<string> => withDatabase(await testPostgresUrl(), database);

/** Nothing but the lock file may be in a data dir after a failed start. */
function assertNoCredentials(dataDir: string): void {
  const left = readdirSync(dataDir).filter((name) => name !== 'sensorcloud.lock');
  assert.deepEqual(left, [], 'no database, master key or bootstrap.json after a failed start');
}

/** Starts `serve` and resolves with the parsed listening line (within 30 s). */
async function startAndAnnounce(
  env: Record<string, string>,
): Promise<{ line: Record<string, string>; stdout: () => string; stop(): Promise<void> }> {
  const child = spawnCli(['serve'], env);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  await until(
    'the service to start',
    () => {
      assert.equal(child.exitCode, null, `the service did not start: ${out}`);
      return /listening on/.test(out);
    },
    30_000,
  );
  const line = out.split('\n').find((l) => /listening on/.test(l))!;
  return {
    line: JSON.parse(line) as Record<string, string>,
    stdout: () => out,
    async stop() {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}

describe('happy', () => {
  it('on port 0, bootstrap.json names the port the server listens on, and the listening line is JSON with every URL', {
    timeout: 90_000,
  }, async () => {
    const dataDir = newDir();
    // LOG_LEVEL=error: the listening line is printed at every level.
    const server = await startAndAnnounce(cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, LOG_LEVEL: 'error' }));
    try {
      const { line } = server;
      assert.match(line.url!, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.notEqual(line.url, 'http://127.0.0.1:0');
      assert.match(line.msg!, new RegExp(`^Sensor Cloud listening on ${line.url}`));
      assert.equal(
        line.version,
        JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version,
        'the release',
      );
      assert.equal(line.database, join(dataDir, 'sensorcloud.db'), 'the database');
      for (const [field, path] of [
        ['console', '/'],
        ['api', '/v2'],
        ['health', '/healthz'],
        ['metrics', '/metrics'],
        ['openapi', '/v2/openapi.json'],
      ]) {
        assert.equal(line[field!], `${line.url}${path}`, field);
        assert.ok(line.msg!.includes(`${line.url}${path}`), `the message names ${field}`);
      }
      const boot = JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8'));
      assert.equal(boot.baseUrl, `${line.url}/v2`);
      assert.equal(boot.tokenUrl, `${line.url}/oauth2/token`);
      const health = await fetch(`${line.url}/healthz`);
      assert.equal(health.status, 200);
      assert.equal(await health.text(), '{"status":"ok"}\n', 'JSON bodies end with a newline');
      // The token audience follows the real port too: a Basic-authenticated call and the error help links agree.
      const missing = await fetch(`${line.url}/v2/projects/nope`, {
        headers: {
          authorization: `Basic ${Buffer.from(`${boot.serviceAccount.keyId}:${boot.serviceAccount.secret}`).toString('base64')}`,
        },
      });
      assert.equal(missing.status, 404);
      assert.equal(((await missing.json()) as { help: string }).help, `${line.url}/docs/errors#404`);
    } finally {
      await server.stop();
    }
    // Every line the service printed, shutdown included, is a JSON log line.
    for (const l of server
      .stdout()
      .split('\n')
      .filter((l) => l !== ''))
      assert.doesNotThrow(() => JSON.parse(l), l);
  });

  it('the listening line names the settings that change what is kept or trusted, and none with the defaults', {
    timeout: 90_000,
  }, async () => {
    const plain = await startAndAnnounce(cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: newDir(), LOG_LEVEL: 'error' }));
    await plain.stop();
    assert.deepEqual(plain.line.settings, []);
    assert.match(plain.line.msg!, /OpenAPI \S+$/);
    const tls = testTls();
    const server = await startAndAnnounce(
      cleanEnv({
        PORT: '0',
        SENSORCLOUD_DATA_DIR: newDir(),
        LOG_LEVEL: 'error',
        SENSORCLOUD_EVENT_RETENTION: '10m',
        SENSORCLOUD_DELIVERY_LOG_RETENTION: '7d',
        SENSORCLOUD_DELIVERY_LOG_MAX: '5000',
        SENSORCLOUD_CA_FILE: tls.caFile,
        SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS: '127.0.0.1/32',
      }),
    );
    await server.stop();
    for (const expected of [
      'event history kept 10m (SENSORCLOUD_EVENT_RETENTION; default 31d)',
      'delivery log kept 7d (SENSORCLOUD_DELIVERY_LOG_RETENTION; default 72h)',
      'delivery log keeps 5000 deliveries per connector (SENSORCLOUD_DELIVERY_LOG_MAX; default 100000)',
      `pushes also trust the CAs in ${tls.caFile} (SENSORCLOUD_CA_FILE)`,
      'pushes may reach the private addresses 127.0.0.1/32 (SENSORCLOUD_ALLOW_PRIVATE_ENDPOINTS)',
    ]) {
      assert.ok(server.line.msg!.includes(expected), `${expected} in ${server.line.msg}`);
    }
  });

  it('database files, master key, bootstrap.json and the lock are 0600, the data dir 0700, also for files made wider before', {
    timeout: 90_000,
  }, async () => {
    const dataDir = newDir();
    const port = await freePort();
    const env = cleanEnv({ PORT: String(port), SENSORCLOUD_DATA_DIR: dataDir, LOG_LEVEL: 'error' });
    let child = await serve(env);
    const modes = () => Object.fromEntries(readdirSync(dataDir).map((name) => [name, statMode(join(dataDir, name))]));
    const before = modes();
    for (const name of [
      'sensorcloud.db',
      'sensorcloud.db-wal',
      'sensorcloud.db-shm',
      'master.key',
      'bootstrap.json',
      'sensorcloud.lock',
    ]) {
      assert.equal(before[name], 0o600, `${name}: ${before[name]?.toString(8)}`);
    }
    assert.equal(statMode(dataDir), 0o700);
    child.kill('SIGTERM');
    await once(child, 'exit');
    // An installation from before this rule: its files readable by everyone. The next start narrows them.
    for (const name of readdirSync(dataDir)) chmodSync(join(dataDir, name), 0o644);
    child = await serve(env);
    try {
      for (const [name, mode] of Object.entries(modes())) assert.equal(mode, 0o600, name);
    } finally {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
});

function statMode(path: string): number {
  return statSync(path).mode & 0o777;
}

describe('sad', () => {
  it('a port in use: one line naming the port and PORT, exit 2, no credentials; the next start sets up the installation', {
    timeout: 90_000,
  }, async () => {
    const busy = createServer();
    busy.listen(0, '127.0.0.1');
    await once(busy, 'listening');
    const port = (busy.address() as { port: number }).port;
    const dataDir = newDir();
    try {
      const line = oneLine(await runCli(['serve'], cleanEnv({ PORT: String(port), SENSORCLOUD_DATA_DIR: dataDir })));
      assert.equal(
        line,
        `sensorcloud: port ${port} on 127.0.0.1 is already in use (another Sensor Cloud, or another program): stop that program, or choose another port with PORT`,
      );
      assertNoCredentials(dataDir);
      // The flag the operator typed is the one named.
      const flagged = oneLine(
        await runCli(['serve', '--port', String(port)], cleanEnv({ SENSORCLOUD_DATA_DIR: dataDir })),
      );
      assert.match(flagged, /choose another port with --port$/);
      assertNoCredentials(dataDir);
    } finally {
      busy.close();
    }
    const free = await freePort();
    const server = await startAndAnnounce(
      cleanEnv({ PORT: String(free), SENSORCLOUD_DATA_DIR: dataDir, LOG_LEVEL: 'error' }),
    );
    try {
      assert.equal(
        JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')).baseUrl,
        `http://127.0.0.1:${free}/v2`,
      );
    } finally {
      await server.stop();
    }
  });

  it('a host name that does not resolve, and an address of another machine: one line naming HOST, no credentials', {
    timeout: 90_000,
  }, async () => {
    const dataDir = newDir();
    const unknown = oneLine(
      await runCli(['serve'], cleanEnv({ PORT: '0', HOST: 'not-a-host', SENSORCLOUD_DATA_DIR: dataDir })),
    );
    assert.equal(
      unknown,
      'sensorcloud: the host name "not-a-host" does not resolve to an address: set HOST to an address such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface), or to a name this machine resolves',
    );
    assertNoCredentials(dataDir);
    // 192.0.2.1 is reserved for documentation (RFC 5737): no machine has it.
    const foreign = oneLine(
      await runCli(['serve', '--host', '192.0.2.1'], cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir })),
    );
    assert.equal(
      foreign,
      'sensorcloud: 192.0.2.1 is not an address of this machine: set --host to one of its addresses, 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)',
    );
    assertNoCredentials(dataDir);
  });

  it('a PostgreSQL database that cannot be used (missing, not writable by the user, read-only, no schema on the search path, no connection to spare, no server): one line naming the URL (its password hidden) and what to do, no credentials', {
    timeout: 90_000,
  }, async () => {
    const dataDir = newDir();
    const url = new URL(await testPostgresUrl());
    url.password = 'hunter2'; // the test server trusts local connections: a password is accepted, and must not be printed
    url.pathname = '/sc_no_such_db';
    const missing = oneLine(
      await runCli(
        ['serve'],
        cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: url.toString() }),
      ),
    );
    const shown = (u: URL) => new URL(u).toString().replace(':hunter2@', ':***@');
    assert.equal(
      missing,
      `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown(url)}: cannot use the database (3D000): the database does not exist: create it first (createdb --encoding=UTF8 --locale=C --template=template0 sc_no_such_db)`,
    );
    assertNoCredentials(dataDir);
    // A user that may not create tables (PostgreSQL 15: only the owner may in the public schema).
    const admin = new pg.Client({ connectionString: await testPostgresUrl() });
    await admin.connect();
    const limited = `sc_limited_${process.pid}`;
    try {
      await admin.query(`CREATE ROLE ${limited} LOGIN`);
      await admin.query(`CREATE DATABASE ${limited}`);
      const denied = new URL(url);
      denied.username = limited;
      denied.pathname = `/${limited}`;
      const line = oneLine(
        await runCli(
          ['serve'],
          cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: denied.toString() }),
        ),
      );
      assert.equal(
        line,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown(denied)}: cannot use the database (42501): the user may not create the schema's tables: make it the database's owner (ALTER DATABASE ${limited} OWNER TO ${limited}), or GRANT CREATE ON SCHEMA public TO ${limited}`,
      );
      assertNoCredentials(dataDir);
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${limited} WITH (FORCE)`);
      await admin.query(`DROP ROLE IF EXISTS ${limited}`);
      await admin.end();
    }
    // A server that accepts only reads: a standby, or (here) default_transaction_read_only set on the database; and
    // one with no connection to spare (here a user's CONNECTION LIMIT).
    const readOnly = `sc_read_only_${process.pid}`;
    const full = `sc_no_connections_${process.pid}`;
    const admin2 = new pg.Client({ connectionString: await testPostgresUrl() });
    await admin2.connect();
    try {
      await admin2.query(`CREATE DATABASE ${readOnly}`);
      await admin2.query(`ALTER DATABASE ${readOnly} SET default_transaction_read_only = on`);
      const standby = new URL(url);
      standby.pathname = `/${readOnly}`;
      const line = oneLine(
        await runCli(
          ['serve'],
          cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: standby.toString() }),
        ),
      );
      assert.equal(
        line,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown(standby)}: cannot use the database (25006): the server accepts only reads: it is a standby, or default_transaction_read_only is on for this database or user; point the URL at the primary, or turn the setting off`,
      );
      // A search_path naming only a schema that does not exist.
      await admin2.query(`ALTER DATABASE ${readOnly} RESET default_transaction_read_only`);
      await admin2.query(`ALTER DATABASE ${readOnly} SET search_path = '"$user"'`);
      const nowhere = oneLine(
        await runCli(
          ['serve'],
          cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: standby.toString() }),
        ),
      );
      assert.equal(
        nowhere,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown(standby)}: cannot use the database (3F000): the search_path of this user or database names no schema that exists (such as "$user" without a schema of that name): create one (CREATE SCHEMA postgres AUTHORIZATION postgres), or set a search_path that names one`,
      );
      await admin2.query(`CREATE ROLE ${full} LOGIN CONNECTION LIMIT 0`);
      const noRoom = new URL(standby);
      noRoom.username = full;
      const refused = oneLine(
        await runCli(
          ['serve'],
          cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: noRoom.toString() }),
        ),
      );
      assert.equal(
        refused,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown(noRoom)}: cannot use the database (53300): the server has no connection to spare (max_connections, or a CONNECTION LIMIT of this user or database): keep processes × (SENSORCLOUD_DATABASE_POOL_SIZE + 1) below it, or raise it`,
      );
      assertNoCredentials(dataDir);
    } finally {
      await admin2.query(`DROP DATABASE IF EXISTS ${readOnly} WITH (FORCE)`);
      await admin2.query(`DROP ROLE IF EXISTS ${full}`);
      await admin2.end();
    }
    url.port = String(await freePort());
    const closed = oneLine(
      await runCli(
        ['serve'],
        cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: url.toString() }),
      ),
    );
    assert.equal(
      closed,
      `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown(url)}: cannot use the database (ECONNREFUSED): nothing listens there: is PostgreSQL running, on that host and port?`,
    );
    assertNoCredentials(dataDir);
  });

  it("a PostgreSQL database that does not hold text as UTF-8, or lacks ICU's root collation: one line saying what to create, nothing made in it", {
    timeout: 90_000,
  }, async () => {
    // Before the check, a LATIN1 database refused a label in another script with a 400 naming the NUL character,
    // and on SQL_ASCII (initdb's choice under the C locale) every device search answered 500.
    const admin = new pg.Client({ connectionString: await testPostgresUrl() });
    await admin.connect();
    const made = ['SQL_ASCII', 'LATIN1'].map((encoding) => ({
      encoding,
      name: `sc_${encoding.toLowerCase()}_${process.pid}`,
    }));
    const noIcu = `sc_no_icu_${process.pid}`;
    try {
      for (const { encoding, name } of made)
        await admin.query(`CREATE DATABASE ${name} ENCODING '${encoding}' LOCALE 'C' TEMPLATE template0`);
      await admin.query(`CREATE DATABASE ${noIcu}`);
      // As a build without ICU would be: the collation gone from this database.
      const c = new pg.Client({ connectionString: await at(noIcu) });
      await c.connect();
      await c.query('DROP COLLATION pg_catalog."und-x-icu"').finally(() => c.end());
      for (const { encoding, name } of made) {
        const dataDir = newDir();
        const line = oneLine(
          await runCli(
            ['serve'],
            cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: await at(name) }),
          ),
        );
        assert.equal(
          line,
          `sensorcloud: SENSORCLOUD_DATABASE_URL ${await at(name)}: cannot use the database (ENCODING): the database ${name} holds text as ${encoding}, and the service keeps text in any script as UTF-8: create a UTF-8 database (createdb --encoding=UTF8 --locale=C --template=template0 NAME) and point the URL at it`,
        );
        assertNoCredentials(dataDir);
      }
      const line = oneLine(
        await runCli(
          ['serve'],
          cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: newDir(), SENSORCLOUD_DATABASE_URL: await at(noIcu) }),
        ),
      );
      assert.equal(
        line,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${await at(noIcu)}: cannot use the database (NO_ICU): the database ${noIcu} has no ICU root collation (und-x-icu), which the device search uses to lower-case text in any script: this PostgreSQL was built without ICU, or the collation was dropped; use a build with ICU (Debian's packages and the official container images have it)`,
      );
      // Checked before the migrations: no table in any of them.
      for (const name of [...made.map((m) => m.name), noIcu]) {
        const db = new pg.Client({ connectionString: await at(name) });
        await db.connect();
        const { rows } = await db
          .query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")
          .finally(() => db.end());
        assert.equal(rows[0]!.n, 0, name);
      }
    } finally {
      for (const name of [...made.map((m) => m.name), noIcu])
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  it("a database whose tables another user made: one line naming both users; a member of the owner's role starts", {
    timeout: 90_000,
  }, async () => {
    // Before the check, a start as the service's own user after a first start as another answered "permission
    // denied for table schema_migrations" with a hint to grant CREATE on the schema, which did not help.
    const admin = new pg.Client({ connectionString: await testPostgresUrl() });
    await admin.connect();
    const [owner, app, name] = ['sc_owner', 'sc_app', 'sc_owned'].map((n) => `${n}_${process.pid}`) as [
      string,
      string,
      string,
    ];
    const as = async (user: string) => {
      const u = new URL(await testPostgresUrl());
      u.username = user;
      u.pathname = `/${name}`;
      return u.toString();
    };
    const keyFile = join(root, 'owned-master.key');
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    const env = async (user: string) =>
      cleanEnv({
        PORT: '0',
        SENSORCLOUD_DATA_DIR: newDir(),
        SENSORCLOUD_MASTER_KEY_FILE: keyFile,
        SENSORCLOUD_DATABASE_URL: await as(user),
        LOG_LEVEL: 'error',
      });
    try {
      await admin.query(`CREATE ROLE ${owner} LOGIN`);
      await admin.query(`CREATE ROLE ${app} LOGIN`);
      await admin.query(`CREATE DATABASE ${name} OWNER ${owner}`);
      const first = await startAndAnnounce(await env(owner));
      await first.stop();
      // Even with every privilege on the tables: the next upgrade would fail.
      const db = new pg.Client({ connectionString: await as(owner) });
      await db.connect();
      await db.query(`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${app}`).finally(() => db.end());
      const line = oneLine(await runCli(['serve'], await env(app)));
      assert.equal(
        line,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${await as(app)}: cannot use the database (NOT_OWNER): the service's tables in this database belong to the user ${owner}, and this process connects as ${app}; its upgrades alter them, which only their owner may: connect as ${owner}, or make ${app} their owner (or a member of ${owner})`,
      );
      await admin.query(`GRANT ${owner} TO ${app}`);
      const member = await startAndAnnounce(await env(app));
      await member.stop();
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      for (const role of [app, owner]) await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  it("a database holding another application's tables: one line saying so, nothing made in it but the service's empty table of migrations", {
    timeout: 90_000,
  }, async () => {
    // Before the check, a Rails-like schema_migrations had the service say it was upgrading the schema, then fail
    // with "relation … already exists"; a table of the same name as one of the service's is told the same way.
    const admin = new pg.Client({ connectionString: await testPostgresUrl() });
    await admin.connect();
    const [rails, other] = ['sc_rails', 'sc_other'].map((n) => `${n}_${process.pid}`) as [string, string];
    const tables = async (name: string) => {
      const c = new pg.Client({ connectionString: await at(name) });
      await c.connect();
      const { rows } = await c
        .query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
        .finally(() => c.end());
      return rows.map((r) => r.name);
    };
    const theirs = "the database holds another application's tables";
    const ownDatabase =
      'give the service a database of its own (createdb --encoding=UTF8 --locale=C --template=template0 NAME) and point the URL at it';
    try {
      for (const [name, sql] of [
        [
          rails,
          "CREATE TABLE schema_migrations (version varchar PRIMARY KEY); INSERT INTO schema_migrations VALUES ('20230101120000'); CREATE TABLE users (id bigserial PRIMARY KEY)",
        ],
        [other, 'CREATE TABLE devices (id int)'],
      ] as const) {
        await admin.query(`CREATE DATABASE ${name}`);
        const c = new pg.Client({ connectionString: await at(name) });
        await c.connect();
        await c.query(sql).finally(() => c.end());
      }
      const start = async (name: string) =>
        oneLine(
          await runCli(
            ['serve'],
            cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: newDir(), SENSORCLOUD_DATABASE_URL: await at(name) }),
          ),
        );
      assert.equal(
        await start(rails),
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${await at(rails)}: cannot use the database (NOT_OURS): ${theirs} (its schema_migrations table is not the service's): ${ownDatabase}`,
      );
      assert.equal(
        await start(other),
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${await at(other)}: cannot use the database (42P07): ${theirs} (a table the service makes is there already: relation "devices" already exists): ${ownDatabase}`,
      );
      assert.deepEqual(await tables(rails), ['schema_migrations', 'users']);
      assert.deepEqual(
        await tables(other),
        ['devices', 'schema_migrations'],
        "the first migration rolled back; only the service's own table of migrations, empty",
      );
    } finally {
      for (const name of [rails, other]) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  it('configuration mistakes name the flag or variable typed, all in one line', { timeout: 90_000 }, async () => {
    const dataDir = newDir();
    const env = cleanEnv({ SENSORCLOUD_DATA_DIR: dataDir });
    assert.equal(
      oneLine(await runCli(['serve'], { ...env, PORT: '99999' })),
      'sensorcloud: invalid configuration: PORT must be a port number from 0 to 65535 (0 picks a free one), got "99999"',
    );
    assert.equal(
      oneLine(await runCli(['serve', '--port', 'abc'], { ...env, PORT: '8080' })),
      'sensorcloud: invalid configuration: --port must be a port number from 0 to 65535 (0 picks a free one), got "abc"',
    );
    assert.equal(
      oneLine(await runCli(['serve'], { ...env, PORT: '0', LOG_LEVEL: 'verbose' })),
      'sensorcloud: invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"',
    );
    assert.equal(
      oneLine(await runCli(['serve'], { ...env, PORT: 'x', LOG_LEVEL: 'loud', SENSORCLOUD_RATE_LIMIT: 'lots' })),
      'sensorcloud: invalid configuration: PORT must be a port number from 0 to 65535 (0 picks a free one), got "x"; SENSORCLOUD_RATE_LIMIT must be "<requests>/<seconds>s" (e.g. 100/5s) or "off", got "lots"; LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    );
    assert.ok(!existsSync(dataDir), 'a configuration mistake creates nothing, not even the data dir');
  });

  it('a duration without a unit is refused, for every duration setting, saying what to write', {
    timeout: 90_000,
  }, async () => {
    // SENSORCLOUD_EVENT_RETENTION=10 was once taken as 10 seconds: the service started and deleted the history.
    const dataDir = newDir();
    const env = cleanEnv({ SENSORCLOUD_DATA_DIR: dataDir, PORT: '0' });
    assert.equal(
      oneLine(await runCli(['serve'], { ...env, SENSORCLOUD_EVENT_RETENTION: '10' })),
      'sensorcloud: invalid configuration: SENSORCLOUD_EVENT_RETENTION=10 has no unit: write 10s, 10m, 10h or 10d',
    );
    assert.equal(
      oneLine(
        await runCli(['serve'], {
          ...env,
          SENSORCLOUD_HEARTBEAT_INTERVAL: '900',
          SENSORCLOUD_REQUEST_TIMEOUT: '30',
          SENSORCLOUD_DELIVERY_LEASE: '60',
          SENSORCLOUD_RATE_LIMIT: '100/5',
        }),
      ),
      'sensorcloud: invalid configuration: SENSORCLOUD_RATE_LIMIT=100/5 has no unit: write 100/5s; SENSORCLOUD_HEARTBEAT_INTERVAL=900 has no unit: write 900s, 900m, 900h or 900d; ' +
        'SENSORCLOUD_REQUEST_TIMEOUT=30 has no unit: write 30s, 30m, 30h or 30d; SENSORCLOUD_DELIVERY_LEASE=60 has no unit: write 60s, 60m, 60h or 60d',
    );
    assert.ok(!existsSync(dataDir), 'nothing was started');
  });

  it('a data dir that is a file: one line naming SENSORCLOUD_DATA_DIR', { timeout: 60_000 }, async () => {
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    assert.equal(
      oneLine(await runCli(['serve'], cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: file }))),
      `sensorcloud: the data dir ${file} is a file, not a directory: point SENSORCLOUD_DATA_DIR at a directory (it is created when missing)`,
    );
    assert.equal(
      oneLine(await runCli(['serve', '--data-dir', join(file, 'data')], cleanEnv({ PORT: '0' }))),
      `sensorcloud: cannot create the data dir ${join(file, 'data')} (a part of its path is a file): create it yourself, or point --data-dir at a writable directory`,
    );
  });

  it('a data dir a newer release upgraded (an upgrade undone): one line naming the migration and what to do, for serve and the admin commands; the database left as it was', {
    timeout: 60_000,
  }, async () => {
    const dataDir = newDir();
    const file = join(dataDir, 'sensorcloud.db');
    const store = createSqliteStore(file);
    store.db.raw.prepare('INSERT INTO schema_migrations (version, applied_time) VALUES (?, ?)').run(999, 1);
    await store.close();
    writeFileSync(join(dataDir, 'master.key'), randomBytes(32).toString('hex'), { mode: 0o600 });
    const refusal = `the database ${file} was upgraded by a newer release of Sensor Cloud (it has schema migration 999, which this release does not have): start that release again, or restore the backup of the data dir made before the upgrade`;
    assert.equal(
      oneLine(await runCli(['serve'], cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir }))),
      `sensorcloud: ${refusal}`,
    );
    const admin = await runCli(['admin', 'create-key', '--data-dir', dataDir], cleanEnv({}));
    assert.equal(admin.code, 2, admin.stderr);
    assert.equal(admin.stderr.trim(), `error: ${refusal}`);
    assert.ok(!existsSync(join(dataDir, 'bootstrap.json')), 'nothing bootstrapped');
    const db = new Database(file, { readonly: true });
    try {
      assert.deepEqual(db.prepare('SELECT count(*) AS n FROM organizations').get(), { n: 0 }, 'nothing bootstrapped');
      assert.equal((db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number }).v, 999);
    } finally {
      db.close();
    }
  });

  describe('a data dir this user cannot write', () => {
    // root may write every directory: as root, the service runs as nobody against directories root owns.
    const asRoot = process.getuid?.() === 0;
    const uid = asRoot ? 65534 : undefined;
    const lockedDir = (): string => {
      chmodSync(root, 0o755);
      const dir = newDir();
      mkdirSync(dir, { mode: 0o755 });
      if (!asRoot) chmodSync(dir, 0o555);
      return dir;
    };

    it('missing, in a folder it cannot write (EACCES): one line, exit 2', { timeout: 60_000 }, async () => {
      const dataDir = join(lockedDir(), 'data');
      assert.equal(
        oneLine(await runCli(['serve'], cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir }), { uid })),
        `sensorcloud: cannot create the data dir ${dataDir} (permission denied): create it yourself, or point SENSORCLOUD_DATA_DIR at a writable directory`,
      );
    });

    it('present but not writable (SQLite would say "unable to open database file"): one line, exit 2, nothing written', {
      timeout: 60_000,
    }, async () => {
      const dataDir = lockedDir();
      assert.equal(
        oneLine(await runCli(['serve'], cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir }), { uid })),
        `sensorcloud: the data dir ${dataDir} is not usable by this user (permission denied): make it writable for this user, or point SENSORCLOUD_DATA_DIR at another directory`,
      );
      assert.deepEqual(readdirSync(dataDir), []);
    });
  });
});

describe('PostgreSQL over TLS, and on its Unix socket', () => {
  // A server that takes TCP connections over TLS only (hostssl), with a certificate the test CA signed for
  // 127.0.0.1 and localhost; its Unix socket takes connections without TLS, as PostgreSQL's do.
  const tls = testTls();
  let server: PostgresServer;
  // The processes of this block share one database, so they share its master key.
  const keyFile = join(root, 'tls-block-master.key');
  before(async () => {
    server = await startPostgresServer({ tls: { ...tls.server, required: true } });
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
  });
  const env = (extra: Record<string, string>) =>
    cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: newDir(), SENSORCLOUD_MASTER_KEY_FILE: keyFile, ...extra });
  after(() => server?.stop());
  const tcp = (query: string) => `postgres://postgres:hunter2@127.0.0.1:${server.port}/postgres?${query}`;
  const socket = (dir: string, query = '', database = 'postgres') =>
    `postgres://postgres@/${database}?host=${dir}&port=${server.port}${query}`;
  const failedStart = async (url: string) => oneLine(await runCli(['serve'], env({ SENSORCLOUD_DATABASE_URL: url })));
  const prefix = (shown: string) => `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown}: cannot use the database`;

  it('verified TLS (sslmode=verify-full with sslrootcert): starts, and every connection of the process is encrypted', {
    timeout: 90_000,
  }, async () => {
    const service = await startAndAnnounce(
      env({ LOG_LEVEL: 'error', SENSORCLOUD_DATABASE_URL: tcp(`sslmode=verify-full&sslrootcert=${tls.caFile}`) }),
    );
    const admin = new pg.Client({ connectionString: socket(server.socketDir) });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ n: number; encrypted: number }>(
        "SELECT count(*)::int AS n, count(*) FILTER (WHERE s.ssl)::int AS encrypted FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'sensorcloud'",
      );
      assert.ok(rows[0]!.n >= 2, `the pool's and the cluster's connections: ${rows[0]!.n}`);
      assert.equal(rows[0]!.encrypted, rows[0]!.n);
    } finally {
      await admin.end();
      await service.stop();
    }
  });

  it('TLS mistakes: one line each, naming what to add to the URL, the password hidden wherever the URL holds it', {
    timeout: 120_000,
  }, async () => {
    const hidden = 'postgres://postgres:***@127.0.0.1';
    assert.equal(
      await failedStart(tcp('connect_timeout=10')),
      `${prefix(`${hidden}:${server.port}/postgres?connect_timeout=10`)} (28000): the server accepts this user over TLS only: add sslmode=verify-full&sslrootcert=<the CA certificate that signed the server's> to the URL`,
    );
    // require checks the certificate too (node-postgres), and says so without a warning of its own on stderr.
    for (const mode of ['verify-full', 'require']) {
      assert.equal(
        await failedStart(tcp(`sslmode=${mode}&sslpassword=secret`)),
        `${prefix(`${hidden}:${server.port}/postgres?sslmode=${mode}&sslpassword=***`)} (UNABLE_TO_VERIFY_LEAF_SIGNATURE): the server's TLS certificate is not signed by a CA this process trusts: name that CA's certificate with sslrootcert=/path/ca.pem in the URL (sslmode=require checks it too with this driver), or use sslmode=no-verify to encrypt without checking who answers`,
      );
    }
    const missing = join(root, 'no-such-ca.pem');
    assert.equal(
      await failedStart(tcp(`sslmode=verify-full&sslrootcert=${missing}`)),
      `${prefix(`${hidden}:${server.port}/postgres?sslmode=verify-full&sslrootcert=${missing}`)} (ENOENT): cannot read ${missing}, named in the URL (sslrootcert, sslcert or sslkey)`,
    );
    assert.equal(
      await failedStart(tcp(`sslmode=verify-full&sslrootcert=${root}`)),
      `${prefix(`${hidden}:${server.port}/postgres?sslmode=verify-full&sslrootcert=${root}`)} (EISDIR): cannot read a directory as a file, named in the URL (sslrootcert, sslcert or sslkey)`,
    );
    assert.equal(
      await failedStart(socket(server.socketDir, `&sslmode=verify-full&sslrootcert=${tls.caFile}&password=hunter2`)),
      `${prefix(`postgres://postgres@/postgres?host=${server.socketDir}&port=${server.port}&sslmode=verify-full&sslrootcert=${tls.caFile}&password=***`)} (error): the server has TLS off (ssl = off in postgresql.conf), or the URL names its Unix socket, which never uses TLS: turn ssl on, or remove sslmode from the URL`,
    );
  });

  it('a certificate for another host name, or one that has expired: one line each', { timeout: 120_000 }, async () => {
    // Servers of their own, each with one of those certificates, signed by the CA the URL names.
    for (const [pair, line] of [
      [
        tls.wrongHost,
        "(ERR_TLS_CERT_ALTNAME_INVALID): the server's TLS certificate is not for this host name: connect by a name the certificate lists",
      ],
      [tls.expired, "(CERT_HAS_EXPIRED): the server's TLS certificate has expired"],
    ] as const) {
      const other = await startPostgresServer({ tls: { ...pair, required: true } });
      try {
        const url = `postgres://postgres:hunter2@127.0.0.1:${other.port}/postgres?sslmode=verify-full&sslrootcert=${tls.caFile}`;
        assert.equal(await failedStart(url), `${prefix(url.replace(':hunter2@', ':***@'))} ${line}`);
      } finally {
        other.stop();
      }
    }
  });

  it("a Unix socket in libpq's form: a wrong directory is one line; the right one starts, and an outage answers 503, then heals", {
    timeout: 120_000,
  }, async () => {
    const nowhere = join(root, 'no-socket-here');
    assert.equal(
      await failedStart(socket(nowhere)),
      `${prefix(socket(nowhere))} (ENOENT): no PostgreSQL socket there: is PostgreSQL running, is host= the directory of its socket (such as /var/run/postgresql), and is the port its port?`,
    );
    // A database of its own: its first process writes bootstrap.json.
    const admin = new pg.Client({ connectionString: socket(server.socketDir) });
    await admin.connect();
    await admin.query('CREATE DATABASE sc_socket');
    await admin.end();
    const settings = env({ LOG_LEVEL: 'error', SENSORCLOUD_DATABASE_URL: socket(server.socketDir, '', 'sc_socket') });
    const service = await startAndAnnounce(settings);
    try {
      const base = service.line.url!;
      const { project, serviceAccount } = JSON.parse(
        readFileSync(join(settings.SENSORCLOUD_DATA_DIR!, 'bootstrap.json'), 'utf8'),
      );
      const auth = `Basic ${Buffer.from(`${serviceAccount.keyId}:${serviceAccount.secret}`).toString('base64')}`;
      const create = () =>
        fetch(`${base}/v2/${project}/devices`, {
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/json' },
          body: '{"type":"touch"}',
        });
      assert.equal((await create()).status, 200);
      // Stopped, the server removes its socket file: a connection attempt fails with ENOENT, which is an outage (503
      // to the client), not a fault of the request (500).
      server.pause();
      try {
        assert.equal((await fetch(`${base}/healthz`)).status, 503);
        const refused = await create();
        assert.equal(refused.status, 503, await refused.text());
      } finally {
        server.resume();
      }
      await until(
        '/healthz to recover after the restart',
        async () => (await fetch(`${base}/healthz`)).status === 200,
        { timeoutMs: 30_000, everyMs: 100 },
      );
      assert.equal((await create()).status, 200);
    } finally {
      await service.stop();
    }
  });
});

describe('PostgreSQL behind a pooler (PgBouncer)', () => {
  // Operators put PgBouncer in front of PostgreSQL, and hosted databases give a pooled address beside the direct one.
  // In transaction mode the service's statements go to whichever server session is free: before the start-up
  // check, it started and then failed at random ("prepared statement … already exists"). Session mode is fine.
  const notOneSession =
    "a pooler in transaction or statement mode is between this process and PostgreSQL (such as PgBouncer with pool_mode = transaction, or a hosted database's pooled address). The service keeps state in each session (prepared statements, LISTEN, advisory locks): connect to PostgreSQL directly, or through a pooler in session mode";

  it('in transaction mode: one line saying so and what to do, with nothing made in the database; in session mode it starts', {
    timeout: 90_000,
  }, async () => {
    const db = await createTestDatabase();
    const target = { serverPort: Number(new URL(db.url).port), database: new URL(db.url).pathname.slice(1) };
    const bouncers = [
      await startPgBouncer({ ...target, poolMode: 'transaction' }),
      await startPgBouncer({ ...target, poolMode: 'transaction', roundRobin: true }),
      await startPgBouncer({ ...target, poolMode: 'session' }),
    ];
    const [transaction, rotating, session] = bouncers as [
      (typeof bouncers)[0],
      (typeof bouncers)[0],
      (typeof bouncers)[0],
    ];
    const start = (url: string, dataDir = newDir()) =>
      runCli(['serve'], cleanEnv({ PORT: '0', SENSORCLOUD_DATA_DIR: dataDir, SENSORCLOUD_DATABASE_URL: url }));
    try {
      // The server session a client's statement ran on is handed to the next client (PgBouncer's default).
      const dataDir = newDir();
      const shared = oneLine(await start(transaction.url, dataDir));
      assert.equal(
        shared,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${transaction.url}: cannot use the database (SESSION_NOT_KEPT): two connections of this process were served by one PostgreSQL session: ${notOneSession}`,
      );
      assertNoCredentials(dataDir);
      // Server sessions handed out in turn, four of them open: the two connections get two, and the notification
      // goes to a session no client listens on. Refused after the connect timeout.
      await Promise.all(
        [0, 1, 2, 3].map(async () => {
          const c = new pg.Client({ connectionString: rotating.url });
          await c.connect();
          await c.query('SELECT pg_sleep(0.2)').finally(() => c.end());
        }),
      );
      const lost = oneLine(await start(`${rotating.url}?connect_timeout=2`));
      assert.equal(
        lost,
        `sensorcloud: SENSORCLOUD_DATABASE_URL ${rotating.url}?connect_timeout=2: cannot use the database (SESSION_NOT_KEPT): a notification this process sent did not reach its own listening connection within 2 s: ${notOneSession}`,
      );
      // Checked before the migration lock is taken: no schema, and no lock left with a server session (of this
      // database's: the other test files' processes hold theirs on the same server).
      const direct = new pg.Client({ connectionString: db.url });
      await direct.connect();
      try {
        const { rows } = await direct.query<{ tables: number; locks: number }>(
          "SELECT (SELECT count(*)::int FROM pg_tables WHERE schemaname = 'public') AS tables, (SELECT count(*)::int FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = current_database()) AS locks",
        );
        assert.deepEqual(rows[0], { tables: 0, locks: 0 });
      } finally {
        await direct.end();
      }
      const service = await startAndAnnounce(
        cleanEnv({
          PORT: '0',
          SENSORCLOUD_DATA_DIR: newDir(),
          SENSORCLOUD_DATABASE_URL: session.url,
          LOG_LEVEL: 'warn',
        }),
      );
      try {
        assert.equal((await fetch(service.line.health!)).status, 200);
        assert.doesNotMatch(service.stdout().replace(/.*listening on.*\n/, ''), /\S/, 'no warning in session mode');
      } finally {
        await service.stop();
      }
    } finally {
      for (const b of bouncers) b.stop();
      await db.drop();
    }
  });
});

describe('PostgreSQL that asks for a password', () => {
  // Every connection to this server, TCP or Unix socket, must give the password (scram-sha-256); the password has
  // characters a URL percent-encodes and a password file escapes.
  const password = 'pa:ss@w\\rd';
  let server: PostgresServer;
  const keyFile = join(root, 'password-block-master.key');
  const home = join(root, 'password-home'); // without a .pgpass of its own, unless a test writes one
  before(async () => {
    server = await startPostgresServer({ password });
    writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
    mkdirSync(home);
  });
  after(() => server?.stop());
  const env = (extra: Record<string, string>) => {
    const e = cleanEnv({
      PORT: '0',
      SENSORCLOUD_DATA_DIR: newDir(),
      SENSORCLOUD_MASTER_KEY_FILE: keyFile,
      LOG_LEVEL: 'error',
      HOME: home,
    });
    delete e.PGPASSWORD;
    delete e.PGPASSFILE;
    return { ...e, ...extra };
  };
  const withoutPassword = () => `postgres://postgres@127.0.0.1:${server.port}/postgres`;
  const socket = () => `postgres://postgres@/postgres?host=${server.socketDir}&port=${server.port}`;
  const escaped = password.replace(/[:\\]/g, '\\$&');
  let files = 0;
  const passFile = (line: string, mode = 0o600): string => {
    const file = join(root, `pgpass-${++files}`);
    writeFileSync(file, `# host:port:database:user:password\n${line}\n`, { mode });
    chmodSync(file, mode);
    return file;
  };
  const prefix = (shown: string) => `sensorcloud: SENSORCLOUD_DATABASE_URL ${shown}: cannot use the database`;
  const noneFound =
    'the server asks for a password and none was found: put it in the URL (postgres://user:password@host/…), in PGPASSWORD, or in the password file (~/.pgpass, or the file PGPASSFILE names; mode 0600)';

  it('the password from the URL, PGPASSWORD or the password file (TCP, and the socket by its localhost line): starts, and prints no warning', {
    timeout: 120_000,
  }, async () => {
    const starts: Array<[string, Record<string, string>]> = [
      ['the URL', { SENSORCLOUD_DATABASE_URL: server.url }],
      ['PGPASSWORD', { SENSORCLOUD_DATABASE_URL: withoutPassword(), PGPASSWORD: password }],
      [
        'PGPASSFILE',
        {
          SENSORCLOUD_DATABASE_URL: withoutPassword(),
          PGPASSFILE: passFile(`127.0.0.1:${server.port}:postgres:postgres:${escaped}`),
        },
      ],
      [
        'PGPASSFILE, the socket',
        { SENSORCLOUD_DATABASE_URL: socket(), PGPASSFILE: passFile(`localhost:*:*:postgres:${escaped}`) },
      ],
    ];
    for (const [source, extra] of starts) {
      const service = await startAndAnnounce(env(extra));
      try {
        const health = await fetch(`${service.line.url}/healthz`);
        assert.equal(health.status, 200, source);
        // The listening line names the database, never with its password.
        assert.equal(service.line.database, extra.SENSORCLOUD_DATABASE_URL!.replace(/:[^:@/]+@/, ':***@'), source);
      } finally {
        await service.stop();
      }
      // node-postgres's own reading of the file would print a DeprecationWarning here.
      const others = service
        .stdout()
        .split('\n')
        .filter((l) => l !== '' && !/listening on/.test(l));
      assert.deepEqual(others, [], `${source}: nothing else printed`);
    }
    // ~/.pgpass, when PGPASSFILE names no other file.
    writeFileSync(join(home, '.pgpass'), `*:*:*:postgres:${escaped}\n`, { mode: 0o600 });
    try {
      const service = await startAndAnnounce(env({ SENSORCLOUD_DATABASE_URL: withoutPassword() }));
      await service.stop();
    } finally {
      rmSync(join(home, '.pgpass'));
    }
  });

  it('a wrong or missing password, or a password file others may read: one line saying so, the password hidden', {
    timeout: 120_000,
  }, async () => {
    const wrong = new URL(server.url);
    wrong.password = 'not-it';
    assert.equal(
      oneLine(await runCli(['serve'], env({ SENSORCLOUD_DATABASE_URL: wrong.toString() }))),
      `${prefix(`postgres://postgres:***@127.0.0.1:${server.port}/postgres`)} (28P01): the password was refused`,
    );
    assert.equal(
      oneLine(await runCli(['serve'], env({ SENSORCLOUD_DATABASE_URL: withoutPassword() }))),
      `${prefix(withoutPassword())} (error): ${noneFound}`,
    );
    // As libpq does: ignored, with its warning.
    const open = passFile(`*:*:*:postgres:${escaped}`, 0o644);
    const result = await runCli(['serve'], env({ SENSORCLOUD_DATABASE_URL: withoutPassword(), PGPASSFILE: open }));
    assert.equal(result.code, 2);
    // (pgpass ends its warning with a space.)
    assert.deepEqual(
      result.stderr
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.trimEnd()),
      [
        `WARNING: password file "${open}" has group or world access; permissions should be u=rw (0600) or less`,
        `${prefix(withoutPassword())} (error): ${noneFound}`,
      ],
    );
  });
});
