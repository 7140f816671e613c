import type { Logger } from '../logging/logger.js';

export interface Stoppable {
  readonly name: string;
  stop(): Promise<void>;
}

export interface ShutdownOptions {
  logger: Logger;
  /** After this long the process exits even if something has not stopped. */
  hardStopMs?: number;
  signals?: readonly NodeJS.Signals[];
  exit?: (code: number) => void;
}

/**
 * On SIGTERM/SIGINT stops each service in order (each fails readiness, stops accepting
 * and drains on its own), then exits; a hard timer makes sure a stuck drain cannot keep
 * the process alive past the orchestrator's patience. Returns the trigger so callers and
 * tests can start the same sequence without a signal.
 */
export function installShutdown(services: readonly Stoppable[], options: ShutdownOptions): () => Promise<void> {
  const { logger, hardStopMs = 10_000, signals = ['SIGTERM', 'SIGINT'], exit = (code) => process.exit(code) } = options;
  let stopping: Promise<void> | undefined;

  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      logger.info('shutting down');
      const hardStop = setTimeout(() => {
        logger.error({ hardStopMs }, 'shutdown took too long; exiting now');
        exit(1);
      }, hardStopMs);
      hardStop.unref();
      let failed = false;
      for (const service of services) {
        try {
          await service.stop();
        } catch (error) {
          failed = true;
          logger.error({ err: error, service: service.name }, 'service did not stop cleanly');
        }
      }
      clearTimeout(hardStop);
      logger.info('stopped');
      exit(failed ? 1 : 0);
    })();
    return stopping;
  };

  for (const signal of signals) process.once(signal, () => void shutdown());
  return shutdown;
}
