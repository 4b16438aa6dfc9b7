// What `sensorcloud admin …` runs (admin.ts defines the commands): open the data dir as the server would, holding
// its lock so that no server runs meanwhile (on PostgreSQL, the database: servers may run), run one recovery use
// case, print the result once.
import type { Command } from 'commander';
import { chmodSync, copyFileSync, existsSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { MASTER_KEY_CHECK, readMasterKey } from '../auth/master-key.ts';
import { createSecretBox } from '../auth/secret-box.ts';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { ApiError } from '../domain/errors.ts';
import { systemClock } from '../runtime/clock.ts';
import { createIdGenerator } from '../runtime/ids.ts';
import { systemRandom } from '../runtime/random.ts';
import { StartupError } from '../runtime/startup-error.ts';
import { createRecoveryKey, resealSecrets, resetPassword, type RecoveryDeps } from '../services/admin-recovery.ts';
import { lockDataDir } from '../store/operations/data-dir.ts';
import { openConfiguredStore } from '../store/operations/open.ts';
import { createSqliteStore } from '../store/sqlite/index.ts';
import type { Store } from '../store/contract/store.ts';
import { UsageError } from './errors.ts';
import { Output } from './output.ts';
import { createPrompter } from './prompt.ts';

/** Where the installation is (the admin commands' options). */
export interface AdminOptions {
  dataDir?: string;
  databaseUrl?: string;
}

/**
 * Runs `fn` on the installation's store, the data dir locked; the operator's mistakes become usage errors (exit 2).
 * `alone`: on PostgreSQL too, refuse while a serve process is connected to the database.
 */
async function withInstallation<T>(
  options: AdminOptions,
  fn: (deps: RecoveryDeps) => Promise<T>,
  alone = false,
): Promise<T> {
  try {
    const config = loadConfig(process.env, { dataDir: options.dataDir, databaseUrl: options.databaseUrl });
    const { dataDir } = config;
    if (config.databaseUrl !== null) {
      // PostgreSQL: the servers may keep running (each change is one transaction); the cluster's key is needed.
      if (!existsSync(config.masterKeyFile)) {
        throw new UsageError(
          `no master key at ${config.masterKeyFile}: set SENSORCLOUD_MASTER_KEY_FILE to the cluster's key`,
        );
      }
      const store = await openConfiguredStore(config, undefined, 'sensorcloud-admin');
      const sessions = alone
        ? await store.cluster!.serviceSessions().catch(async (err: unknown) => {
            await store.close();
            throw err;
          })
        : 0;
      if (sessions > 0) {
        await store.close();
        throw new UsageError(
          `serve processes are connected to the database (${sessions} connections): stop every one of them first`,
        );
      }
      return await withStore(config, store, fn);
    }
    const database = join(dataDir, 'sensorcloud.db');
    // Nothing is created here: a wrong --data-dir must not leave an empty installation behind.
    if (!existsSync(database) || !existsSync(config.masterKeyFile)) {
      throw new UsageError(
        `no Sensor Cloud installation in ${dataDir} (no sensorcloud.db and master.key): point ${config.sources.dataDir} at its data dir`,
      );
    }
    const lock = lockDataDir(dataDir, config.sources.dataDir);
    try {
      return await withStore(config, createSqliteStore(database), fn);
    } finally {
      lock.release();
    }
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StartupError || err instanceof ApiError)
      throw new UsageError(err.message);
    throw err;
  }
}

async function withStore<T>(config: Config, store: Store, fn: (deps: RecoveryDeps) => Promise<T>): Promise<T> {
  try {
    return await fn({
      config,
      store,
      clock: systemClock,
      random: systemRandom,
      ids: createIdGenerator(systemClock, systemRandom),
      secretBox: createSecretBox(readMasterKey(config.masterKeyFile), systemRandom),
    });
  } finally {
    await store.close();
  }
}

export async function runResetPassword(
  email: string,
  options: AdminOptions & { passwordStdin?: boolean },
  command: Command,
): Promise<void> {
  const out = new Output(command.optsWithGlobals());
  let chosen: string | undefined;
  if (options.passwordStdin) {
    const prompter = createPrompter();
    try {
      chosen = await prompter.ask('new password', { secret: true });
    } finally {
      prompter.close();
    }
  }
  const result = await withInstallation(options, (deps) => resetPassword(deps, email, chosen));
  if (chosen !== undefined) {
    out.done({ email: result.email }, `New password set for ${result.email}.`);
  } else {
    out.record(
      result,
      [
        ['email', result.email],
        ['password', result.password],
      ],
      result.password,
    );
    out.warn('the password is shown only this once: give it to its user now');
  }
  out.note('Console sessions signed in before stay valid until their token expires (at most an hour).');
}

export async function runCreateKey(
  options: AdminOptions & { serviceAccount?: string },
  command: Command,
): Promise<void> {
  const out = new Output(command.optsWithGlobals());
  const key = await withInstallation(options, (deps) => createRecoveryKey(deps, options.serviceAccount));
  if (out.quiet) out.line(`${key.keyId}\t${key.secret}`);
  else
    out.record(
      key,
      [
        ['name', key.name],
        ['keyId', key.keyId],
        ['secret', key.secret],
        ['serviceAccount', key.email],
      ],
      key.name,
    );
  out.warn('the secret is shown only this once: store it now (it cannot be read again, only replaced by a new key)');
}

