// `keys`: the key pairs of a service account. The secret is printed once, by `keys create`, with a warning; no
// other command can show it again (the API never returns it twice).
import type { Command } from 'commander';
import type { CreateKeyResponse, Key, ServiceAccount } from '../../wire/service-accounts.ts';
import { action, example, idOf, type Context } from '../context.ts';
import { UsageError } from '../errors.ts';

/** A key's full name: a full name as it is, else the key id under --service-account. */
async function keyName(ctx: Context, key: string, serviceAccount: string | undefined): Promise<string> {
  if (key.startsWith('projects/')) {
    if (!/^projects\/[^/]+\/serviceaccounts\/[^/]+\/keys\/[^/]+$/.test(key))
      throw new UsageError(`"${key}" is not a key name (projects/<p>/serviceaccounts/<sa>/keys/<k>)`);
    return key;
  }
  if (!serviceAccount)
    throw new UsageError(
      'give the key as projects/<p>/serviceaccounts/<sa>/keys/<k>, or its id with --service-account',
    );
  return `${await ctx.name(serviceAccount, 'serviceaccounts')}/keys/${key}`;
}

const printKey = (ctx: Context, k: Key) =>
  ctx.out.record(
    k,
    [
      ['name', k.name],
      ['id', k.id],
      ['createTime', k.createTime],
    ],
    k.name,
  );

export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('keys of service accounts (key id + secret)');

  example(
    keys
      .command('list <service-account>')
      .description('keys of a service account (never their secrets)')
      .action(
        action(async (ctx: Context, sa: string) => {
          const items = await ctx.client.list<Key>(`${await ctx.name(sa, 'serviceaccounts')}/keys`, 'keys');
          ctx.out.list(
            items,
            [
              { header: 'ID', value: (k) => k.id },
              { header: 'CREATED', value: (k) => k.createTime },
            ],
            (k) => k.name,
            'keys',
          );
        }),
      ),
    'sensorcloud keys list cvq2b1r0l4l9s3f2a9l0',
  );

  example(
    keys
      .command('create <service-account>')
      .description('create a key; its secret is printed now and never again')
      .action(
        action(async (ctx: Context, sa: string) => {
          const account = await ctx.name(sa, 'serviceaccounts');
          const res = await ctx.client.call<CreateKeyResponse>('POST', `${account}/keys`);
          if (ctx.out.json) {
            ctx.out.printJson(res);
          } else if (ctx.out.quiet) {
            ctx.out.line(`${res.key.id}\t${res.secret}`);
          } else {
            // The email makes the key usable with OAuth2 (`login --service-account`); one more read, after the key exists.
            const email = await ctx.client.call<ServiceAccount>('GET', account).then(
              (a) => a.email,
              () => '',
            );
            ctx.out.record(
              res,
              [
                ['name', res.key.name],
                ['keyId', res.key.id],
                ['secret', res.secret],
                ['serviceAccount', email],
                ['createTime', res.key.createTime],
              ],
              res.key.name,
            );
          }
          ctx.out.warn(
            'the secret is shown only this once: store it now (it cannot be read again, only replaced by a new key)',
          );
        }),
      ),
    `sensorcloud keys create cvq2b1r0l4l9s3f2a9l0`,
  );

  example(
    keys
      .command('get <key>')
      .description('one key, by name, or by id with --service-account')
      .option('--service-account <service-account>', 'the service account of a key given by id')
      .action(
        action(async (ctx: Context, key: string, o: { serviceAccount?: string }) => {
          printKey(ctx, await ctx.client.call<Key>('GET', await keyName(ctx, key, o.serviceAccount)));
        }),
      ),
    'sensorcloud keys get cvq2b1r0l4l9s3f2a9k0 --service-account cvq2b1r0l4l9s3f2a9l0',
  );

  example(
    keys
      .command('delete <key>')
      .description('delete a key; Basic Auth with it and tokens made with it stop working at once')
      .option('--service-account <service-account>', 'the service account of a key given by id')
      .action(
        action(async (ctx: Context, key: string, o: { serviceAccount?: string }) => {
          const name = await keyName(ctx, key, o.serviceAccount);
          ctx.out.done(await ctx.client.call('DELETE', name), `Deleted key ${idOf(name)}.`);
        }),
      ),
    'sensorcloud keys delete cvq2b1r0l4l9s3f2a9k0 --service-account cvq2b1r0l4l9s3f2a9l0',
  );
}
