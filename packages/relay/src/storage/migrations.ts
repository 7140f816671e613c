import type { Kysely, Migration } from 'kysely';

/** The relay's schema history. Never edit a shipped migration; add a new one. */
export const relayMigrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('relay_channels')
        .addColumn('channel_id', 'varchar(128)', (column) => column.primaryKey())
        .addColumn('label', 'text')
        .addColumn('secret', 'text', (column) => column.notNull())
        .addColumn('token_param', 'varchar(64)', (column) => column.notNull().defaultTo('token'))
        .addColumn('instance_id', 'text')
        .addColumn('last_connected_at', 'bigint')
        .addColumn('last_disconnected_at', 'bigint')
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('updated_at', 'bigint', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('relay_users')
        .addColumn('channel_id', 'varchar(128)', (column) =>
          column.notNull().references('relay_channels.channel_id').onDelete('cascade'),
        )
        .addColumn('sender_id', 'varchar(128)', (column) => column.notNull())
        .addColumn('chat_id', 'text')
        .addColumn('token', 'text', (column) => column.notNull())
        .addColumn('allow_agents', 'text')
        .addColumn('enabled', 'integer', (column) => column.notNull().defaultTo(1))
        .addColumn('position', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('relay_users_pk', ['channel_id', 'sender_id'])
        .execute();
      await db.schema
        .createTable('relay_nodes')
        .addColumn('id', 'varchar(128)', (column) => column.primaryKey())
        .addColumn('name', 'text', (column) => column.notNull())
        .addColumn('url', 'text', (column) => column.notNull())
        .addColumn('admin_token', 'text')
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .execute();
      await db.schema
        .createTable('relay_media')
        .addColumn('id', 'varchar(36)', (column) => column.primaryKey())
        .addColumn('file_name', 'varchar(64)', (column) => column.notNull())
        .addColumn('original_name', 'text')
        .addColumn('mime_type', 'text', (column) => column.notNull())
        .addColumn('size', 'bigint', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .execute();
      await db.schema.createIndex('relay_media_created_at').on('relay_media').column('created_at').execute();
      await db.schema
        .createTable('relay_settings')
        .addColumn('key', 'varchar(64)', (column) => column.primaryKey())
        .addColumn('value', 'text', (column) => column.notNull())
        .execute();
    },
  },
};
