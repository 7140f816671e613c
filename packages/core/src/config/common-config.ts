import path from 'node:path';
import type { LogLevel } from '../logging/logger.js';
import { type Environment, EnvReader } from './env-reader.js';

/** Settings every Hearth service reads the same way. */
export interface CommonConfig {
  /** Folder for the SQLite file, media and other blobs. */
  dataDir: string;
  /** PostgreSQL connection string; unset means SQLite under dataDir. */
  databaseUrl: string | undefined;
  /** Redis connection string; unset means the in-process bus. */
  redisUrl: string | undefined;
  logLevel: LogLevel;
}

/**
 * With a caller's reader, bad values are left on it for the caller's `finish()` (so they
 * are reported together with the service's own settings); without one, this throws.
 */
export function readCommonConfig(env: Environment, callerReader?: EnvReader): CommonConfig {
  const reader = callerReader ?? new EnvReader(env);
  const config: CommonConfig = {
    dataDir: path.resolve(reader.string('HEARTH_DATA_DIR', './data')),
    databaseUrl: reader.url('DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: reader.url('REDIS_URL', ['redis:', 'rediss:']),
    logLevel: reader.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
  };
  if (!callerReader) reader.finish();
  return config;
}
