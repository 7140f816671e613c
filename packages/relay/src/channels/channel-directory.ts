import type { Bus, Logger } from '@hearth/core';
import { BadRequestError, NotFoundError } from '../errors.js';
import type { ChannelStore } from '../storage/channel-store.js';
import {
  type ChannelRecord,
  identifierPattern,
  reservedQueryParameters,
  tokenParamPattern,
  type UserRecord,
} from './channel-model.js';
import { credentialsEqual, generateToken } from './credentials.js';

export interface ChannelInput {
  channelId: string;
  label?: string | null | undefined;
  secret?: string | undefined;
  tokenParam?: string | undefined;
  /** When present, replaces the channel's whole user list. */
  users?: UserInput[] | undefined;
}

export interface UserInput {
  senderId: string;
  chatId?: string | null | undefined;
  token?: string | undefined;
  /** An array, or a comma-separated string; "*" means every agent. */
  allowAgents?: string[] | string | null | undefined;
  enabled?: boolean | undefined;
}

/** What changed in one channel; `undefined` on a side means the channel did not exist. */
export interface ChannelChange {
  before: ChannelRecord | undefined;
  after: ChannelRecord | undefined;
}

const changeTopic = 'relay.channel-changed';

/**
 * The channels every connection check reads, held in memory so the WebSocket paths never
 * wait on the database. Writes go to the database first, then this node's copy is
 * reloaded from it and the other nodes are told over the bus to do the same; listeners
 * (the connection hub) see each change once per node and drop sockets it invalidates.
 */
export class ChannelDirectory {
  private readonly channels = new Map<string, ChannelRecord>();
  private readonly listeners: Array<(change: ChannelChange) => void> = [];
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly store: ChannelStore,
    private readonly bus: Bus,
    private readonly nodeId: string,
    private readonly logger: Logger,
  ) {}

  async open(): Promise<void> {
    for (const channel of await this.store.loadAll()) this.channels.set(channel.channelId, channel);
    this.unsubscribe = await this.bus.subscribe(changeTopic, (message) => {
      const { origin, channelId } = (message ?? {}) as { origin?: unknown; channelId?: unknown };
      if (origin === this.nodeId || typeof channelId !== 'string') return;
      this.reload(channelId).catch((error: unknown) =>
        this.logger.error({ err: error, channelId }, 'could not reload a channel changed on another node'),
      );
    });
  }

  async close(): Promise<void> {
    await this.unsubscribe?.();
  }

  onChange(listener: (change: ChannelChange) => void): void {
    this.listeners.push(listener);
  }

  get(channelId: string): ChannelRecord | undefined {
    return this.channels.get(channelId);
  }

  list(): ChannelRecord[] {
    return [...this.channels.values()];
  }

  /** The enabled user of `channel` whose token equals `token`, compared in constant time. */
  findUserByToken(channel: ChannelRecord, token: string): UserRecord | undefined {
    let found: UserRecord | undefined;
    for (const user of channel.users) {
      if (credentialsEqual(token, user.token) && user.enabled) found = user;
    }
    return found;
  }

  /** Whether any channel has this secret (media upload accepts any channel's secret). */
  hasChannelSecret(secret: string): boolean {
    let found = false;
    for (const channel of this.channels.values()) found = credentialsEqual(secret, channel.secret) || found;
    return found;
  }

  /** Whether any channel has an enabled user with this token. */
  hasUserToken(token: string): boolean {
    for (const channel of this.channels.values()) if (this.findUserByToken(channel, token)) return true;
    return false;
  }

  async saveChannel(input: ChannelInput): Promise<ChannelRecord> {
    const channelId = requireIdentifier('channelId', input.channelId);
    const existing = this.channels.get(channelId);
    const secret = input.secret === undefined ? (existing?.secret ?? generateToken()) : input.secret;
    if (secret.length === 0 || secret.length > 256) throw new BadRequestError('secret must be 1 to 256 characters');
    const tokenParam = input.tokenParam ?? existing?.tokenParam ?? 'token';
    if (!tokenParamPattern.test(tokenParam) || reservedQueryParameters.includes(tokenParam)) {
      throw new BadRequestError(
        `tokenParam must be a query parameter name (letters, digits, _) other than ${reservedQueryParameters.join(', ')}`,
      );
    }
    const label = input.label === undefined ? (existing?.label ?? null) : input.label;
    const users = input.users === undefined ? undefined : buildUserList(input.users, existing?.users ?? []);
    await this.store.saveChannel({ channelId, label, secret, tokenParam });
    if (users !== undefined) await this.store.replaceUsers(channelId, users);
    return this.commit(channelId);
  }

  async deleteChannel(channelId: string): Promise<void> {
    if (!(await this.store.delete(channelId))) throw new NotFoundError('channel not found');
    await this.commit(channelId);
  }

  async saveUser(channelId: string, input: UserInput): Promise<{ channel: ChannelRecord; user: UserRecord }> {
    const channel = this.requireChannel(channelId);
    const senderId = requireIdentifier('senderId', input.senderId);
    const existing = channel.users.find((user) => user.senderId === senderId);
    const user = buildUser(input, existing);
    assertTokenUnique(channel.users, user);
    await this.store.saveUser(channelId, user);
    const saved = await this.commit(channelId);
    return { channel: saved, user: saved.users.find((candidate) => candidate.senderId === senderId) ?? user };
  }

  async deleteUser(channelId: string, senderId: string): Promise<ChannelRecord> {
    this.requireChannel(channelId);
    if (!(await this.store.deleteUser(channelId, senderId))) throw new NotFoundError('user not found');
    return this.commit(channelId);
  }

  /** Notes a backend's arrival or departure; not broadcast, since it is not an admin change. */
  async recordBackendActivity(
    channelId: string,
    activity: { instanceId?: string | null; lastConnectedAt?: number; lastDisconnectedAt?: number },
  ): Promise<void> {
    const channel = this.channels.get(channelId);
    if (!channel) return;
    if (activity.instanceId !== undefined) channel.instanceId = activity.instanceId;
    if (activity.lastConnectedAt !== undefined) channel.lastConnectedAt = activity.lastConnectedAt;
    if (activity.lastDisconnectedAt !== undefined) channel.lastDisconnectedAt = activity.lastDisconnectedAt;
    await this.store.recordBackendActivity(channelId, activity);
  }

  requireChannel(channelId: string): ChannelRecord {
    const channel = this.channels.get(channelId);
    if (!channel) throw new NotFoundError('channel not found');
    return channel;
  }

  /** Reloads after a local write, tells the other nodes, and returns the stored channel. */
  private async commit(channelId: string): Promise<ChannelRecord> {
    const after = await this.reload(channelId);
    await this.bus
      .publish(changeTopic, { origin: this.nodeId, channelId })
      .catch((error: unknown) => this.logger.warn({ err: error, channelId }, 'could not tell other nodes of a change'));
    return after as ChannelRecord;
  }

  private async reload(channelId: string): Promise<ChannelRecord | undefined> {
    const before = this.channels.get(channelId);
    const after = await this.store.load(channelId);
    if (after) this.channels.set(channelId, after);
    else this.channels.delete(channelId);
    for (const listener of this.listeners) listener({ before, after });
    return after;
  }
}

