import { readFile } from 'node:fs/promises';
import { createLogger } from '@hearth/core';
import { importLegacyConfig, RelayServer, readRelayConfig } from '@hearth/relay';

/**
 * Imports the old relay's config file into the configured store. Run it with the same
 * HEARTH_DATA_DIR / DATABASE_URL as the relay; with REDIS_URL set, running relays pick the
 * channels up at once, otherwise at their next start.
 */
export async function importRelayConfigFile(file: string): Promise<void> {
  const text = await readFile(file, 'utf8');
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  const config = { ...readRelayConfig(process.env), port: 0, host: '127.0.0.1' };
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel });
  const relay = await RelayServer.create(config, logger);
  try {
    const summary = await importLegacyConfig(document, relay.context.directory);
    process.stdout.write(
      `imported ${summary.channels} channel(s) and ${summary.users} user(s) into ${relay.context.database.location}\n`,
    );
  } finally {
    await relay.destroy();
  }
}
