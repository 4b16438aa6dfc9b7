// The master key: 32 random bytes (64 hex characters) in a file of mode 0600, created in the data dir on first start
// unless SENSORCLOUD_MASTER_KEY_FILE names one (every process of a PostgreSQL cluster uses the same key). It seals
// key secrets and signature secrets at rest and signs access tokens. Losing it invalidates every key secret and token.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Random } from '../runtime/random.ts';
import { StartupError } from '../runtime/startup-error.ts';

/** What a cluster's processes seal and open to tell that they hold the same key (main.ts, admin copy-to-postgres). */
export const MASTER_KEY_CHECK = 'sensorcloud master key check';

export interface MasterKeySource {
  masterKeyFile: string;
  /** The file was named by the operator: it must exist (a cluster shares it; a new one would open nothing). */
  masterKeyFileSet: boolean;
}

export function readMasterKey(file: string): Buffer {
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  if (key.length !== 32)
    throw new StartupError(
      `${file} is corrupt (expected 64 hex characters): restore it from the backup taken with the database; without it no key secret can be read`,
    );
  return key;
}

export function loadOrCreateMasterKey(source: MasterKeySource, random: Random): Buffer {
  const file = source.masterKeyFile;
  if (existsSync(file)) return readMasterKey(file);
  if (source.masterKeyFileSet) {
    throw new StartupError(
      `SENSORCLOUD_MASTER_KEY_FILE ${file} does not exist: copy the cluster's key there, or make a new one for a new installation with: openssl rand -hex 32 > ${file}; chmod 600 ${file}`,
    );
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const key = random.bytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
