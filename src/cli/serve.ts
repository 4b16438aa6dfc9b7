// `sensorcloud serve`: flags override environment variables, which override defaults. The service (fastify,
// better-sqlite3, the delivery engine) is imported only when this command runs, so client commands start fast.
import type { Command } from 'commander';

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the API, delivery engine and emulator in this process')
    .option('--port <port>', 'port to listen on (env PORT, default 8080)')
    .option('--host <host>', 'address to listen on (env HOST, default 127.0.0.1)')
    .option('--data-dir <dir>', 'SQLite database, master key and bootstrap.json (env SENSORCLOUD_DATA_DIR, default ./data)')
    .option('--database-url <url>', 'postgres://… selects PostgreSQL (env SENSORCLOUD_DATABASE_URL)')
    .option('--demo', 'emulated sensors in the bootstrap project produce events and heartbeats')
    .addHelpText('after', '\nExample:\n  $ sensorcloud serve --port 8080 --data-dir ./data\n')
    .action(async (flags: { port?: string; host?: string; dataDir?: string; databaseUrl?: string; demo?: boolean }) => {
      const { ConfigError, loadConfig } = await import('../config.ts');
      const { startService } = await import('../main.ts');
      let config;
      try {
        config = loadConfig(process.env, flags);
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`sensorcloud: ${err.message}\n`);
          process.exit(2);
        }
        throw err;
      }
      const service = await startService(config);
      process.stdout.write(`Sensor Cloud listening on ${service.url} (API ${service.url}/v2, data dir ${config.dataDir})\n`);
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
