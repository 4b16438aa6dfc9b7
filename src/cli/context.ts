// What every client command gets: the output (from --json/--quiet/--no-color), the API client (built on first use
// from the profile and the environment), and how a command turns what the user typed into a resource name:
// an id or a full name (`projects/…/devices/…`), in --project, else the profile's default project, else the only
// project the credentials see.
import type { Command } from 'commander';
import type { Project, ProjectList } from '../wire/projects.ts';
import { ApiClient } from './client.ts';
import { UsageError } from './errors.ts';
import { Output } from './output.ts';
import { configDir, resolveConnection, type Connection } from './profiles.ts';
import { createFileTokenStore } from './token-cache.ts';

export interface GlobalOptions {
  profile?: string;
  project?: string;
  json?: boolean;
  quiet?: boolean;
  color?: boolean;
}

/** A resource id as names carry it (`projects/<id>/devices/<id>`). */
export const ID = /^[A-Za-z0-9_.~-]+$/;

/** `projects/p` or `p` → `p`. */
export function projectIdOf(input: string): string {
  const id = input.startsWith('projects/') ? input.slice('projects/'.length) : input;
  if (!ID.test(id)) throw new UsageError(`"${input}" is not a project id or name (projects/<id>)`);
  return id;
}

export class Context {
  readonly out: Output;
  private connection: Connection | null = null;
  private apiClient: ApiClient | null = null;
  private projectPromise: Promise<string> | null = null;
  private organizationPromise: Promise<string> | null = null;

  constructor(
    readonly options: GlobalOptions,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.out = new Output(options);
  }

  settings(): Connection {
    this.connection ??= resolveConnection(this.env, this.options.profile);
    return this.connection;
  }

  get client(): ApiClient {
    if (!this.apiClient) {
      const c = this.settings();
      this.apiClient = new ApiClient({
        url: c.url,
        credentials: { keyId: c.keyId, secret: c.secret, email: c.email },
        // Tokens are cached on disk only for profile credentials; environment credentials (CI) leave nothing behind.
        tokens:
          c.profileName !== null && !this.env.SENSORCLOUD_KEY_ID
            ? createFileTokenStore(configDir(this.env))
            : undefined,
        onWait: (message) => this.out.note(message),
      });
    }
    return this.apiClient;
  }

  /** The project id: --project, else the profile's (or SENSORCLOUD_PROJECT), else the only one visible. */
  project(): Promise<string> {
    this.projectPromise ??= this.findProject();
    return this.projectPromise;
  }

  /** The current project's organization (`organizations/<id>`: where its contacts' groups live), read once. */
  organization(): Promise<string> {
    this.organizationPromise ??= this.project()
      .then((p) => this.client.call<Project>('GET', `projects/${p}`))
      .then((p) => p.organization);
    return this.organizationPromise;
  }

  private async findProject(): Promise<string> {
    if (this.options.project) return projectIdOf(this.options.project);
    const fromSettings = this.settings().project;
    if (fromSettings) return projectIdOf(fromSettings);
    const visible = await this.client.call<ProjectList>('GET', 'projects', { query: { pageSize: 2 } });
    if (visible.projects.length === 1) return projectIdOf(visible.projects[0]!.name);
    if (visible.projects.length === 0) throw new UsageError('the credentials see no project; pass --project');
    throw new UsageError(
      'the credentials see several projects: pass --project <id>, or set a default with `sensorcloud login --project <id>`',
    );
  }

  /**
   * The full name of a resource in a project collection (`devices`, `dataconnectors`, `serviceaccounts`,
   * `members`): a full name is taken as it is, an id is put in the current project.
   */
  async name(input: string, collection: string): Promise<string> {
    if (input.startsWith('projects/')) {
      const parts = input.split('/');
      if (parts.length !== 4 || parts[2] !== collection || !ID.test(parts[1]!) || !ID.test(parts[3]!)) {
        throw new UsageError(`"${input}" is not a ${collection} name (projects/<project>/${collection}/<id>)`);
      }
      return input;
    }
    if (!ID.test(input))
      throw new UsageError(`"${input}" is not an id or a name (projects/<project>/${collection}/<id>)`);
    return `projects/${await this.project()}/${collection}/${input}`;
  }

  /** The project of a full resource name, `projects/p/…` → `p`. */
  static projectOfName(name: string): string {
    return name.split('/')[1]!;
  }
}

/** The context of the command being run, from its options and every parent's (the global options). */
export function contextOf(command: Command): Context {
  return new Context(command.optsWithGlobals() as GlobalOptions);
}

/**
 * A commander action: the context first, then the positional arguments and the command's own options, as
 * commander passes them.
 */
export function action(fn: (ctx: Context, ...args: any[]) => Promise<void>): (...args: any[]) => Promise<void> {
  return async (...args: any[]) => {
    const command = args[args.length - 1] as Command;
    await fn(contextOf(command), ...args.slice(0, -1));
  };
}

/** The examples given to each command, so a group's help can show its commands' (program.ts). */
export const EXAMPLES = new WeakMap<Command, string[]>();

/** Adds the `Example:` block every command's --help ends with. */
export function example(command: Command, ...lines: string[]): Command {
  EXAMPLES.set(command, lines);
  return command.addHelpText(
    'after',
    `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`,
  );
}

/** The last segment of a resource name (its id), for tables. */
export function idOf(name: string): string {
  return name.slice(name.lastIndexOf('/') + 1);
}

/** `roles/project.developer`, `project.developer` or `developer` → `roles/project.developer`. */
export function roleName(input: string): string {
  const bare = input.startsWith('roles/') ? input.slice('roles/'.length) : input;
  return `roles/${bare.includes('.') ? bare : `project.${bare}`}`;
}
