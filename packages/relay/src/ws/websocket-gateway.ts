import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Bus, Logger } from '@hearth/core';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ChannelDirectory } from '../channels/channel-directory.js';
import type { RelayConfig } from '../config.js';
import type { RelayMetrics } from '../observability/metrics.js';
import { type BackendSessionDependencies, startBackendSession } from './backend-session.js';
import { type ClientSessionDependencies, startClientSession } from './client-session.js';
import { CloseCode } from './close-codes.js';
import type { ConnectionHub } from './connection-hub.js';
import { Peer } from './peer.js';

export interface WebSocketGatewayDependencies {
  config: Pick<
    RelayConfig,
    | 'maxPayloadBytes'
    | 'heartbeatIntervalMs'
    | 'helloTimeoutMs'
    | 'clientMessagesPerMinute'
    | 'maxConnectionsPerIp'
    | 'sendBufferLimitBytes'
    | 'trustProxy'
  >;
  hub: ConnectionHub;
  directory: ChannelDirectory;
  metrics: RelayMetrics;
  bus: Bus;
  nodeId: string;
  logger: Logger;
}

const backendClaimTopic = 'relay.backend-claimed';

/**
 * `/backend` and `/client` on the HTTP server's upgrade event. Owns what applies to every
 * socket: the per-address connection limit, the heartbeat, and the backend hand-over
 * between relay nodes.
 */
export class WebSocketGateway {
  private readonly server: WebSocketServer;
  private readonly peers = new Set<Peer>();
  private readonly connectionsByAddress = new Map<string, number>();
  private heartbeat: NodeJS.Timeout | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private accepting = true;

  private readonly backendDependencies: BackendSessionDependencies;
  private readonly clientDependencies: ClientSessionDependencies;

  constructor(private readonly deps: WebSocketGatewayDependencies) {
    const { hub, directory, metrics, logger, bus, nodeId, config } = deps;
    this.server = new WebSocketServer({ noServer: true, maxPayload: config.maxPayloadBytes });
    this.clientDependencies = {
      hub,
      directory,
      metrics,
      logger,
      clientMessagesPerMinute: config.clientMessagesPerMinute,
    };
    this.backendDependencies = {
      hub,
      directory,
      metrics,
      logger,
      helloTimeoutMs: config.helloTimeoutMs,
      announceBackend: (channelId) => {
        bus
          .publish(backendClaimTopic, { origin: nodeId, channelId })
          .catch((error: unknown) => logger.warn({ err: error }, 'could not announce backend to other nodes'));
      },
    };
  }

  async attach(httpServer: Server): Promise<void> {
    const { bus, nodeId, hub } = this.deps;
    this.unsubscribe = await bus.subscribe(backendClaimTopic, (message) => {
      const { origin, channelId } = (message ?? {}) as { origin?: unknown; channelId?: unknown };
      if (origin !== nodeId && typeof channelId === 'string') hub.releaseBackend(channelId);
    });
    httpServer.on('upgrade', (request, socket, head) => this.handleUpgrade(request, socket, head));
    this.heartbeat = setInterval(() => this.beat(), this.deps.config.heartbeatIntervalMs);
    this.heartbeat.unref();
  }

  /** Refuses new sockets and closes the open ones with 1001 (going away). */
  async close(): Promise<void> {
    this.accepting = false;
    clearInterval(this.heartbeat);
    await this.unsubscribe?.();
    this.deps.hub.closeAll(CloseCode.goingAway, 'server shutting down');
    for (const peer of this.peers) peer.close(CloseCode.goingAway, 'server shutting down');
    const deadline = Date.now() + 3000;
    while (this.peers.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    for (const peer of this.peers) peer.socket.terminate();
    this.server.close();
  }

  private handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://relay.invalid');
    } catch {
      // A request target such as `//` parses as no URL at all; a throw here would end the process.
      refuseUpgrade(socket, 400, 'Bad Request');
      return;
    }
    const endpoint = url.pathname.replace(/\/+$/, '');
    if (endpoint !== '/backend' && endpoint !== '/client') {
      refuseUpgrade(socket, 404, 'Not Found');
      return;
    }
    if (!this.accepting) {
      refuseUpgrade(socket, 503, 'Service Unavailable');
      return;
    }
    const address = this.remoteAddress(request);
    this.server.handleUpgrade(request, socket, head, (websocket) => this.accept(websocket, address, endpoint, url));
  }

  /**
   * Kept apart from handleUpgrade so the listeners made here close over the address only:
   * a closure made inside the upgrade callback would keep each connection's request object
   * and headers alive for as long as the socket is open.
   */
  private accept(websocket: WebSocket, address: string, endpoint: '/backend' | '/client', url: URL): void {
    const peer = new Peer(websocket, address, this.deps.config.sendBufferLimitBytes);
    this.track(peer);
    // Errors (bad frames, oversized messages) also close the socket; ws emits them
    // here first, and an unhandled 'error' would end the process.
    websocket.on('error', (error) => this.deps.logger.debug({ err: error, address }, 'websocket error'));
    const limit = this.deps.config.maxConnectionsPerIp;
    if (limit > 0 && (this.connectionsByAddress.get(address) ?? 0) > limit) {
      peer.close(CloseCode.policyViolation, 'too many connections from this address');
      return;
    }
    if (endpoint === '/backend') startBackendSession(peer, this.backendDependencies);
    else startClientSession(peer, url, this.clientDependencies);
  }

  private track(peer: Peer): void {
    this.peers.add(peer);
    const address = peer.remoteAddress;
    this.connectionsByAddress.set(address, (this.connectionsByAddress.get(address) ?? 0) + 1);
    peer.socket.once('close', () => {
      this.peers.delete(peer);
      const remaining = (this.connectionsByAddress.get(address) ?? 1) - 1;
      if (remaining > 0) this.connectionsByAddress.set(address, remaining);
      else this.connectionsByAddress.delete(address);
    });
  }

  /** Pings every socket; one that has not answered since the last beat is gone and is dropped. */
  private beat(): void {
    for (const peer of this.peers) {
      if (!peer.alive) {
        this.deps.logger.debug({ address: peer.remoteAddress }, 'dropping a socket that missed its heartbeat');
        peer.socket.terminate();
        continue;
      }
      peer.alive = false;
      peer.socket.ping();
    }
  }

  private remoteAddress(request: IncomingMessage): string {
    if (this.deps.config.trustProxy) {
      const forwarded = request.headers['x-forwarded-for'];
      const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
      if (first) return first;
    }
    return request.socket.remoteAddress ?? 'unknown';
  }
}

/**
 * Answers an upgrade the relay will not take. Node leaves an upgrade socket without an
 * error listener (a peer resetting it would end the process) and half-open after `end`
 * (a peer that never closes its side would hold it forever), so both are handled here.
 */
function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  socket.on('error', () => undefined);
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
