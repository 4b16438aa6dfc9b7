// The master key: 32 random bytes created in the data dir on first start (mode 0600). It encrypts key secrets
// at rest and signs access tokens. Losing it invalidates every key secret and token.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Random } from '../runtime/random.ts';
import { StartupError } from '../runtime/startup-error.ts';

export function loadOrCreateMasterKey(dataDir: string, random: Random): Buffer {
  const file = join(dataDir, 'master.key');
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
    if (key.length !== 32) throw new StartupError(`${file} is corrupt (expected 64 hex characters): restore it from the backup taken with the database; without it no key secret can be read`);
    return key;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = random.bytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
