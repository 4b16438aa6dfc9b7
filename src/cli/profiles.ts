// Profiles: where the CLI keeps the server URL, the credentials and a default project, and how the environment
// overrides them. Stored in `$XDG_CONFIG_HOME/sensorcloud/profiles.json` (else ~/.config/sensorcloud), the folder
// mode 0700 and the file 0600, because it holds key secrets. SENSORCLOUD_URL / SENSORCLOUD_KEY_ID /
// SENSORCLOUD_KEY_SECRET (and SENSORCLOUD_SERVICE_ACCOUNT, SENSORCLOUD_PROJECT) override it, so CI needs no login.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from './errors.ts';

export interface Profile {
  /** The server's origin, e.g. http://127.0.0.1:8080 (no /v2). */
  url: string;
  keyId: string;
  secret: string;
  /** The service account's email: with it the CLI uses OAuth2 tokens, without it Basic Auth. */
  email?: string;
  /** Default project id. */
  project?: string;
}

export interface ProfilesFile {
  /** The profile used when neither --profile nor SENSORCLOUD_PROFILE names one. */
  current: string;
  profiles: Record<string, Profile>;
}

export const DEFAULT_PROFILE = 'default';
const FILE_NAME = 'profiles.json';

export function configDir(env: NodeJS.ProcessEnv): string {
  const base =
    env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.trim() !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'sensorcloud');
}

export function profilesPath(env: NodeJS.ProcessEnv): string {
  return join(configDir(env), FILE_NAME);
}

export function readProfiles(env: NodeJS.ProcessEnv): ProfilesFile {
  const path = profilesPath(env);
  if (!existsSync(path)) return { current: DEFAULT_PROFILE, profiles: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new UsageError(
      `${path} is not valid JSON (${(err as Error).message}); fix it or remove it and run \`sensorcloud login\``,
    );
  }
  const file = parsed as Partial<ProfilesFile>;
  return { current: typeof file.current === 'string' ? file.current : DEFAULT_PROFILE, profiles: file.profiles ?? {} };
}

/**
 * Writes the file through a temporary file created with mode 0600 and renamed over it, so the secrets are never
 * readable by others, not even for a moment, and a crash never leaves half a file.
 */
export function writeSecretFile(dir: string, name: string, contents: string): string {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  // A folder made by someone else (or an older version) with wider rights is narrowed: it holds secrets.
  if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
  const path = join(dir, name);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, contents, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
  return path;
}

export function writeProfiles(env: NodeJS.ProcessEnv, file: ProfilesFile): string {
  return writeSecretFile(configDir(env), FILE_NAME, `${JSON.stringify(file, null, 2)}\n`);
}

/**
 * The server base as the CLI uses it: scheme, host, port and any path prefix, without a trailing slash or `/v2`
 * (SENSORCLOUD_URL may be given as `http://127.0.0.1:8080` or `http://127.0.0.1:8080/v2`).
 */
export function normaliseServerUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new UsageError(`"${raw}" is not a URL; give the server's origin, e.g. http://127.0.0.1:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`"${raw}" must be an http:// or https:// URL`);
  if (url.username || url.password) throw new UsageError('put credentials in the key id and secret, not in the URL');
  let path = url.pathname.replace(/\/+$/, '');
  if (path.endsWith('/v2')) path = path.slice(0, -3);
  return `${url.protocol}//${url.host}${path}`;
}

/** Where the connection settings came from, for messages (never the secret itself). */
export interface Connection {
  url: string;
  keyId: string;
  secret: string;
  email: string | null;
  project: string | null;
  /** The profile these settings came from (in part), or null when only the environment gave them. */
  profileName: string | null;
}

/**
 * The settings a command uses: the named profile (--profile, else SENSORCLOUD_PROFILE, else the current one),
 * each value overridden by its environment variable. Credentials are overridden as a pair, and a profile's
 * service account email is kept only when the key id is the profile's.
 */
export function resolveConnection(env: NodeJS.ProcessEnv, profileOption: string | undefined): Connection {
  const file = readProfiles(env);
  const named = profileOption ?? (env.SENSORCLOUD_PROFILE || undefined);
  const profileName = named ?? file.current;
  const profile = file.profiles[profileName];
  if (named !== undefined && !profile) {
    const known = Object.keys(file.profiles);
    throw new UsageError(
      `no profile "${named}"${known.length ? ` (profiles: ${known.join(', ')})` : ''}; create it with \`sensorcloud login --profile ${named}\``,
    );
  }
  const envKeyId = env.SENSORCLOUD_KEY_ID || undefined;
  const envSecret = env.SENSORCLOUD_KEY_SECRET || undefined;
  if ((envKeyId === undefined) !== (envSecret === undefined)) {
    throw new UsageError('SENSORCLOUD_KEY_ID and SENSORCLOUD_KEY_SECRET must be set together');
  }
  const rawUrl = env.SENSORCLOUD_URL || profile?.url;
  const keyId = envKeyId ?? profile?.keyId;
  const secret = envSecret ?? profile?.secret;
  if (!rawUrl || !keyId || !secret) {
    const missing = [!rawUrl && 'SENSORCLOUD_URL', !keyId && 'SENSORCLOUD_KEY_ID', !secret && 'SENSORCLOUD_KEY_SECRET']
      .filter(Boolean)
      .join(', ');
    throw new UsageError(`not logged in: run \`sensorcloud login\`, or set ${missing}`);
  }
  const sameKey = profile !== undefined && profile.keyId === keyId;
  const email = env.SENSORCLOUD_SERVICE_ACCOUNT || (sameKey ? profile.email : undefined) || null;
  return {
    url: normaliseServerUrl(rawUrl),
    keyId,
    secret,
    email,
    project: env.SENSORCLOUD_PROJECT || profile?.project || null,
    profileName: profile ? profileName : null,
  };
}
