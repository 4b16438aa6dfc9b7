// `roles`: the four roles and their permissions.
import type { Command } from 'commander';
import type { Role } from '../../wire/roles.ts';
import { action, example, roleName, type Context } from '../context.ts';

export function registerRoleCommands(program: Command): void {
  const roles = program.command('roles').description('roles and their permissions');
  example(
    roles
      .command('list')
      .description('every role')
      .action(
        action(async (ctx: Context) => {
          const items = await ctx.client.list<Role>('roles', 'roles');
          ctx.out.list(
            items,
            [
              { header: 'NAME', value: (r) => r.name },
              { header: 'DISPLAY NAME', value: (r) => r.displayName },
              { header: 'PERMISSIONS', value: (r) => String(r.permissions.length) },
              { header: 'DESCRIPTION', value: (r) => r.description },
            ],
            (r) => r.name,
            'roles',
          );
        }),
      ),
    'sensorcloud roles list',
  );

  example(
    roles
      .command('get <role>')
      .description('one role: roles/project.developer, project.developer or developer')
      .action(
        action(async (ctx: Context, role: string) => {
          const r = await ctx.client.call<Role>('GET', roleName(role));
          ctx.out.record(
            r,
            [
              ['name', r.name],
              ['displayName', r.displayName],
              ['description', r.description],
              ['permissions', r.permissions.join(', ')],
            ],
            r.name,
          );
        }),
      ),
    'sensorcloud roles get developer',
  );
}
