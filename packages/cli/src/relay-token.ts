import { createLogger } from '@hearth/core';
import { RelayServer, readRelayConfig } from '@hearth/relay';

/** Prints the admin token the relay uses (from RELAY_ADMIN_TOKEN or storage). */
export async function printRelayAdminToken(): Promise<void> {
  const config = { ...readRelayConfig(process.env), port: 0, host: '127.0.0.1' };
  const relay = await RelayServer.create(config, createLogger({ level: 'warn' }));
  try {
    process.stdout.write(`${relay.context.adminToken.value}\n`);
  } finally {
    await relay.destroy();
  }
}
