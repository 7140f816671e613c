import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '@hearth/core';
import pg from 'pg';
import { readRelayConfig } from '../../src/config.js';
import { RelayServer } from '../../src/server.js';

export const adminToken = 'test-admin-token-0123456789abcdef';

/**
 * Environment with the per-client message limit and the per-address connection limit off,
 * for suites that open many sockets from 127.0.0.1 to test something else (limits.test.ts
 * tests the limits themselves).
 */
export const limitsOff: Record<string, string> = {
  RELAY_CLIENT_MESSAGES_PER_MINUTE: '0',
  RELAY_MAX_CONNECTIONS_PER_IP: '0',
};

export interface RelayHarness {
  relay: RelayServer;
  /** http://127.0.0.1:<port> */
  url: string;
  /** ws://127.0.0.1:<port> */
  wsUrl: string;
  dataDir: string;
  /** Environment the relay was started with, for restarting it on the same storage. */
  env: Record<string, string>;
  /** fetch() against the relay, with the admin token unless `admin: false`. */
  request(pathAndQuery: string, init?: RequestInit & { admin?: boolean; json?: unknown }): Promise<Response>;
  /** Stops the relay, keeping its storage. */
  stop(): Promise<void>;
  /** Stops the relay and removes its storage. */
  cleanup(): Promise<void>;
}

export interface HarnessOptions {
  /** Extra or overriding environment variables (RELAY_*, LOG_LEVEL…). */
  env?: Record<string, string>;
  /** Restart on the storage of an earlier harness. */
  reuse?: Pick<RelayHarness, 'dataDir' | 'env'>;
}

/**
 * Starts a real relay on an ephemeral port with its own storage: a temporary SQLite
 * folder, or, when DATABASE_URL is set (the CI storage pass), a fresh PostgreSQL schema.
 * REDIS_URL, when set, is passed on so the bus is Redis too.
 */
export async function startRelay(options: HarnessOptions = {}): Promise<RelayHarness> {
  const dataDir = options.reuse?.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'hearth-relay-test-')));
  const env: Record<string, string> = options.reuse?.env ?? {
    HEARTH_DATA_DIR: dataDir,
    RELAY_PORT: '0',
    RELAY_HOST: '127.0.0.1',
    RELAY_ADMIN_TOKEN: adminToken,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(process.env.DATABASE_URL ? { DATABASE_URL: await freshPostgresSchema(process.env.DATABASE_URL) } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    ...options.env,
  };
  const config = readRelayConfig(env);
  const relay = await RelayServer.create(config, createLogger({ level: config.logLevel }));
  await relay.start();
  const url = relay.httpUrl;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await relay.destroy();
  };
  return {
    relay,
    url,
    wsUrl: relay.wsUrl,
    dataDir,
    env,
    async request(pathAndQuery, init = {}) {
      const { admin = true, json, headers, ...rest } = init;
      const merged = new Headers(headers);
      if (admin && !merged.has('x-relay-admin-token')) merged.set('x-relay-admin-token', adminToken);
      if (json !== undefined) merged.set('content-type', 'application/json');
      return fetch(`${url}${pathAndQuery}`, {
        ...rest,
        headers: merged,
        ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}),
      });
    },
    stop,
    async cleanup() {
      await stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A new empty schema, so each relay under test starts from an empty PostgreSQL database. */
async function freshPostgresSchema(databaseUrl: string): Promise<string> {
  const schema = `test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`create schema ${schema}`);
  } finally {
    await client.end();
  }
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** Whether this run exercises PostgreSQL (the hosted store). */
export const usingPostgres = Boolean(process.env.DATABASE_URL);
