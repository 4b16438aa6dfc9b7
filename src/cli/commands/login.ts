// `login`, `logout` and `profiles`: the saved connection settings (profiles.ts). `login` checks the credentials
// against the server before it saves anything, and never prints the secret.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Project, ProjectList } from '../../wire/projects.ts';
import type { Key, ServiceAccount } from '../../wire/service-accounts.ts';
import { ApiClient } from '../client.ts';
import { action, example, projectIdOf, type Context } from '../context.ts';
import { ApiError, AuthError, UsageError } from '../errors.ts';
import {
  DEFAULT_PROFILE,
  configDir,
  normaliseServerUrl,
  readProfiles,
  writeProfiles,
  type Profile,
} from '../profiles.ts';
import { createPrompter } from '../prompt.ts';
import { createFileTokenStore } from '../token-cache.ts';

interface LoginOptions {
  from?: string;
  url?: string;
  keyId?: string;
  serviceAccount?: string;
}

/** The settings in a bootstrap.json written by the service's first start. */
function fromBootstrap(path: string): Profile {
  let boot: {
    baseUrl?: string;
    project?: string;
    serviceAccount?: { keyId?: string; secret?: string; email?: string };
  };
  try {
    boot = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const sa = boot.serviceAccount;
  if (!boot.baseUrl || !sa?.keyId || !sa.secret)
    throw new UsageError(`${path} is not a bootstrap.json (baseUrl and serviceAccount.keyId/secret expected)`);
  return {
    url: normaliseServerUrl(boot.baseUrl),
    keyId: sa.keyId,
    secret: sa.secret,
    email: sa.email,
    project: boot.project ? projectIdOf(boot.project) : undefined,
  };
}

/**
 * The email of the service account that owns `keyId`, found with Basic Auth through the projects the account
 * administers; null when it cannot see itself (then the profile keeps using Basic Auth).
 */
async function discoverEmail(client: ApiClient, keyId: string): Promise<string | null> {
  for await (const project of client.pages<Project>('projects', 'projects')) {
    let accounts: ServiceAccount[];
    try {
      accounts = await client.list(`${project.name}/serviceaccounts`, 'serviceAccounts');
    } catch (err) {
      if (err instanceof ApiError && (err.status === 403 || err.status === 404)) continue;
      throw err;
    }
    for (const account of accounts) {
      const keys = await client.list<Key>(`${account.name}/keys`, 'keys');
      if (keys.some((k) => k.id === keyId)) return account.email;
    }
  }
  return null;
}

async function login(ctx: Context, options: LoginOptions): Promise<void> {
  const profileName = ctx.options.profile ?? DEFAULT_PROFILE;
  const existing = readProfiles(ctx.env).profiles[profileName];
  let profile: Profile;
  if (options.from) {
    profile = fromBootstrap(options.from);
  } else {
    const prompter = createPrompter();
    try {
      const url =
        options.url ?? (await prompter.ask('Server URL', { fallback: existing?.url ?? 'http://127.0.0.1:8080' }));
      const keyId =
        options.keyId ?? (await prompter.ask('Key id', existing?.keyId ? { fallback: existing.keyId } : {}));
      const secret = await prompter.ask('Key secret', { secret: true });
      if (!keyId || !secret) throw new UsageError('a key id and a secret are needed');
      profile = { url: normaliseServerUrl(url), keyId, secret };
    } finally {
      prompter.close();
    }
  }
  if (options.serviceAccount) profile.email = options.serviceAccount.toLowerCase();

  // Without the email only Basic Auth works; find the email so the profile can use OAuth2 tokens.
  if (!profile.email) {
    const basic = new ApiClient({
      url: profile.url,
      credentials: { keyId: profile.keyId, secret: profile.secret, email: null },
    });
    try {
      profile.email = (await discoverEmail(basic, profile.keyId)) ?? undefined;
    } catch (err) {
      if (err instanceof AuthError) {
        throw new AuthError(
          `${err.message} (Basic Auth may be off for this service account: give its email with --service-account to use OAuth2)`,
        );
      }
      throw err;
    }
  }
  const client = new ApiClient({
    url: profile.url,
    credentials: { keyId: profile.keyId, secret: profile.secret, email: profile.email ?? null },
    tokens: createFileTokenStore(configDir(ctx.env)),
  });
  // The check: a token exchange (or a Basic call) and one listing.
  const visible = await client.call<ProjectList>('GET', 'projects', { query: { pageSize: 2 } });
  if (ctx.options.project) profile.project = projectIdOf(ctx.options.project);
  else if (!profile.project && visible.projects.length === 1) profile.project = projectIdOf(visible.projects[0]!.name);

  const file = readProfiles(ctx.env);
  file.profiles[profileName] = profile;
  file.current = profileName;
  const path = writeProfiles(ctx.env, file);
  if (ctx.out.json) {
    ctx.out.printJson({
      profile: profileName,
      url: profile.url,
      keyId: profile.keyId,
      serviceAccount: profile.email ?? null,
      project: profile.project ?? null,
      file: path,
    });
    return;
  }
  ctx.out.note(
    `Logged in to ${profile.url} as ${profile.email ?? `key ${profile.keyId}`} (${profile.email ? 'OAuth2 tokens' : 'Basic Auth'}).`,
  );
  ctx.out.note(
    `Profile "${profileName}" saved in ${path} (mode 0600)${profile.project ? `; default project ${profile.project}` : ''}.`,
  );
}

export function registerLoginCommands(program: Command): void {
  example(
    program
      .command('login')
      .description('save a server URL, credentials and a default project as a profile (asks for what is not given)')
      .option('--from <bootstrap.json>', "take everything from the service's bootstrap.json")
      .option('--url <url>', 'server URL, e.g. http://127.0.0.1:8080')
      .option('--key-id <id>', 'service account key id (the secret is always asked, never an option)')
      .option(
        '--service-account <email>',
        "the key's service account email (found automatically when Basic Auth is on)",
      )
      .action(action(login)),
    'sensorcloud login --from data/bootstrap.json',
    'sensorcloud login --profile staging --url https://sensors.example.org --key-id cvq2b1r0l4l9s3f2a9k0',
  );

  example(
    program
      .command('logout')
      .description('forget a profile (the current one, or --profile)')
      .action(
        action(async (ctx: Context) => {
          const file = readProfiles(ctx.env);
          const name = ctx.options.profile ?? file.current;
          const profile = file.profiles[name];
          if (!profile) throw new UsageError(`no profile "${name}"`);
          delete file.profiles[name];
          if (file.current === name) file.current = Object.keys(file.profiles)[0] ?? DEFAULT_PROFILE;
          writeProfiles(ctx.env, file);
          createFileTokenStore(configDir(ctx.env)).delete(`${profile.url} ${profile.keyId}`);
          ctx.out.done({}, `Profile "${name}" removed.`);
        }),
      ),
    'sensorcloud logout --profile staging',
  );

  const profiles = program.command('profiles').description('list and switch saved profiles');
  example(
    profiles
      .command('list')
      .description('the saved profiles (secrets are never shown)')
      .action(
        action(async (ctx: Context) => {
          const file = readProfiles(ctx.env);
          const rows = Object.entries(file.profiles).map(([name, p]) => ({
            name,
            current: name === file.current,
            url: p.url,
            keyId: p.keyId,
            serviceAccount: p.email ?? null,
            project: p.project ?? null,
          }));
          ctx.out.list(
            rows,
            [
              { header: 'NAME', value: (r) => `${r.current ? '*' : ' '} ${r.name}` },
              { header: 'URL', value: (r) => r.url },
              { header: 'KEY ID', value: (r) => r.keyId },
              { header: 'AUTH', value: (r) => (r.serviceAccount ? 'oauth2' : 'basic') },
              { header: 'PROJECT', value: (r) => r.project ?? '' },
            ],
            (r) => r.name,
            'profiles (run `sensorcloud login`)',
          );
        }),
      ),
    'sensorcloud profiles list',
  );
  example(
    profiles
      .command('use <name>')
      .description('make a profile the current one')
      .action(
        action(async (ctx: Context, name: string) => {
          const file = readProfiles(ctx.env);
          if (!file.profiles[name]) throw new UsageError(`no profile "${name}"`);
          file.current = name;
          writeProfiles(ctx.env, file);
          ctx.out.done({ current: name }, `Profile "${name}" is now the current one.`);
        }),
      ),
    'sensorcloud profiles use staging',
  );
}
