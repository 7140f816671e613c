import type { ChannelDirectory, UserInput } from '../channels/channel-directory.js';

export interface LegacyImportSummary {
  channels: number;
  users: number;
}

interface LegacyUser {
  id?: unknown;
  senderId?: unknown;
  chatId?: unknown;
  token?: unknown;
  allowAgents?: unknown;
  enabled?: unknown;
}

/**
 * Imports the old relay's config file (`{"version":1,"channels":{"<id>":{...}}}`) into the
 * database. Each channel goes through the same validation as the REST API and replaces a
 * stored channel of the same id; users may be an array or an object keyed by senderId.
 */
export async function importLegacyConfig(document: unknown, directory: ChannelDirectory): Promise<LegacyImportSummary> {
  if (typeof document !== 'object' || document === null) throw new Error('config file must hold a JSON object');
  const { version, channels } = document as { version?: unknown; channels?: unknown };
  if (version !== 1) throw new Error(`unsupported config version ${JSON.stringify(version)}; expected 1`);
  if (typeof channels !== 'object' || channels === null) throw new Error('config file has no "channels" object');

  const summary: LegacyImportSummary = { channels: 0, users: 0 };
  for (const [key, value] of Object.entries(channels)) {
    const channel = (value ?? {}) as Record<string, unknown>;
    const users = legacyUsers(channel.users).map(toUserInput);
    await directory.saveChannel({
      channelId: typeof channel.channelId === 'string' ? channel.channelId : key,
      label: optionalString(channel.label) ?? optionalString(channel.name),
      secret: optionalString(channel.secret),
      tokenParam: optionalString(channel.tokenParam),
      users,
    });
    summary.channels += 1;
    summary.users += users.length;
  }
  return summary;
}

function legacyUsers(users: unknown): LegacyUser[] {
  if (Array.isArray(users)) return users as LegacyUser[];
  if (typeof users === 'object' && users !== null) {
    return Object.entries(users).map(([senderId, user]) => ({ senderId, ...(user as LegacyUser) }));
  }
  return [];
}

function toUserInput(user: LegacyUser): UserInput {
  return {
    senderId: String(user.senderId ?? user.id ?? ''),
    chatId: optionalString(user.chatId) ?? null,
    token: optionalString(user.token),
    allowAgents:
      Array.isArray(user.allowAgents) || typeof user.allowAgents === 'string'
        ? (user.allowAgents as string[] | string)
        : null,
    enabled: typeof user.enabled === 'boolean' ? user.enabled : true,
  };
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}
