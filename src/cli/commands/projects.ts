// `projects`: list, get, create, update, delete, permissions, labels (projects:batchUpdate) and `use` (the
// profile's default project).
import type { Command } from 'commander';
import type {
  CreateProjectRequest,
  LocationInput,
  Project,
  ProjectLabelBatch,
  ProjectPatch,
} from '../../wire/projects.ts';
import { collect, parseNumber, parsePairs } from '../arguments.ts';
import { action, example, idOf, projectIdOf, type Context } from '../context.ts';
import { UsageError } from '../errors.ts';
import { readProfiles, writeProfiles } from '../profiles.ts';
import { organizationName } from './resources.ts';

const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => (v === '' ? k : `${k}=${v}`))
    .join(', ');

function printProject(ctx: Context, p: Project): void {
  const { latitude, longitude, timeLocation } = p.location;
  ctx.out.record(
    p,
    [
      ['name', p.name],
      ['displayName', p.displayName],
      ['organization', `${p.organization} (${p.organizationDisplayName})`],
      ['sensorCount', String(p.sensorCount)],
      ['cloudConnectorCount', String(p.cloudConnectorCount)],
      [
        'location',
        latitude === null && longitude === null && timeLocation === ''
          ? ''
          : `${latitude ?? ''},${longitude ?? ''} ${timeLocation}`.trim(),
      ],
      ['labels', labelsText(p.labels)],
    ],
    p.name,
  );
}

interface LocationOptions {
  latitude?: string;
  longitude?: string;
  timeLocation?: string;
}

function locationOf(o: LocationOptions): LocationInput | undefined {
  if (o.latitude === undefined && o.longitude === undefined && o.timeLocation === undefined) return undefined;
  return {
    ...(o.latitude !== undefined ? { latitude: parseNumber(o.latitude, '--latitude') } : {}),
    ...(o.longitude !== undefined ? { longitude: parseNumber(o.longitude, '--longitude') } : {}),
    ...(o.timeLocation !== undefined ? { timeLocation: o.timeLocation } : {}),
  };
}

const withLocation = (command: Command) =>
  command
    .option('--latitude <degrees>', 'location latitude')
    .option('--longitude <degrees>', 'location longitude')
    .option('--time-location <zone>', 'IANA time zone, e.g. Europe/Oslo');

/** The project argument, else --project, else the profile's, else the only one. */
async function projectArg(ctx: Context, input: string | undefined): Promise<string> {
  return `projects/${input ? projectIdOf(input) : await ctx.project()}`;
}

