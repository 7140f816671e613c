/** A channel as the relay holds it in memory and in the database. */
export interface ChannelRecord {
  channelId: string;
  label: string | null;
  secret: string;
  tokenParam: string;
  instanceId: string | null;
  lastConnectedAt: number | null;
  lastDisconnectedAt: number | null;
  /** In insertion order; senderId is unique within the channel. */
  users: UserRecord[];
}

export interface UserRecord {
  senderId: string;
  chatId: string | null;
  token: string;
  /** Lowercased agent ids; null means every agent. */
  allowAgents: string[] | null;
  enabled: boolean;
}

/** The User object of the seed, as sent in listings and in relay.client.open. */
export interface UserView extends UserRecord {
  id: string;
}

export function userView(user: UserRecord): UserView {
  return { id: user.senderId, ...user };
}

/**
 * Identifiers appear in URL paths and query strings, so they are limited to characters
 * that need no escaping there (the seed leaves the rule open).
 */
export const identifierPattern = /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$/;
export const tokenParamPattern = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Query parameters the relay itself reads; a channel's token may not use their names. */
export const reservedQueryParameters = ['channelId', 'chatId', 'agentId'];

/**
 * Shows enough of a secret to tell two apart without revealing it: "" stays "", up to
 * 8 characters show the first 2, longer ones the first and last 4.
 */
export function maskSecret(secret: string): string {
  if (secret.length === 0) return '';
  if (secret.length <= 8) return `${secret.slice(0, 2)}***`;
  return `${secret.slice(0, 4)}***${secret.slice(-4)}`;
}

/** Whether a user may talk to `agentId` (no agent named means the backend's default). */
export function userAllowsAgent(user: UserRecord, agentId: string | undefined): boolean {
  if (user.allowAgents === null || agentId === undefined) return true;
  return user.allowAgents.includes(agentId.toLowerCase());
}
