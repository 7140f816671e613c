import { randomUUID } from 'node:crypto';
import type { Logger } from '@hearth/core';
import type { ChannelDirectory } from '../channels/channel-directory.js';
import { type UserRecord, userAllowsAgent, userView } from '../channels/channel-model.js';
import type { RelayMetrics } from '../observability/metrics.js';
import { CloseCode } from './close-codes.js';
import type { ClientConnection, ConnectionHub } from './connection-hub.js';
import { backendFrame, type ClientQuery, clientFrame, isObject, parseJson } from './frames.js';
import type { Peer } from './peer.js';
import { MessageRateLimiter } from './rate-limiter.js';

export interface ClientSessionDependencies {
  hub: ConnectionHub;
  directory: ChannelDirectory;
  metrics: RelayMetrics;
  logger: Logger;
  /** 0 turns the limit off. */
  clientMessagesPerMinute: number;
}

/**
 * One end-user client on `/client`: checks the query in the order clients in the field
 * expect, then wraps each of its messages for the channel's backend.
 */
export function startClientSession(peer: Peer, url: URL, deps: ClientSessionDependencies): void {
  const { hub, metrics } = deps;
  const admitted = admit(url, deps);
  if ('reject' in admitted) {
    peer.socket.on('close', (code) => metrics.countClose('client', code));
    peer.close(admitted.reject.code, admitted.reject.reason);
    return;
  }
  const client: ClientConnection = { peer, ...admitted };
  const limiter = deps.clientMessagesPerMinute > 0 ? new MessageRateLimiter(deps.clientMessagesPerMinute) : undefined;
  hub.addClient(client);
  hub
    .backendOf(client.channelId)
    ?.peer.send(backendFrame.clientOpen(client.connectionId, client.query, client.authUser));

  peer.socket.on('message', (data) => {
    peer.alive = true;
    // Once the relay is closing this client (rejected, removed, rate-limited), what it still sends is not relayed.
    if (!peer.open) return;
    if (limiter && !limiter.allow()) {
      peer.close(CloseCode.policyViolation, 'rate limit exceeded');
      return;
    }
    const text = data.toString();
    const parsed = parseJson(text);
    if (!parsed) {
      peer.send(clientFrame.error('INVALID_PAYLOAD', 'message is not valid JSON'));
      return;
    }
    const message = parsed.value;
    if (isObject(message) && message.type === 'ping') {
      peer.send(clientFrame.pong());
      return;
    }
    const backend = hub.backendOf(client.channelId);
    if (!backend) return;
    backend.peer.send(backendFrame.clientEvent(client.connectionId, text));
    metrics.frames.toBackend += 1;
    if (isObject(message) && message.type === 'message.receive') echoToSiblings(client, message.data, hub);
  });

  peer.socket.on('close', (code, reasonBuffer) => {
    metrics.countClose('client', code);
    hub.removeClient(client);
    hub
      .backendOf(client.channelId)
      ?.peer.send(backendFrame.clientClose(client.connectionId, code, reasonBuffer.toString()));
  });
}

type Admission = Omit<ClientConnection, 'peer'> | { reject: { code: number; reason: string } };

function admit(url: URL, { directory, hub }: ClientSessionDependencies): Admission {
  const params = url.searchParams;
  const channelId = params.get('channelId');
  if (!channelId) return reject(CloseCode.policyViolation, 'missing channelId');
  const channel = directory.get(channelId);
  if (!channel) return reject(CloseCode.policyViolation, 'unknown channelId');
  if (!hub.backendOf(channelId)) return reject(CloseCode.tryAgainLater, 'backend unavailable');

  const chatId = params.get('chatId') ?? undefined;
  const agentId = params.get('agentId') ?? undefined;
  const token = params.get(channel.tokenParam) ?? undefined;
  let user: UserRecord | undefined;
  if (channel.users.length > 0) {
    if (!token) return reject(CloseCode.policyViolation, `missing ${channel.tokenParam}`);
    user = directory.findUserByToken(channel, token);
    if (!user) return reject(CloseCode.policyViolation, 'invalid token');
    if (user.chatId !== null && chatId !== undefined && chatId !== user.chatId) {
      return reject(CloseCode.policyViolation, 'chatId does not match token binding');
    }
    if (!userAllowsAgent(user, agentId)) return reject(CloseCode.policyViolation, 'agent not allowed');
  }
  const query: ClientQuery = { rawQuery: url.search, channelId };
  if (chatId !== undefined) query.chatId = chatId;
  if (agentId !== undefined) query.agentId = agentId;
  if (token !== undefined) query.token = token;
  return {
    connectionId: randomUUID(),
    channelId,
    chatId: chatId ?? user?.chatId ?? undefined,
    query,
    authUser: user ? userView(user) : undefined,
  };
}

function reject(code: number, reason: string): Admission {
  return { reject: { code, reason } };
}

/** Other windows of the same chat see what this one sent, marked as an echo. */
function echoToSiblings(client: ClientConnection, data: unknown, hub: ConnectionHub): void {
  let echo: string | undefined;
  for (const sibling of hub.siblingsOf(client)) {
    if (sibling === client) continue;
    echo ??= clientFrame.echo(data);
    // Nested too deeply to serialize: the backend already has the message, the siblings go without the echo.
    if (echo === undefined) return;
    sibling.peer.send(echo);
  }
}