export function registerProjectCommands(program: Command): void {
  const projects = program.command('projects').description('projects');

  example(
    projects
      .command('list')
      .description('projects the credentials can read')
      .option('--organization <organization>', 'only this organization')
      .option('--query <text>', 'display name contains this (case-insensitive)')
      .action(
        action(async (ctx: Context, o: { organization?: string; query?: string }) => {
          const organization = o.organization ? await organizationName(ctx, o.organization) : undefined;
          const items = await ctx.client.list<Project>('projects', 'projects', { organization, query: o.query });
          ctx.out.list(
            items,
            [
              { header: 'ID', value: (p) => idOf(p.name) },
              { header: 'DISPLAY NAME', value: (p) => p.displayName },
              { header: 'ORGANIZATION', value: (p) => p.organizationDisplayName },
              { header: 'SENSORS', value: (p) => String(p.sensorCount) },
              { header: 'CCONS', value: (p) => String(p.cloudConnectorCount) },
            ],
            (p) => p.name,
            'projects',
          );
        }),
      ),
    'sensorcloud projects list --query warehouse',
  );

  example(
    projects
      .command('get [project]')
      .description('one project (default: the current project)')
      .action(
        action(async (ctx: Context, project?: string) => {
          printProject(ctx, await ctx.client.call<Project>('GET', await projectArg(ctx, project)));
        }),
      ),
    'sensorcloud projects get cvq2b1b0l4l9s3f2a9g0',
  );

  example(
    withLocation(projects.command('create <display-name>'))
      .description('create a project in an organization')
      .option('--organization <organization>', 'organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, displayName: string, o: LocationOptions & { organization?: string }) => {
          const body: CreateProjectRequest = {
            organization: await organizationName(ctx, o.organization),
            displayName,
            location: locationOf(o),
          };
          printProject(ctx, await ctx.client.call<Project>('POST', 'projects', { body }));
        }),
      ),
    'sensorcloud projects create "Warehouse 2" --time-location Europe/Oslo',
  );

  example(
    withLocation(projects.command('update [project]'))
      .description('change the display name or location')
      .option('--display-name <name>', 'new display name')
      .action(
        action(async (ctx: Context, project: string | undefined, o: LocationOptions & { displayName?: string }) => {
          const location = locationOf(o);
          const mask = [
            o.displayName !== undefined && 'displayName',
            ...Object.keys(location ?? {}).map((k) => `location.${k}`),
          ].filter(Boolean);
          if (mask.length === 0)
            throw new UsageError('nothing to change: give --display-name, --latitude, --longitude or --time-location');
          // The mask names only what was given (location.latitude …), so the rest of the location stays as it is.
          const name = await projectArg(ctx, project);
          const body: ProjectPatch = {
            ...(o.displayName !== undefined ? { displayName: o.displayName } : {}),
            ...(location ? { location } : {}),
          };
          const updateMask = mask.join(',');
          printProject(ctx, await ctx.client.call<Project>('PATCH', name, { query: { updateMask }, body }));
        }),
      ),
    'sensorcloud projects update --display-name "Warehouse two"',
  );

  example(
    projects
      .command('delete <project>')
      .description('delete a project without devices or data connectors')
      .action(
        action(async (ctx: Context, project: string) => {
          const name = `projects/${projectIdOf(project)}`;
          ctx.out.done(await ctx.client.call('DELETE', name), `Deleted ${name}.`);
        }),
      ),
    'sensorcloud projects delete cvq2b1b0l4l9s3f2a9g0',
  );

  example(
    projects
      .command('permissions [project]')
      .description("the caller's permissions on a project")
      .action(
        action(async (ctx: Context, project?: string) => {
          const permissions = await ctx.client.list<string>(
            `${await projectArg(ctx, project)}/permissions`,
            'permissions',
          );
          if (ctx.out.json) return ctx.out.printJson(permissions);
          for (const p of permissions) ctx.out.line(p);
        }),
      ),
    'sensorcloud projects permissions',
  );

  example(
    projects
      .command('labels <project...>')
      .description('add and remove labels on projects, all or nothing')
      .option('--add <key=value>', 'label to add or change (repeatable)', collect)
      .option('--remove <key>', 'label key to remove (repeatable)', collect)
      .action(
        action(async (ctx: Context, list: string[], o: { add?: string[]; remove?: string[] }) => {
          if (!o.add && !o.remove) throw new UsageError('give --add key=value or --remove key');
          const body: ProjectLabelBatch = {
            projects: list.map((p) => `projects/${projectIdOf(p)}`),
            addLabels: o.add ? parsePairs(o.add, '--add') : undefined,
            removeLabels: o.remove,
          };
          ctx.out.done(
            await ctx.client.call('POST', 'projects:batchUpdate', { body }),
            `Labels changed on ${list.length} project${list.length === 1 ? '' : 's'}.`,
          );
        }),
      ),
    'sensorcloud projects labels p1 p2 --add env=prod --remove draft',
  );

  example(
    projects
      .command('use <project>')
      .description("make a project the profile's default")
      .action(
        action(async (ctx: Context, project: string) => {
          const id = projectIdOf(project);
          const settings = ctx.settings();
          // Checked first: a default the credentials cannot read would only fail later.
          await ctx.client.call('GET', `projects/${id}`);
          const file = readProfiles(ctx.env);
          const profile = settings.profileName ? file.profiles[settings.profileName] : undefined;
          if (!profile)
            throw new UsageError(
              'no saved profile to change (credentials come from the environment: set SENSORCLOUD_PROJECT instead)',
            );
          profile.project = id;
          writeProfiles(ctx.env, file);
          ctx.out.done({ project: `projects/${id}` }, `Default project of profile "${settings.profileName}": ${id}.`);
        }),
      ),
    'sensorcloud projects use cvq2b1b0l4l9s3f2a9g0',
  );
}
