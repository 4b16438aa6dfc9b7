// `sensorcloud admin …`: recovery commands for an operator locked out of their installation. They work on the data
// dir directly with the server stopped, and refuse while a server (or another admin command) holds the data dir's
// lock. Like `serve`, the service code they need is imported only when one of them runs.
import type { Command } from 'commander';
import type { AdminOptions } from './admin-run.ts';
import { example } from './context.ts';

function withStoreOptions(command: Command): Command {
  return command
    .option('--data-dir <dir>', 'the data dir of the installation (env SENSORCLOUD_DATA_DIR, default ./data)')
    .option('--database-url <url>', 'postgres://… for a PostgreSQL installation (env SENSORCLOUD_DATABASE_URL)');
}

export function registerAdminCommands(program: Command): void {
  const admin = program
    .command('admin')
    .description(
      'recovery: a new password, a new key, a new master key (on SQLite with the server stopped; on PostgreSQL the first two while the cluster runs); the move from SQLite to PostgreSQL',
    );

  example(
    withStoreOptions(admin.command('reset-password <email>'))
      .description('give a console user a new password: generated and printed once, or read with --password-stdin')
      .option(
        '--password-stdin',
        'read the new password from standard input (asked without echo on a terminal); at least 12 characters',
      )
      .action(async (email: string, options: AdminOptions & { passwordStdin?: boolean }, command: Command) => {
        const { runResetPassword } = await import('./admin-run.ts');
        await runResetPassword(email, options, command);
      }),
    'sensorcloud admin reset-password admin@sensorcloud.local',
    'sensorcloud admin reset-password ops@example.org --password-stdin < new-password.txt',
  );

  example(
    withStoreOptions(admin.command('rotate-master-key'))
      .description(
        'seal every key secret and signature secret again under a new master key, then install that key in the master key file (the old one is kept beside it as .previous)',
      )
      .requiredOption('--new-key-file <file>', 'the new key: 64 hex characters (openssl rand -hex 32 > new.key)')
      .action(async (options: AdminOptions & { newKeyFile: string }, command: Command) => {
        const { runRotateMasterKey } = await import('./admin-run.ts');
        await runRotateMasterKey(options, command);
      }),
    'openssl rand -hex 32 > /root/new.key && sensorcloud admin rotate-master-key --new-key-file /root/new.key --data-dir /var/lib/sensorcloud',
  );

  example(
    admin
      .command('copy-to-postgres')
      .option('--data-dir <dir>', 'the data dir of the SQLite installation (env SENSORCLOUD_DATA_DIR, default ./data)')
      .option(
        '--database-url <url>',
        'postgres://… of the new, empty database to copy into (env SENSORCLOUD_DATABASE_URL)',
      )
      .description(
        "copy the SQLite installation in the data dir (the server stopped) into a new, empty PostgreSQL database, for a cluster: everything in it, its queue too; the cluster then uses the data dir's master key",
      )
      .action(async (options: AdminOptions, command: Command) => {
        const { runCopyToPostgres } = await import('./admin-run.ts');
        await runCopyToPostgres(options, command);
      }),
    'sensorcloud admin copy-to-postgres --data-dir /var/lib/sensorcloud --database-url postgres://sensorcloud@db.internal/sensorcloud',
  );

  example(
    withStoreOptions(admin.command('create-key'))
      .description('a new key for the bootstrap service account (or --service-account); the secret is printed once')
      .option(
        '--service-account <email>',
        'the service account to give the key (default: the one bootstrap.json names)',
      )
      .action(async (options: AdminOptions & { serviceAccount?: string }, command: Command) => {
        const { runCreateKey } = await import('./admin-run.ts');
        await runCreateKey(options, command);
      }),
    'sensorcloud admin create-key --data-dir /var/lib/sensorcloud',
  );
}
