import { type Kysely, type Migration, Migrator, PostgresAdapter, sql } from 'kysely';

export type { Migration } from 'kysely';

/**
 * Brings one package's tables up to date. Each package keeps its own history table
 * (`<prefix>_migrations`) so services can be deployed and upgraded independently
 * against one database.
 */
export async function runMigrations(
  db: Kysely<unknown>,
  tablePrefix: string,
  migrations: Record<string, Migration>,
): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: `${tablePrefix}_migrations`,
    migrationLockTableName: `${tablePrefix}_migrations_lock`,
    migrationTableSchema: await postgresCurrentSchema(db),
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error) {
    const failed = results.find((result) => result.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} of ${tablePrefix} failed: ${String(error)}`, {
      cause: error,
    });
  }
  return results.map((result) => result.migrationName);
}

/**
 * Kysely decides whether the history tables exist by looking through every schema of a
 * PostgreSQL database, so a `relay_migrations` in another schema (another deployment, a
 * test schema) would make it skip creating ours. Naming the schema in use scopes the check.
 */
async function postgresCurrentSchema(db: Kysely<unknown>): Promise<string | undefined> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return undefined;
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema ?? undefined;
}
