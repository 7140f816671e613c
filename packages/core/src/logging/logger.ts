import { type Logger, pino } from 'pino';

export type { Logger } from 'pino';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * Credentials can reach log lines through request headers and query strings; pino
 * removes these paths before a line is written.
 */
const redactedPaths = [
  'req.headers.authorization',
  'req.headers["x-relay-admin-token"]',
  'req.headers["x-channel-secret"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'secret',
  'token',
];

export function createLogger(options: { level: LogLevel; name?: string }): Logger {
  return pino({
    level: options.level,
    name: options.name ?? 'hearth',
    redact: { paths: redactedPaths, censor: '[redacted]' },
  });
}
