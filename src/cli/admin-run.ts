// What `sensorcloud admin …` runs (admin.ts defines the commands): open the data dir as the server would, holding
// its lock so that no server runs meanwhile (on PostgreSQL, the database: servers may run), run one recovery use
// case, print the result once.
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readMasterKey } from '../auth/master-key.ts';
import { createSecretBox } from '../auth/secret-box.ts';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { ApiError } from '../domain/errors.ts';
import { systemClock } from '../runtime/clock.ts';
import { createIdGenerator } from '../runtime/ids.ts';
import { systemRandom } from '../runtime/random.ts';
import { StartupError } from '../runtime/startup-error.ts';
import { createRecoveryKey, resetPassword, type RecoveryDeps } from '../services/admin-recovery.ts';
import { lockDataDir } from '../store/data-dir.ts';
import { openConfiguredStore } from '../store/open.ts';
import { createSqliteStore } from '../store/sqlite/index.ts';
import type { Store } from '../store/store.ts';
import { UsageError } from './errors.ts';
import { Output } from './output.ts';
import { createPrompter } from './prompt.ts';

/** Where the installation is (the admin commands' options). */
export interface AdminOptions {
  dataDir?: string;
  databaseUrl?: string;
}

/** Runs `fn` on the installation's store, the data dir locked; the operator's mistakes become usage errors (exit 2). */
async function withInstallation<T>(options: AdminOptions, fn: (deps: RecoveryDeps) => Promise<T>): Promise<T> {
  try {
    const config = loadConfig(process.env, { dataDir: options.dataDir, databaseUrl: options.databaseUrl });
    const { dataDir } = config;
    if (config.databaseUrl !== null) {
      // PostgreSQL: the servers may keep running (each change is one transaction); the cluster's key is needed.
      if (!existsSync(config.masterKeyFile)) {
        throw new UsageError(`no master key at ${config.masterKeyFile}: set SENSORCLOUD_MASTER_KEY_FILE to the cluster's key`);
      }
      return await withStore(config, await openConfiguredStore(config), fn);
    }
    const database = join(dataDir, 'sensorcloud.db');
    // Nothing is created here: a wrong --data-dir must not leave an empty installation behind.
    if (!existsSync(database) || !existsSync(config.masterKeyFile)) {
      throw new UsageError(`no Sensor Cloud installation in ${dataDir} (no sensorcloud.db and master.key): point ${config.sources.dataDir} at its data dir`);
    }
    const lock = lockDataDir(dataDir, config.sources.dataDir);
    try {
      return await withStore(config, createSqliteStore(database), fn);
    } finally {
      lock.release();
    }
  } catch (err) {
    if (err instanceof ConfigError || err instanceof StartupError || err instanceof ApiError) throw new UsageError(err.message);
    throw err;
  }
}

async function withStore<T>(config: Config, store: Store, fn: (deps: RecoveryDeps) => Promise<T>): Promise<T> {
  try {
    return await fn({
      config, store, clock: systemClock, random: systemRandom, ids: createIdGenerator(systemClock, systemRandom),
      secretBox: createSecretBox(readMasterKey(config.masterKeyFile), systemRandom),
    });
  } finally {
    await store.close();
  }
}

export async function runResetPassword(email: string, options: AdminOptions & { passwordStdin?: boolean }, command: Command): Promise<void> {
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
    out.record(result, [['email', result.email], ['password', result.password]], result.password);
    out.warn('the password is shown only this once: give it to its user now');
  }
  out.note('Console sessions signed in before stay valid until their token expires (at most an hour).');
}

export async function runCreateKey(options: AdminOptions & { serviceAccount?: string }, command: Command): Promise<void> {
  const out = new Output(command.optsWithGlobals());
  const key = await withInstallation(options, (deps) => createRecoveryKey(deps, options.serviceAccount));
  if (out.quiet) out.line(`${key.keyId}\t${key.secret}`);
  else out.record(key, [['name', key.name], ['keyId', key.keyId], ['secret', key.secret], ['serviceAccount', key.email]], key.name);
  out.warn('the secret is shown only this once: store it now (it cannot be read again, only replaced by a new key)');
}
