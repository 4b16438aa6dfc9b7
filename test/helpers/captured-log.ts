// A logger for tests that keeps the lines it is told (pino's call form: fields, then the message), of the levels
// asked for; the others are dropped.
import type { Logger } from '../../src/runtime/logger.ts';

export type LoggedLevel = 'info' | 'warn' | 'error';

export interface LoggedLine {
  level: LoggedLevel;
  fields: Record<string, unknown>;
  message: string;
}

export function capturedLog(levels: readonly LoggedLevel[] = ['info', 'warn', 'error']): {
  logger: Logger;
  lines: LoggedLine[];
} {
  const lines: LoggedLine[] = [];
  const keep = (level: LoggedLevel) => (fields: Record<string, unknown>, message: string) => {
    if (levels.includes(level)) lines.push({ level, fields, message });
  };
  const logger = { info: keep('info'), warn: keep('warn'), error: keep('error') } as unknown as Logger;
  return { logger, lines };
}
