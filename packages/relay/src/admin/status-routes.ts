import type { FastifyInstance } from 'fastify';
import type { RelayContext } from '../context.js';
import { channelHealthView, channelView } from './channel-view.js';

/** Health, public metadata, the full admin state and Prometheus metrics. */
export async function statusRoutes(app: FastifyInstance, context: RelayContext): Promise<void> {
  const { directory, hub, config, auth, metrics } = context;
  const meta = () => ({
    adminAuthEnabled: true,
    publicBaseUrl: config.publicBaseUrl ?? null,
    pluginBackendUrl: config.pluginBackendUrl ?? null,
  });

  app.get('/healthz', async () => ({
    ok: true,
    backendCount: hub.backendCount,
    clientCount: hub.clientCount,
    channels: directory.list().map((channel) => channelHealthView(channel, hub)),
    timestamp: Date.now(),
  }));

  app.get('/api/meta', async () => ({ ok: true, ...meta(), timestamp: Date.now() }));

  app.get('/api/state', async (request) => {
    await auth.requireAdmin(request);
    return {
      ok: true,
      configPath: context.database.location,
      ...meta(),
      channels: directory.list().map((channel) => channelView(channel, hub)),
      stats: { backendCount: hub.backendCount, clientCount: hub.clientCount },
      timestamp: Date.now(),
    };
  });

  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
