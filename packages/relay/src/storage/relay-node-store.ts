import type { Kysely } from 'kysely';
import type { RelaySchema } from './schema.js';

export interface RelayNode {
  id: string;
  name: string;
  url: string;
  adminToken?: string;
}

/** The registry of relay nodes an administrator can switch between (hosted store only). */
export class RelayNodeStore {
  constructor(private readonly db: Kysely<RelaySchema>) {}

  async list(): Promise<RelayNode[]> {
    const rows = await this.db.selectFrom('relay_nodes').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      url: row.url,
      ...(row.admin_token === null ? {} : { adminToken: row.admin_token }),
    }));
  }

  /** Creates or updates a node; an update without adminToken keeps the stored one. */
  async upsert(node: RelayNode): Promise<void> {
    const values = {
      name: node.name,
      url: node.url,
      ...(node.adminToken === undefined ? {} : { admin_token: node.adminToken }),
    };
    await this.db
      .insertInto('relay_nodes')
      .values({ id: node.id, admin_token: null, ...values, created_at: Date.now() })
      .onConflict((conflict) => conflict.column('id').doUpdateSet(values))
      .execute();
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('relay_nodes').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
