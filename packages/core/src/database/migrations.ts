import { type Kysely, type Migration, Migrator } from 'kysely';

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
