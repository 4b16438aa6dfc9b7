// `organizations`: list, get, permissions, and organization members (organization admins, incl. invitations).
import type { Command } from 'commander';
import type { InviteUrl, Member } from '../../wire/members.ts';
import type { Organization } from '../../wire/organizations.ts';
import { collect } from '../arguments.ts';
import { action, example, idOf, roleName, type Context } from '../context.ts';
import { memberColumns, memberFields, organizationName, printInviteUrl, resolveMember } from './resources.ts';

export function registerOrganizationCommands(program: Command): void {
  const orgs = program.command('organizations').alias('orgs').description('organizations and their members');

  example(
    orgs
      .command('list')
      .description('organizations the credentials can read')
      .action(
        action(async (ctx: Context) => {
          const items = await ctx.client.list<Organization>('organizations', 'organizations');
          ctx.out.list(
            items,
            [
              { header: 'ID', value: (o) => idOf(o.name) },
              { header: 'DISPLAY NAME', value: (o) => o.displayName },
            ],
            (o) => o.name,
            'organizations',
          );
        }),
      ),
    'sensorcloud organizations list',
  );

  example(
    orgs
      .command('get [organization]')
      .description('one organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, org?: string) => {
          const o = await ctx.client.call<Organization>('GET', await organizationName(ctx, org));
          ctx.out.record(
            o,
            [
              ['name', o.name],
              ['displayName', o.displayName],
            ],
            o.name,
          );
        }),
      ),
    'sensorcloud organizations get cvq2b1b0l4l9s3f2a9f0',
  );

  example(
    orgs
      .command('permissions [organization]')
      .description("the caller's permissions on an organization")
      .action(
        action(async (ctx: Context, org?: string) => {
          const name = await organizationName(ctx, org);
          const permissions = await ctx.client.list<string>(`${name}/permissions`, 'permissions');
          if (ctx.out.json) return ctx.out.printJson(permissions);
          for (const p of permissions) ctx.out.line(p);
        }),
      ),
    'sensorcloud organizations permissions',
  );

  const members = orgs.command('members').description('organization members (organization admins) and invitations');
  example(
    members
      .command('list [organization]')
      .description('members of an organization')
      .action(
        action(async (ctx: Context, org?: string) => {
          const items = await ctx.client.list<Member>(`${await organizationName(ctx, org)}/members`, 'members');
          ctx.out.list(items, memberColumns, (m) => m.name, 'members');
        }),
      ),
    'sensorcloud organizations members list',
  );

  example(
    members
      .command('add <email>')
      .description('add an organization admin; an unknown email is invited (see invite-url)')
      .option('--organization <organization>', 'organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, email: string, o: { organization?: string }) => {
          const m = await ctx.client.call<Member>('POST', `${await organizationName(ctx, o.organization)}/members`, {
            body: { email, roles: ['roles/organization.admin'] },
          });
          ctx.out.record(m, memberFields(m), m.name);
        }),
      ),
    'sensorcloud organizations members add ops@example.org',
  );

  example(
    members
      .command('get <member>')
      .description('one member, by id, name or email')
      .option('--organization <organization>', 'organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, member: string, o: { organization?: string }) => {
          const name = await resolveMember(ctx, await organizationName(ctx, o.organization), member);
          const m = await ctx.client.call<Member>('GET', name);
          ctx.out.record(m, memberFields(m), m.name);
        }),
      ),
    'sensorcloud organizations members get ops@example.org',
  );

  example(
    members
      .command('update <member>')
      .description("change a member's roles (organizations know only roles/organization.admin)")
      .requiredOption('--role <role>', 'role (repeatable)', collect)
      .option('--organization <organization>', 'organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, member: string, o: { organization?: string; role: string[] }) => {
          const name = await resolveMember(ctx, await organizationName(ctx, o.organization), member);
          const m = await ctx.client.call<Member>('PATCH', name, {
            query: { updateMask: 'roles' },
            body: { roles: o.role.map(roleName) },
          });
          ctx.out.record(m, memberFields(m), m.name);
        }),
      ),
    'sensorcloud organizations members update ops@example.org --role organization.admin',
  );

  example(
    members
      .command('remove <member>')
      .description('remove a member from the organization')
      .option('--organization <organization>', 'organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, member: string, o: { organization?: string }) => {
          const name = await resolveMember(ctx, await organizationName(ctx, o.organization), member);
          ctx.out.done(await ctx.client.call('DELETE', name), `Removed ${name}.`);
        }),
      ),
    'sensorcloud organizations members remove ops@example.org',
  );

  example(
    members
      .command('invite-url <member>')
      .description('the invitation link of a pending member')
      .option('--organization <organization>', 'organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, member: string, o: { organization?: string }) => {
          const name = await resolveMember(ctx, await organizationName(ctx, o.organization), member);
          printInviteUrl(ctx, await ctx.client.call<InviteUrl>('GET', `${name}:getInviteUrl`));
        }),
      ),
    'sensorcloud organizations members invite-url ops@example.org',
  );
}
