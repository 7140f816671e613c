import { createLogger, installShutdown, type Stoppable } from '@hearth/core';
import { RelayServer, readRelayConfig } from '@hearth/relay';

export type ServiceName = 'relay';

/**
 * Starts the named services in this process with settings from the environment, prints
 * where each listens (and a generated admin token, once), and stops them in reverse
 * order on SIGTERM/SIGINT.
 */
export async function startServices(names: readonly ServiceName[]): Promise<void> {
  const relayConfig = readRelayConfig(process.env);
  const logger = createLogger({ level: relayConfig.logLevel });
  const started: Stoppable[] = [];
  try {
    for (const name of names) {
      if (name === 'relay') {
        const relay = await RelayServer.create(relayConfig, logger.child({ service: 'relay' }));
        started.unshift({ name, stop: () => relay.destroy() });
        await relay.start();
        announceAdminToken(relay);
      }
    }
  } catch (error) {
    for (const service of started) await service.stop().catch(() => undefined);
    throw error;
  }
  installShutdown(started, { logger });
}

function announceAdminToken(relay: RelayServer): void {
  const { adminToken, logger } = relay.context;
  if (adminToken.source === 'generated') {
    logger.info(
      { adminToken: adminToken.value, adminUrl: `${relay.httpUrl}/api/state` },
      'generated the relay admin token; it is shown only this once (set RELAY_ADMIN_TOKEN, or run `hearth relay token`)',
    );
  } else if (adminToken.source === 'stored') {
    logger.info('relay admin token loaded from storage (`hearth relay token` prints it)');
  }
}
