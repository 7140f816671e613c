import type { Logger } from '@hearth/core';
import type { ChannelDirectory } from '../channels/channel-directory.js';
import { credentialsEqual } from '../channels/credentials.js';
import type { RelayMetrics } from '../observability/metrics.js';
import { CloseCode, sendableCloseCode, sendableCloseReason } from './close-codes.js';
import type { BackendConnection, ConnectionHub } from './connection-hub.js';
import { backendFrame, isObject, parseJson, stringifyJson } from './frames.js';
import type { Peer } from './peer.js';

export interface BackendSessionDependencies {
  hub: ConnectionHub;
  directory: ChannelDirectory;
  metrics: RelayMetrics;
  logger: Logger;
  helloTimeoutMs: number;
  /** Tells other relay nodes that this node now holds the channel's backend. */
  announceBackend(channelId: string): void;
}

/**
 * One agent backend on `/backend`: waits for a valid hello within the deadline, then
 * routes the backend's frames to the channel's clients.
 */
export function startBackendSession(peer: Peer, deps: BackendSessionDependencies): void {
  const { hub, directory, metrics, logger } = deps;
  let backend: BackendConnection | undefined;

  const helloTimer = setTimeout(
    () => peer.close(CloseCode.policyViolation, 'missing relay.backend.hello'),
    deps.helloTimeoutMs,
  );

  peer.socket.on('message', (data) => {
    peer.alive = true;
    // Once the relay is closing this socket (refused, timed out, replaced), nothing it still
    // sends counts: a hello queued behind a refused frame must not make it the channel's backend.
    if (!peer.open) return;
    const parsed = parseJson(data.toString());
    if (!parsed || !isObject(parsed.value)) {
      peer.close(CloseCode.unsupportedData, 'invalid json');
      return;
    }
    if (backend) routeFrame(backend, parsed.value);
    else backend = authenticate(parsed.value);
  });

  peer.socket.on('close', (code) => {
    clearTimeout(helloTimer);
    metrics.countClose('backend', code);
    if (!backend) return;
    // A backend dropped by an admin change was detached before its socket closed, and still
    // leaves the channel without a backend; one replaced by a newer backend does not.
    if (!hub.detachBackend(backend) && hub.backendOf(backend.channelId)) return;
    logger.info({ channelId: backend.channelId, code }, 'backend disconnected');
    void directory
      .recordBackendActivity(backend.channelId, { lastDisconnectedAt: Date.now() })
      .catch((error: unknown) => logger.warn({ err: error }, 'could not record backend disconnect'));
  });

  function authenticate(hello: Record<string, unknown>): BackendConnection | undefined {
    if (hello.type !== 'relay.backend.hello') {
      peer.close(CloseCode.policyViolation, 'expected relay.backend.hello');
      return undefined;
    }
    clearTimeout(helloTimer);
    const { channelId, secret } = hello;
    const channel = typeof channelId === 'string' ? directory.get(channelId) : undefined;
    // Compare even when the channel is unknown, so the answer takes as long either way.
    const secretMatches = credentialsEqual(typeof secret === 'string' ? secret : '', channel?.secret ?? '\u0000');
    if (!channel || !secretMatches) {
      logger.warn({ channelId, remoteAddress: peer.remoteAddress }, 'backend auth failed');
      peer.send(backendFrame.error('backend auth failed'));
      peer.close(CloseCode.policyViolation, 'backend auth failed');
      return undefined;
    }
    const instanceId = typeof hello.instanceId === 'string' ? hello.instanceId : null;
    const connection: BackendConnection = { peer, channelId: channel.channelId, instanceId };
    peer.send(backendFrame.ack(channel.channelId));
    hub.attachBackend(connection);
    deps.announceBackend(channel.channelId);
    logger.info({ channelId: channel.channelId, instanceId }, 'backend connected');
    void directory
      .recordBackendActivity(channel.channelId, { instanceId, lastConnectedAt: Date.now() })
      .catch((error: unknown) => logger.warn({ err: error }, 'could not record backend connect'));
    return connection;
  }

  function routeFrame(from: BackendConnection, frame: Record<string, unknown>): void {
    // A replaced backend may still be sending until its close completes; it no longer speaks for the channel.
    if (!hub.isCurrentBackend(from)) return;
    const client = hub.clientOf(from.channelId, frame.connectionId);
    switch (frame.type) {
      case 'relay.server.event': {
        if (!client) return;
        const text = stringifyJson(frame.event ?? null);
        if (text === undefined) {
          logger.warn({ channelId: from.channelId }, 'dropped a relay.server.event nested too deeply to forward');
          return;
        }
        client.peer.send(text);
        metrics.frames.toClients += 1;
        for (const sibling of hub.siblingsOf(client)) {
          if (sibling === client) continue;
          sibling.peer.send(text);
          metrics.frames.toClients += 1;
        }
        return;
      }
      case 'relay.server.reject':
        client?.peer.close(
          sendableCloseCode(frame.code, CloseCode.policyViolation),
          sendableCloseReason(frame.message, 'rejected'),
        );
        return;
      case 'relay.server.close':
        client?.peer.close(
          sendableCloseCode(frame.code, CloseCode.normal),
          sendableCloseReason(frame.reason, 'closed'),
        );
        return;
      default:
        // Unknown types are ignored rather than answered with relay.backend.error, which
        // plugins treat as fatal; newer backends may send frames this relay does not know.
        logger.debug({ channelId: from.channelId, type: frame.type }, 'ignored unknown backend frame');
    }
  }
}
