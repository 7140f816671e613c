import type { Kysely } from 'kysely';
import type { ChannelRecord, UserRecord } from '../channels/channel-model.js';
import type { ChannelRow, RelaySchema, UserRow } from './schema.js';

/** Channels and their users in the database: the source of truth every node caches. */
export class ChannelStore {
  constructor(private readonly db: Kysely<RelaySchema>) {}

  async loadAll(): Promise<ChannelRecord[]> {
    const [channels, users] = await Promise.all([
      this.db.selectFrom('relay_channels').selectAll().orderBy('created_at').orderBy('channel_id').execute(),
      this.db.selectFrom('relay_users').selectAll().orderBy('channel_id').orderBy('position').execute(),
    ]);
    const usersByChannel = new Map<string, UserRecord[]>();
    for (const row of users) {
      const list = usersByChannel.get(row.channel_id) ?? [];
      list.push(userFromRow(row));
      usersByChannel.set(row.channel_id, list);
    }
    return channels.map((row) => channelFromRow(row, usersByChannel.get(row.channel_id) ?? []));
  }

  async load(channelId: string): Promise<ChannelRecord | undefined> {
    const row = await this.db
      .selectFrom('relay_channels')
      .selectAll()
      .where('channel_id', '=', channelId)
      .executeTakeFirst();
    if (!row) return undefined;
    const users = await this.db
      .selectFrom('relay_users')
      .selectAll()
      .where('channel_id', '=', channelId)
      .orderBy('position')
      .execute();
    return channelFromRow(row, users.map(userFromRow));
  }

  /** Creates the channel or updates its own fields; users are written separately. */
  async saveChannel(channel: Pick<ChannelRecord, 'channelId' | 'label' | 'secret' | 'tokenParam'>): Promise<void> {
    const now = Date.now();
    const fields = { label: channel.label, secret: channel.secret, token_param: channel.tokenParam, updated_at: now };
    await this.db
      .insertInto('relay_channels')
      .values({
        channel_id: channel.channelId,
        ...fields,
        instance_id: null,
        last_connected_at: null,
        last_disconnected_at: null,
        created_at: now,
      })
      .onConflict((conflict) => conflict.column('channel_id').doUpdateSet(fields))
      .execute();
  }

  /** Replaces the channel's whole user list in one transaction. */
  async replaceUsers(channelId: string, users: readonly UserRecord[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('relay_users').where('channel_id', '=', channelId).execute();
      if (users.length === 0) return;
      await trx
        .insertInto('relay_users')
        .values(users.map((user, position) => userToRow(channelId, user, position)))
        .execute();
    });
  }

  /** Creates or updates one user row; a new user goes after the existing ones. */
  async saveUser(channelId: string, user: UserRecord): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const { last } = await trx
        .selectFrom('relay_users')
        .select((eb) => eb.fn.max('position').as('last'))
        .where('channel_id', '=', channelId)
        .executeTakeFirstOrThrow();
      const row = userToRow(channelId, user, last === null ? 0 : Number(last) + 1);
      const { channel_id: _channel, sender_id: _sender, position: _position, ...fields } = row;
      await trx
        .insertInto('relay_users')
        .values(row)
        .onConflict((conflict) => conflict.columns(['channel_id', 'sender_id']).doUpdateSet(fields))
        .execute();
    });
  }

  async deleteUser(channelId: string, senderId: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('relay_users')
      .where('channel_id', '=', channelId)
      .where('sender_id', '=', senderId)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async delete(channelId: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('relay_users').where('channel_id', '=', channelId).execute();
      const result = await trx.deleteFrom('relay_channels').where('channel_id', '=', channelId).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  /** Records what the backend reported; kept apart from save() so it never races an admin edit. */
  async recordBackendActivity(
    channelId: string,
    activity: { instanceId?: string | null; lastConnectedAt?: number; lastDisconnectedAt?: number },
  ): Promise<void> {
    await this.db
      .updateTable('relay_channels')
      .set({
        ...(activity.instanceId !== undefined ? { instance_id: activity.instanceId } : {}),
        ...(activity.lastConnectedAt !== undefined ? { last_connected_at: activity.lastConnectedAt } : {}),
        ...(activity.lastDisconnectedAt !== undefined ? { last_disconnected_at: activity.lastDisconnectedAt } : {}),
      })
      .where('channel_id', '=', channelId)
      .execute();
  }
}

function channelFromRow(row: ChannelRow, users: UserRecord[]): ChannelRecord {
  return {
    channelId: row.channel_id,
    label: row.label,
    secret: row.secret,
    tokenParam: row.token_param,
    instanceId: row.instance_id,
    lastConnectedAt: row.last_connected_at === null ? null : Number(row.last_connected_at),
    lastDisconnectedAt: row.last_disconnected_at === null ? null : Number(row.last_disconnected_at),
    users,
  };
}

function userFromRow(row: UserRow): UserRecord {
  return {
    senderId: row.sender_id,
    chatId: row.chat_id,
    token: row.token,
    allowAgents: row.allow_agents === null ? null : (JSON.parse(row.allow_agents) as string[]),
    enabled: Number(row.enabled) === 1,
  };
}

function userToRow(channelId: string, user: UserRecord, position: number): UserRow {
  return {
    channel_id: channelId,
    sender_id: user.senderId,
    chat_id: user.chatId,
    token: user.token,
    allow_agents: user.allowAgents === null ? null : JSON.stringify(user.allowAgents),
    enabled: user.enabled ? 1 : 0,
    position,
  };
}
