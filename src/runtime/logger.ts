// The logger is pino (fastify's own); this module only builds it, so tests can pass a silent one.
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(options: { level?: string } = {}): Logger {
  return pino({
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    // Secrets must never reach the log, even by accident through a request dump.
    redact: {
      paths: ['req.headers.authorization', '*.secret', '*.password', '*.signatureSecret', 'secret', 'password'],
      censor: '[redacted]',
    },
  });
}

export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
