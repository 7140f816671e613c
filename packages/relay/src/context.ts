import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { type Bus, type Database, type Logger, openBus, openDatabase, runMigrations } from '@hearth/core';
import type { Kysely } from 'kysely';
import { AdminAuthenticator } from './admin/admin-auth.js';
import { OidcVerifier } from './admin/oidc-verifier.js';
import { ChannelDirectory } from './channels/channel-directory.js';
import { generateToken } from './channels/credentials.js';
import type { RelayConfig } from './config.js';
import { MediaLibrary } from './media/media-library.js';
import { RelayMetrics } from './observability/metrics.js';
import { ChannelStore } from './storage/channel-store.js';
import { relayMigrations } from './storage/migrations.js';
import { RelayNodeStore } from './storage/relay-node-store.js';
import type { RelaySchema } from './storage/schema.js';
import { SettingsStore } from './storage/settings-store.js';
import { ConnectionHub } from './ws/connection-hub.js';

export interface RelayContext {
  config: Readonly<RelayConfig>;
  logger: Logger;
  /** Names this process among the relay nodes sharing one bus. */
  nodeId: string;
  database: Database<RelaySchema>;
  bus: Bus;
  directory: ChannelDirectory;
  hub: ConnectionHub;
  metrics: RelayMetrics;
  auth: AdminAuthenticator;
  media: MediaLibrary;
  /** Present only with a hosted store (PostgreSQL). */
  relayNodes: RelayNodeStore | undefined;
  adminToken: AdminToken;
}

export interface AdminToken {
  value: string;
  /** Where the token came from; 'generated' only on the start that created it. */
  source: 'environment' | 'stored' | 'generated';
}

const mediaRetentionMs = 7 * 24 * 60 * 60 * 1000;

/** The composition root: builds every dependency of the relay once, in order. */
export async function createRelayContext(config: Readonly<RelayConfig>, logger: Logger): Promise<RelayContext> {
  const database = await openDatabase<RelaySchema>({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    logger: logger.child({ subsystem: 'database' }),
  });
  try {
    await runMigrations(database.db as Kysely<unknown>, 'relay', relayMigrations);
    const bus = await openBus(config.redisUrl, logger.child({ subsystem: 'bus' }));
    const nodeId = randomUUID();
    const directory = new ChannelDirectory(
      new ChannelStore(database.db),
      bus,
      nodeId,
      logger.child({ subsystem: 'channels' }),
    );
    await directory.open();
    const hub = new ConnectionHub();
    directory.onChange((change) => hub.applyChannelChange(change));
    const adminToken = await resolveAdminToken(config, new SettingsStore(database.db));
    const oidc = config.oidc ? new OidcVerifier(config.oidc, logger.child({ subsystem: 'oidc' })) : undefined;
    const media = new MediaLibrary(
      database.db,
      {
        directory: path.join(config.dataDir, 'relay-media'),
        maxBytes: 10 * 1024 * 1024,
        retentionMs: mediaRetentionMs,
        sweepIntervalMs: 60 * 60 * 1000,
      },
      logger.child({ subsystem: 'media' }),
    );
    await media.open();
    return {
      config,
      logger,
      nodeId,
      database,
      bus,
      directory,
      hub,
      metrics: new RelayMetrics(hub),
      auth: new AdminAuthenticator(adminToken.value, oidc, directory),
      media,
      relayNodes: database.dialect === 'postgres' ? new RelayNodeStore(database.db) : undefined,
      adminToken,
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** The configured token, else the one generated on an earlier start, else a new one. */
async function resolveAdminToken(config: Readonly<RelayConfig>, settings: SettingsStore): Promise<AdminToken> {
  if (config.adminToken) return { value: config.adminToken, source: 'environment' };
  const { value, inserted } = await settings.getOrInsert('admin_token', generateToken());
  return { value, source: inserted ? 'generated' : 'stored' };
}
