// `service-accounts`: the machine identities owned by a project (project admin for everything, reads included).
import { type Command, Option } from 'commander';
import type { ServiceAccount, ServiceAccountInput } from '../../wire/service-accounts.ts';
import { action, example, idOf, type Context } from '../context.ts';
import { UsageError } from '../errors.ts';

export function printServiceAccount(ctx: Context, a: ServiceAccount): void {
  ctx.out.record(
    a,
    [
      ['name', a.name],
      ['email', a.email],
      ['displayName', a.displayName],
      ['enableBasicAuth', String(a.enableBasicAuth)],
      ['createTime', a.createTime],
      ['updateTime', a.updateTime],
    ],
    a.name,
  );
}

export function registerServiceAccountCommands(program: Command): void {
  const accounts = program
    .command('service-accounts')
    .alias('sa')
    .description('service accounts (machine identities) of a project');

  example(
    accounts
      .command('list')
      .description('service accounts owned by the project')
      .action(
        action(async (ctx: Context) => {
          const items = await ctx.client.list<ServiceAccount>(
            `projects/${await ctx.project()}/serviceaccounts`,
            'serviceAccounts',
          );
          ctx.out.list(
            items,
            [
              { header: 'ID', value: (a) => idOf(a.name) },
              { header: 'DISPLAY NAME', value: (a) => a.displayName },
              { header: 'EMAIL', value: (a) => a.email },
              { header: 'BASIC AUTH', value: (a) => (a.enableBasicAuth ? 'on' : 'off') },
            ],
            (a) => a.name,
            'service accounts',
          );
        }),
      ),
    'sensorcloud service-accounts list',
  );

  example(
    accounts
      .command('get <service-account>')
      .description('one service account, by id or name')
      .action(
        action(async (ctx: Context, sa: string) => {
          printServiceAccount(ctx, await ctx.client.call<ServiceAccount>('GET', await ctx.name(sa, 'serviceaccounts')));
        }),
      ),
    'sensorcloud service-accounts get cvq2b1r0l4l9s3f2a9l0',
  );

  example(
    accounts
      .command('create')
      .description('create a service account; it has no rights until added as a member (members add <email>)')
      .option('--display-name <name>', 'display name')
      .option('--basic-auth', 'allow Basic Auth with its keys (OAuth2 tokens always work)')
      .action(
        action(async (ctx: Context, o: { displayName?: string; basicAuth?: boolean }) => {
          const body: ServiceAccountInput = { displayName: o.displayName ?? '', enableBasicAuth: o.basicAuth === true };
          const a = await ctx.client.call<ServiceAccount>('POST', `projects/${await ctx.project()}/serviceaccounts`, {
            body,
          });
          printServiceAccount(ctx, a);
          ctx.out.note(
            `Next: \`sensorcloud members add ${a.email} --role developer\` and \`sensorcloud keys create ${idOf(a.name)}\`.`,
          );
        }),
      ),
    'sensorcloud service-accounts create --display-name ci-bot',
  );

  example(
    accounts
      .command('update <service-account>')
      .description('change the display name or Basic Auth')
      .option('--display-name <name>', 'display name')
      .addOption(new Option('--basic-auth', 'allow Basic Auth'))
      .addOption(new Option('--no-basic-auth', 'refuse Basic Auth'))
      .action(
        action(async (ctx: Context, sa: string, o: { displayName?: string; basicAuth?: boolean }) => {
          const body: ServiceAccountInput = {};
          if (o.displayName !== undefined) body.displayName = o.displayName;
          if (o.basicAuth !== undefined) body.enableBasicAuth = o.basicAuth;
          if (Object.keys(body).length === 0)
            throw new UsageError('nothing to change: give --display-name, --basic-auth or --no-basic-auth');
          const a = await ctx.client.call<ServiceAccount>('PATCH', await ctx.name(sa, 'serviceaccounts'), {
            query: { updateMask: Object.keys(body).join(',') },
            body,
          });
          printServiceAccount(ctx, a);
        }),
      ),
    'sensorcloud service-accounts update cvq2b1r0l4l9s3f2a9l0 --no-basic-auth',
  );

  example(
    accounts
      .command('delete <service-account>')
      .description('delete a service account with its keys and memberships')
      .action(
        action(async (ctx: Context, sa: string) => {
          const name = await ctx.name(sa, 'serviceaccounts');
          ctx.out.done(await ctx.client.call('DELETE', name), `Deleted ${name}.`);
        }),
      ),
    'sensorcloud service-accounts delete cvq2b1r0l4l9s3f2a9l0',
  );
}
