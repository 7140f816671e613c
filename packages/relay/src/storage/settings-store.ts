import type { Kysely } from 'kysely';
import type { RelaySchema } from './schema.js';

/** Small values the relay generates once and must keep across restarts. */
export class SettingsStore {
  constructor(private readonly db: Kysely<RelaySchema>) {}

  async get(key: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('relay_settings').select('value').where('key', '=', key).executeTakeFirst();
    return row?.value;
  }

  /**
   * Stores `value` unless another node stored one first, and returns the value that won,
   * so two nodes starting together agree on one generated admin token.
   */
  async getOrInsert(key: string, value: string): Promise<{ value: string; inserted: boolean }> {
    const result = await this.db
      .insertInto('relay_settings')
      .values({ key, value })
      .onConflict((conflict) => conflict.column('key').doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0n) > 0) return { value, inserted: true };
    const stored = await this.get(key);
    return { value: stored ?? value, inserted: false };
  }
}
