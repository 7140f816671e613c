import type { AddressInfo } from 'node:net';
import type { Logger } from '@hearth/core';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { channelRoutes } from './admin/channel-routes.js';
import { relayNodeRoutes } from './admin/relay-node-routes.js';
import { statusRoutes } from './admin/status-routes.js';
import type { RelayConfig } from './config.js';
import { createRelayContext, type RelayContext } from './context.js';
import { installCors } from './http/cors.js';
import {
  formatSchemaErrors,
  handleClientError,
  handleFrameworkError,
  installErrorHandler,
  maxPathParameterLength,
} from './http/error-handler.js';
import { mediaRoutes } from './media/media-routes.js';
import { WebSocketGateway } from './ws/websocket-gateway.js';

const shutdownGraceMs = 2000;

/**
 * The relay service: REST administration and media over Fastify, and the WebSocket
 * gateway on the same HTTP server. `create` builds it, `start` listens, `destroy` stops
 * it in the order that loses nothing (stop accepting, close sockets with 1001, close
 * storage).
 */
export class RelayServer {
  private constructor(
    readonly context: RelayContext,
    private readonly app: FastifyInstance,
    private readonly gateway: WebSocketGateway,
  ) {}

  static async create(config: Readonly<RelayConfig>, logger: Logger): Promise<RelayServer> {
    const context = await createRelayContext(config, logger);
    const app: FastifyInstance = Fastify({
      loggerInstance: logger.child({ subsystem: 'http' }) as FastifyBaseLogger,
      // Request URLs can carry ?adminToken= and ?token=; per-request lines are left out.
      logController: new LogController({ disableRequestLogging: true }),
      bodyLimit: config.adminBodyLimitBytes,
      trustProxy: config.trustProxy,
      schemaErrorFormatter: formatSchemaErrors,
      frameworkErrors: handleFrameworkError,
      clientErrorHandler: handleClientError,
      routerOptions: { maxParamLength: maxPathParameterLength },
      ajv: { customOptions: { coerceTypes: false, removeAdditional: false } },
    });
    installErrorHandler(app);
    installCors(app);
    await app.register(statusRoutes, context);
    await app.register(channelRoutes, context);
    await app.register(relayNodeRoutes, context);
    await app.register(mediaRoutes, context);
    const gateway = new WebSocketGateway({ ...context, config });
    await gateway.attach(app.server);
    return new RelayServer(context, app, gateway);
  }

  async start(): Promise<void> {
    const { config, logger } = this.context;
    await this.app.listen({ port: config.port, host: config.host });
    logger.info(
      {
        http: this.httpUrl,
        websocket: this.wsUrl,
        storage: this.context.database.location,
        bus: this.context.bus.kind,
      },
      'relay listening',
    );
  }

  /** Base HTTP address; uses 127.0.0.1 when listening on every interface. */
  get httpUrl(): string {
    return `http://${this.displayHost}:${this.port}`;
  }

  get wsUrl(): string {
    return `ws://${this.displayHost}:${this.port}`;
  }

  get port(): number {
    return (this.app.server.address() as AddressInfo).port;
  }

  async destroy(): Promise<void> {
    await this.gateway.close();
    // Requests in flight get a moment to finish. Node closes keep-alive connections that
    // are idle when closing starts, but not one that turns idle a moment later, which would
    // hold the close until its keep-alive timeout; whatever remains after the grace is cut.
    const forceClose = setTimeout(() => this.app.server.closeAllConnections(), shutdownGraceMs);
    try {
      await this.app.close();
    } finally {
      clearTimeout(forceClose);
    }
    this.context.media.close();
    await this.context.directory.close();
    await this.context.bus.close();
    await this.context.database.close();
  }

  private get displayHost(): string {
    const host = this.context.config.host;
    if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
    return host.includes(':') ? `[${host}]` : host;
  }
}
