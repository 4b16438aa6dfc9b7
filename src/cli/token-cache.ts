// Bearer tokens kept between commands (`tokens.json` beside the profiles, mode 0600), so a script of many commands
// makes one token exchange an hour instead of one per command. Only for credentials that come from a profile:
// credentials from the environment (CI) leave nothing on disk. A cache that cannot be read or written is ignored.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CachedToken, TokenStore } from './client.ts';
import { writeSecretFile } from './profiles.ts';

const FILE_NAME = 'tokens.json';

export function createFileTokenStore(dir: string): TokenStore {
  const path = join(dir, FILE_NAME);
  const read = (): Record<string, CachedToken> => {
    try {
      return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, CachedToken>) : {};
    } catch {
      return {};
    }
  };
  const write = (tokens: Record<string, CachedToken>): void => {
    const now = Date.now();
    for (const [key, t] of Object.entries(tokens)) if (t.expiresAt <= now) delete tokens[key];
    try {
      writeSecretFile(dir, FILE_NAME, JSON.stringify(tokens));
    } catch {
      // Not cached: the next command exchanges again.
    }
  };
  return {
    get(key) {
      const t = read()[key];
      return t && typeof t.token === 'string' && typeof t.expiresAt === 'number' ? t : null;
    },
    set(key, token) {
      const tokens = read();
      tokens[key] = token;
      write(tokens);
    },
    delete(key) {
      const tokens = read();
      if (!(key in tokens)) return;
      delete tokens[key];
      write(tokens);
    },
  };
}
