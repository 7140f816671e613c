import type { ChannelChange } from '../channels/channel-directory.js';
import { type ChannelRecord, type UserRecord, type UserView, userAllowsAgent } from '../channels/channel-model.js';
import { CloseCode } from './close-codes.js';
import { backendFrame, type ClientQuery } from './frames.js';
import type { Peer } from './peer.js';

export interface BackendConnection {
  peer: Peer;
  channelId: string;
  instanceId: string | null;
}

export interface ClientConnection {
  peer: Peer;
  connectionId: string;
  channelId: string;
  /** The chat this client belongs to: its query's chatId, else its user's bound chatId. */
  chatId: string | undefined;
  query: ClientQuery;
  authUser: UserView | undefined;
}

/**
 * Who is connected to which channel on this node. Every lookup on the message path is a
 * map access: clients by connection id, by channel, and by (channel, chat) for siblings.
 */
export class ConnectionHub {
  private readonly backends = new Map<string, BackendConnection>();
  private readonly clients = new Map<string, ClientConnection>();
  private readonly clientsByChannel = new Map<string, Set<ClientConnection>>();
  private readonly clientsByChat = new Map<string, Set<ClientConnection>>();

  get backendCount(): number {
    return this.backends.size;
  }

  get clientCount(): number {
    return this.clients.size;
  }

  backendOf(channelId: string): BackendConnection | undefined {
    return this.backends.get(channelId);
  }

  isCurrentBackend(backend: BackendConnection): boolean {
    return this.backends.get(backend.channelId) === backend;
  }

  channelClientCount(channelId: string): number {
    return this.clientsByChannel.get(channelId)?.size ?? 0;
  }

  /**
   * Makes `backend` the channel's backend. The one it replaces is closed, and the
   * channel's clients stay: they are announced to the new backend, which takes over.
   */
  attachBackend(backend: BackendConnection): void {
    const previous = this.backends.get(backend.channelId);
    this.backends.set(backend.channelId, backend);
    previous?.peer.close(CloseCode.serviceRestart, 'backend replaced');
    for (const client of this.clientsByChannel.get(backend.channelId) ?? []) {
      backend.peer.send(backendFrame.clientOpen(client.connectionId, client.query, client.authUser));
    }
  }

  /**
   * Called when a backend socket closes. Only the channel's current backend takes its
   * clients down with it: a replaced backend's late close must not touch the clients the
   * new backend now serves.
   */
  detachBackend(backend: BackendConnection, reason = 'backend disconnected'): boolean {
    if (!this.isCurrentBackend(backend)) return false;
    this.backends.delete(backend.channelId);
    for (const client of this.clientsByChannel.get(backend.channelId) ?? []) {
      client.peer.close(CloseCode.serviceRestart, reason);
    }
    return true;
  }

  /** Closes this node's backend of a channel another node has just accepted a backend for. */
  releaseBackend(channelId: string): void {
    const backend = this.backends.get(channelId);
    if (!backend) return;
    this.detachBackend(backend, 'backend moved to another relay node');
    backend.peer.close(CloseCode.serviceRestart, 'backend replaced');
  }

  addClient(client: ClientConnection): void {
    this.clients.set(client.connectionId, client);
    addToIndex(this.clientsByChannel, client.channelId, client);
    if (client.chatId !== undefined) addToIndex(this.clientsByChat, chatKey(client.channelId, client.chatId), client);
  }

  removeClient(client: ClientConnection): void {
    if (this.clients.get(client.connectionId) !== client) return;
    this.clients.delete(client.connectionId);
    removeFromIndex(this.clientsByChannel, client.channelId, client);
    if (client.chatId !== undefined)
      removeFromIndex(this.clientsByChat, chatKey(client.channelId, client.chatId), client);
  }

  /** The client `connectionId` if it belongs to `channelId`; other channels' clients are not reachable. */
  clientOf(channelId: string, connectionId: unknown): ClientConnection | undefined {
    if (typeof connectionId !== 'string') return undefined;
    const client = this.clients.get(connectionId);
    return client?.channelId === channelId ? client : undefined;
  }

  /** Other clients of the same channel and chat. */
  siblingsOf(client: ClientConnection): Iterable<ClientConnection> {
    if (client.chatId === undefined) return [];
    return this.clientsByChat.get(chatKey(client.channelId, client.chatId)) ?? [];
  }

  /** Drops the sockets an administrative change has made invalid. */
  applyChannelChange({ before, after }: ChannelChange): void {
    if (!before) return;
    const channelId = before.channelId;
    if (!after) {
      this.closeChannel(channelId, 'channel removed');
      return;
    }
    if (before.secret !== after.secret) {
      const backend = this.backends.get(channelId);
      if (backend) {
        this.detachBackend(backend);
        backend.peer.close(CloseCode.policyViolation, 'channel secret changed');
      }
    }
    for (const client of this.clientsByChannel.get(channelId) ?? []) {
      const reason = clientInvalidation(client, after);
      if (reason) client.peer.close(CloseCode.policyViolation, reason);
    }
  }

  closeChannel(channelId: string, reason: string): void {
    for (const client of this.clientsByChannel.get(channelId) ?? [])
      client.peer.close(CloseCode.serviceRestart, reason);
    const backend = this.backends.get(channelId);
    if (backend) {
      this.backends.delete(channelId);
      backend.peer.close(CloseCode.serviceRestart, reason);
    }
  }

  closeAll(code: number, reason: string): void {
    for (const client of this.clients.values()) client.peer.close(code, reason);
    for (const backend of this.backends.values()) backend.peer.close(code, reason);
  }
}

/** Why a connected client may no longer stay after its channel changed, if it may not. */
function clientInvalidation(client: ClientConnection, channel: ChannelRecord): string | undefined {
  if (!client.authUser) return channel.users.length > 0 ? 'channel now requires a token' : undefined;
  const user: UserRecord | undefined = channel.users.find(
    (candidate) => candidate.senderId === client.authUser?.senderId,
  );
  if (!user) return 'user removed';
  if (!user.enabled) return 'user disabled';
  if (user.token !== client.authUser.token) return 'token changed';
  if (user.chatId !== null && client.query.chatId !== undefined && user.chatId !== client.query.chatId) {
    return 'chatId does not match token binding';
  }
  if (!userAllowsAgent(user, client.query.agentId)) return 'agent not allowed';
  return undefined;
}

function chatKey(channelId: string, chatId: string): string {
  return `${channelId}\u0000${chatId}`;
}

function addToIndex(index: Map<string, Set<ClientConnection>>, key: string, client: ClientConnection): void {
  let set = index.get(key);
  if (!set) {
    set = new Set();
    index.set(key, set);
  }
  set.add(client);
}

function removeFromIndex(index: Map<string, Set<ClientConnection>>, key: string, client: ClientConnection): void {
  const set = index.get(key);
  if (!set) return;
  set.delete(client);
  if (set.size === 0) index.delete(key);
}