function requireIdentifier(name: string, value: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new BadRequestError(`${name} is required`);
  if (!identifierPattern.test(value)) {
    throw new BadRequestError(
      `${name} must be 1 to 128 characters: letters, digits and . _ : @ + - (starting with a letter or digit)`,
    );
  }
  return value;
}

function buildUserList(inputs: readonly UserInput[], existing: readonly UserRecord[]): UserRecord[] {
  const users: UserRecord[] = [];
  for (const input of inputs) {
    const senderId = requireIdentifier('senderId', input.senderId);
    if (users.some((user) => user.senderId === senderId)) throw new BadRequestError(`duplicate senderId ${senderId}`);
    const user = buildUser(
      input,
      existing.find((candidate) => candidate.senderId === senderId),
    );
    assertTokenUnique(users, user);
    users.push(user);
  }
  return users;
}

/** Merges an upsert into the stored user: omitted fields keep their stored value. */
function buildUser(input: UserInput, existing: UserRecord | undefined): UserRecord {
  const token = input.token ?? existing?.token ?? generateToken();
  if (token.length === 0 || token.length > 256) throw new BadRequestError('token must be 1 to 256 characters');
  const chatId = input.chatId === undefined ? (existing?.chatId ?? null) : input.chatId || null;
  return {
    senderId: input.senderId,
    chatId,
    token,
    allowAgents: input.allowAgents === undefined ? (existing?.allowAgents ?? null) : normalizeAgents(input.allowAgents),
    enabled: input.enabled ?? existing?.enabled ?? true,
  };
}

function normalizeAgents(value: string[] | string | null): string[] | null {
  if (value === null) return null;
  const list = (Array.isArray(value) ? value : value.split(','))
    .map((agent) => agent.trim().toLowerCase())
    .filter((agent) => agent.length > 0);
  if (list.length === 0 || list.includes('*')) return null;
  return [...new Set(list)];
}

/** Two users with one token would make the token check ambiguous. */
function assertTokenUnique(users: readonly UserRecord[], user: UserRecord): void {
  if (users.some((other) => other.senderId !== user.senderId && other.token === user.token)) {
    throw new BadRequestError('token is already used by another user of this channel');
  }
}
