import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import type { Logger } from '../logging/logger.js';
import { redactUrl } from '../logging/redact-url.js';

export type DatabaseDialect = 'sqlite' | 'postgres';

export interface Database<Schema> {
  db: Kysely<Schema>;
  dialect: DatabaseDialect;
  /** Where the data lives, safe to log (no password). */
  location: string;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** PostgreSQL connection string; without it the database is SQLite in `dataDir`. */
  databaseUrl?: string | undefined;
  dataDir: string;
  /** SQLite file name inside dataDir. */
  sqliteFile?: string;
  logger: Logger;
}

/**
 * Opens the one query layer every service uses: SQLite (WAL) for the embedded default,
 * PostgreSQL when a URL is given. Callers write dialect-neutral Kysely queries.
 */
export async function openDatabase<Schema>(options: OpenDatabaseOptions): Promise<Database<Schema>> {
  if (options.databaseUrl) return openPostgres<Schema>(options.databaseUrl, options.logger);
  return openSqlite<Schema>(path.join(options.dataDir, options.sqliteFile ?? 'hearth.sqlite'));
}

async function openPostgres<Schema>(url: string, logger: Logger): Promise<Database<Schema>> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    // Without it, a firewalled host waits for the operating system's TCP timeout.
    connectionTimeoutMillis: 10_000,
    types: { getTypeParser: numericBigints },
  });
  pool.on('error', (error) => logger.error({ err: error }, 'idle PostgreSQL connection failed'));
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    await pool.end();
    throw new Error(`cannot reach PostgreSQL at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  return { db, dialect: 'postgres', location: redactUrl(url), close: () => db.destroy() };
}

async function openSqlite<Schema>(file: string): Promise<Database<Schema>> {
  mkdirSync(path.dirname(file), { recursive: true });
  const sqlite = new SqliteDatabase(file);
  // WAL lets readers go on while a write commits; NORMAL sync is durable across process
  // crashes (the case we care about) and much cheaper than FULL.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, dialect: 'sqlite', location: file, close: () => db.destroy() };
}

/**
 * PostgreSQL sends BIGINT as text because it can exceed 2^53; our BIGINT columns hold
 * millisecond timestamps and byte counts, which fit, so they come back as numbers as on
 * SQLite.
 */
const numericBigints: typeof pg.types.getTypeParser = ((oid: number, format?: 'text' | 'binary') =>
  oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser;
