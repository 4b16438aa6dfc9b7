// `sensorcloud serve`: flags override environment variables, which override defaults. The service (fastify,
// better-sqlite3, the delivery engine) is imported only when this command runs, so client commands start fast.
import type { Command } from 'commander';
import { join } from 'node:path';
import { packageVersion } from '../delivery/push-headers.ts';
import { redactDatabaseUrl } from '../runtime/database-url.ts';
import type { Logger } from '../runtime/logger.ts';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the API, delivery engine and emulator in this process')
    .option('--port <port>', 'port to listen on (env PORT, default 8080)')
    .option('--host <host>', 'address to listen on (env HOST, default 127.0.0.1)')
    .option(
      '--data-dir <dir>',
      'SQLite database, master key and bootstrap.json (env SENSORCLOUD_DATA_DIR, default ./data)',
    )
    .option('--database-url <url>', 'postgres://… selects PostgreSQL (env SENSORCLOUD_DATABASE_URL)')
    .option('--demo', 'emulated sensors in the bootstrap project produce events and heartbeats')
    .addHelpText('after', '\nExample:\n  $ sensorcloud serve --port 8080 --data-dir ./data\n')
    .action(async (flags: { port?: string; host?: string; dataDir?: string; databaseUrl?: string; demo?: boolean }) => {
      const { ConfigError, loadConfig, notableSettings } = await import('../config.ts');
      const { startService } = await import('../main.ts');
      const { StartupError } = await import('../runtime/startup-error.ts');
      let config;
      let service;
      try {
        config = loadConfig(process.env, flags);
        service = await startService(config);
      } catch (err) {
        // The operator's mistakes: one line that says what to change, no stack trace (which is for bugs).
        if (err instanceof ConfigError || err instanceof StartupError) {
          process.stderr.write(`sensorcloud: ${err.message}\n`);
          process.exit(2);
        }
        throw err;
      }
      announceListening(
        service.deps.logger,
        service.url,
        service.deps.config.publicUrl,
        config.dataDir,
        config.databaseUrl,
        notableSettings(config),
      );
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        service.deps.logger.info({ signal }, 'shutting down');
        // Attempts in flight may take up to twice the 10 s push timeout to settle; unsettled rows retry next start.
        const force = setTimeout(() => process.exit(1), 25_000);
        force.unref();
        await service.close();
        process.exit(0);
      };
      process.on('SIGINT', () => void stop('SIGINT'));
      process.on('SIGTERM', () => void stop('SIGTERM'));
    });
}

/**
 * The one log line that says the service is up and where: "listening on <url>" and every URL an operator opens
 * (the operator contract: listening is announced on stdout in one line containing the URL), with the release, which
 * tells the processes of a cluster apart during a rolling upgrade, and the database (a PostgreSQL URL without its
 * password), which shows that every process of a cluster uses the same one, and the settings that change what is
 * kept or trusted (notableSettings). Printed whatever LOG_LEVEL says, since scripts and people wait for it.
 */
function announceListening(
  logger: Logger,
  url: string,
  publicUrl: string,
  dataDir: string,
  databaseUrl: string | null,
  settings: string[],
): void {
  const urls = {
    console: `${publicUrl}/`,
    api: `${publicUrl}/v2`,
    health: `${publicUrl}/healthz`,
    metrics: `${publicUrl}/metrics`,
    openapi: `${publicUrl}/v2/openapi.json`,
  };
  logger.child({}, { level: 'info' }).info(
    {
      url,
      ...urls,
      dataDir,
      database: databaseUrl === null ? join(dataDir, 'sensorcloud.db') : redactDatabaseUrl(databaseUrl),
      version: packageVersion(),
      settings,
    },
    `Sensor Cloud listening on ${url}: console ${urls.console}, API ${urls.api}, health ${urls.health}, metrics ${urls.metrics}, OpenAPI ${urls.openapi}${settings.length > 0 ? `; ${settings.join('; ')}` : ''}`,
  );
}