export async function runRotateMasterKey(
  options: AdminOptions & { newKeyFile: string },
  command: Command,
): Promise<void> {
  const out = new Output(command.optsWithGlobals());
  let next: Buffer;
  try {
    next = readMasterKey(options.newKeyFile);
  } catch (err) {
    const why =
      (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : 'does not hold a key of 64 hex characters';
    throw new UsageError(
      `--new-key-file ${options.newKeyFile} ${why}: make one with: openssl rand -hex 32 > ${options.newKeyFile}`,
    );
  }
  const keyFile = { current: '', previous: '' };
  const done = await withInstallation(
    options,
    async (deps) => {
      keyFile.current = deps.config.masterKeyFile;
      keyFile.previous = `${keyFile.current}.previous`;
      if (readMasterKey(keyFile.current).equals(next))
        throw new UsageError(`${options.newKeyFile} holds the key already in use (${keyFile.current}): make a new one`);
      const resealed = await resealSecrets(deps, createSecretBox(next, systemRandom));
      // Committed: the secrets are sealed under the new key from here on. Installed where every start reads it while
      // the data dir is still locked, so that no server starts in between with the old one.
      try {
        copyFileSync(keyFile.current, keyFile.previous);
        chmodSync(keyFile.previous, 0o600);
        const staged = join(dirname(keyFile.current), `.master-key-${process.pid}`);
        writeFileSync(staged, next.toString('hex') + '\n', { mode: 0o600 });
        renameSync(staged, keyFile.current);
      } catch (err) {
        throw new UsageError(
          `the secrets are now sealed under the key in ${options.newKeyFile}, but it could not be written to ${keyFile.current} (${(err as Error).message}): copy it there yourself before starting the service`,
        );
      }
      return resealed;
    },
    true,
  );
  out.done(
    done,
    `Sealed again under the new key: ${done.keys} key secrets, ${done.connectors} signature secrets${done.settings ? ", the cluster's master key check" : ''}. ${keyFile.current} now holds the new key; the old one is in ${keyFile.previous}.`,
  );
  out.note(
    `Delete ${keyFile.previous} and ${options.newKeyFile} once the service has started with the new key. On PostgreSQL, copy ${keyFile.current} to every machine first: a process with the old key refuses to start.`,
  );
  out.note(
    'Access tokens and console sessions issued before were signed with the old key: their clients sign in or exchange again (they get a 401).',
  );
}

const count = (n: number) => n.toLocaleString('en-US');

export async function runCopyToPostgres(options: AdminOptions, command: Command): Promise<void> {
  const out = new Output(command.optsWithGlobals());
  let config: Config;
  try {
    config = loadConfig(process.env, { dataDir: options.dataDir, databaseUrl: options.databaseUrl });
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const url = config.databaseUrl;
  if (url === null)
    throw new UsageError(
      'name the new PostgreSQL database to copy into with --database-url postgres://… (or SENSORCLOUD_DATABASE_URL)',
    );
  const database = join(config.dataDir, 'sensorcloud.db');
  if (!existsSync(database) || !existsSync(config.masterKeyFile)) {
    throw new UsageError(
      `no Sensor Cloud installation in ${config.dataDir} (no sensorcloud.db and master.key): point ${config.sources.dataDir} at its data dir`,
    );
  }
  const { CopyRefused, copySqliteToPostgres } = await import('../store/postgres/operations/copy-from-sqlite.ts');
  let copied: Record<string, number>;
  try {
    const lock = lockDataDir(config.dataDir, config.sources.dataDir);
    try {
      // The file brought to this release's schema first, as a start would (a data dir of an older release).
      await createSqliteStore(database).close();
      const box = createSecretBox(readMasterKey(config.masterKeyFile), systemRandom);
      let before = 0;
      copied = await copySqliteToPostgres(database, url, {
        keyCheck: box.seal(MASTER_KEY_CHECK),
        progress: (table, n, total) => {
          // A line per table, and one every 100,000 rows of a long one (the event history).
          if (n === total) out.note(`${table}: ${count(n)} rows`);
          else if (Math.floor(n / 100_000) > Math.floor(before / 100_000))
            out.note(`${table}: ${count(n)} of ${count(total)} rows`);
          before = n === total ? 0 : n;
        },
      });
    } finally {
      lock.release();
    }
  } catch (err) {
    if (err instanceof CopyRefused || err instanceof StartupError || err instanceof ApiError)
      throw new UsageError(err.message);
    throw err;
  }
  const rows = Object.values(copied).reduce((a, b) => a + b, 0);
  const of = (table: string) => count(copied[table] ?? 0);
  out.done(
    copied,
    `Copied ${count(rows)} rows into the PostgreSQL database, in one transaction: ${of('organizations')} organizations, ${of('devices')} devices, ${of('events')} events, ${of('data_connectors')} data connectors, ${of('deliveries')} queued pushes.`,
  );
  out.note(
    `Start the cluster's processes with SENSORCLOUD_DATABASE_URL naming it and SENSORCLOUD_MASTER_KEY_FILE holding a copy of ${config.masterKeyFile}: every secret is sealed under that key, and a process given another refuses to start.`,
  );
  out.note(
    `The SQLite installation in ${config.dataDir} is left as it was: do not start it again once the cluster serves, or both would push its queue.`,
  );
}
