// `members`: project members and invitations (an unknown email becomes a pending invitation), one member's
// memberships across an organization, and the all-or-nothing batches over several projects.
import type { Command } from 'commander';
import type { BatchCreateMembersRequest, BatchCreateMembersResponse, InviteUrl, Member } from '../../wire/members.ts';
import { collect } from '../arguments.ts';
import { action, example, projectIdOf, roleName, type Context } from '../context.ts';
import { UsageError } from '../errors.ts';
import { memberColumns, memberFields, organizationName, printInviteUrl, resolveMember } from './resources.ts';

const roles = (list: string[]) => list.map(roleName);

export function registerMemberCommands(program: Command): void {
  const members = program.command('members').description('project members and invitations');

  example(
    members
      .command('list')
      .description('members of the project')
      .action(
        action(async (ctx: Context) => {
          const items = await ctx.client.list<Member>(`projects/${await ctx.project()}/members`, 'members');
          ctx.out.list(items, memberColumns, (m) => m.name, 'members');
        }),
      ),
    'sensorcloud members list --project cvq2b1b0l4l9s3f2a9g0',
  );

  example(
    members
      .command('add <email>')
      .description('add a user or service account with roles; an unknown email is invited (see invite-url)')
      .requiredOption('--role <role>', 'user, developer or admin (or roles/project.…); repeatable', collect)
      .action(
        action(async (ctx: Context, email: string, o: { role: string[] }) => {
          const m = await ctx.client.call<Member>('POST', `projects/${await ctx.project()}/members`, {
            body: { email, roles: roles(o.role) },
          });
          ctx.out.record(m, memberFields(m), m.name);
          if (m.status === 'PENDING')
            ctx.out.note('Pending invitation: `sensorcloud members invite-url` gives its link.');
        }),
      ),
    'sensorcloud members add ci-bot@p.serviceaccount.sensorcloud.local --role developer',
  );

  example(
    members
      .command('get <member>')
      .description('one member, by id, name or email')
      .action(
        action(async (ctx: Context, member: string) => {
          const m = await ctx.client.call<Member>(
            'GET',
            await resolveMember(ctx, `projects/${await ctx.project()}`, member),
          );
          ctx.out.record(m, memberFields(m), m.name);
        }),
      ),
    'sensorcloud members get alice@example.org',
  );

  example(
    members
      .command('update <member>')
      .description("replace a member's roles")
      .requiredOption('--role <role>', 'user, developer or admin; repeatable', collect)
      .action(
        action(async (ctx: Context, member: string, o: { role: string[] }) => {
          const name = await resolveMember(ctx, `projects/${await ctx.project()}`, member);
          const m = await ctx.client.call<Member>('PATCH', name, {
            query: { updateMask: 'roles' },
            body: { roles: roles(o.role) },
          });
          ctx.out.record(m, memberFields(m), m.name);
        }),
      ),
    'sensorcloud members update alice@example.org --role admin',
  );

  example(
    members
      .command('remove <member>')
      .description('remove a member from the project')
      .action(
        action(async (ctx: Context, member: string) => {
          const name = await resolveMember(ctx, `projects/${await ctx.project()}`, member);
          ctx.out.done(await ctx.client.call('DELETE', name), `Removed ${name}.`);
        }),
      ),
    'sensorcloud members remove alice@example.org',
  );

  example(
    members
      .command('invite-url <member>')
      .description('the invitation link of a pending member (valid 7 days)')
      .action(
        action(async (ctx: Context, member: string) => {
          const name = await resolveMember(ctx, `projects/${await ctx.project()}`, member);
          printInviteUrl(ctx, await ctx.client.call<InviteUrl>('GET', `${name}:getInviteUrl`));
        }),
      ),
    'sensorcloud members invite-url alice@example.org',
  );

  example(
    members
      .command('memberships <member-id>')
      .description("one user's or service account's memberships in every project of an organization")
      .option('--organization <organization>', 'organization (default: the only one visible)')
      .action(
        action(async (ctx: Context, memberId: string, o: { organization?: string }) => {
          const organization = await organizationName(ctx, o.organization);
          const items = await ctx.client.list<Member>('projects/-/members', 'members', { memberId, organization });
          ctx.out.list(
            items,
            [
              { header: 'PROJECT', value: (m) => m.name.split('/')[1]! },
              { header: 'STATUS', value: (m) => m.status },
              { header: 'ROLES', value: (m) => m.roles.join(',') },
            ],
            (m) => m.name,
            'memberships',
          );
        }),
      ),
    'sensorcloud members memberships cvq2b1r0l4l9s3f2a9l0',
  );

  example(
    members
      .command('batch-add <email>')
      .description('add one email to several projects at once, all or nothing')
      .requiredOption('--to <project>', 'a project to add it to (repeatable)', collect)
      .requiredOption('--role <role>', 'user, developer or admin; repeatable', collect)
      .action(
        action(async (ctx: Context, email: string, o: { to: string[]; role: string[] }) => {
          const body: BatchCreateMembersRequest = {
            members: o.to.map((p) => ({ project: `projects/${projectIdOf(p)}`, email, roles: roles(o.role) })),
          };
          const res = await ctx.client.call<BatchCreateMembersResponse>('POST', 'projects/-/members:batchCreate', {
            body,
          });
          if (ctx.out.json) return ctx.out.printJson(res);
          ctx.out.list(res.members, memberColumns, (m) => m.name, 'members');
        }),
      ),
    'sensorcloud members batch-add ops@example.org --to p1 --to p2 --role user',
  );

  example(
    members
      .command('batch-remove <member-name...>')
      .description('remove several memberships (projects/<p>/members/<m>); unknown names are skipped')
      .action(
        action(async (ctx: Context, names: string[]) => {
          for (const n of names)
            if (!/^projects\/[^/]+\/members\/[^/]+$/.test(n))
              throw new UsageError(`"${n}" is not a member name (projects/<p>/members/<m>)`);
          ctx.out.done(
            await ctx.client.call('POST', 'projects/-/members:batchDelete', { body: { names } }),
            `Removed ${names.length} membership${names.length === 1 ? '' : 's'}.`,
          );
        }),
      ),
    'sensorcloud members batch-remove projects/p1/members/m1 projects/p2/members/m1',
  );
}
