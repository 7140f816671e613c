import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import type { RelayContext } from '../context.js';
import { HostedStoreRequiredError, NotFoundError } from '../errors.js';

const RelayNodeBody = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128 }),
  name: Type.String({ minLength: 1 }),
  url: Type.String({ minLength: 1 }),
  adminToken: Type.Optional(Type.String()),
});

const NodeParams = Type.Object({ nodeId: Type.String() });

/**
 * The registry of relay nodes lives only in a hosted store (PostgreSQL), where every node
 * of a deployment sees the same list; with the embedded SQLite store it is empty and
 * read-only.
 */
export async function relayNodeRoutes(app: FastifyInstance, context: RelayContext): Promise<void> {
  const { relayNodes, auth } = context;
  app.addHook('onRequest', (request) => auth.requireAdmin(request));

  app.get('/api/relay-nodes', async () =>
    relayNodes
      ? { ok: true, nodes: await relayNodes.list(), source: 'postgres' }
      : { ok: true, nodes: [], source: 'none' },
  );

  app.post<{ Body: Static<typeof RelayNodeBody> }>(
    '/api/relay-nodes',
    { schema: { body: RelayNodeBody } },
    async (request) => {
      if (!relayNodes) throw new HostedStoreRequiredError();
      await relayNodes.upsert(request.body);
      const node = (await relayNodes.list()).find((candidate) => candidate.id === request.body.id);
      return { ok: true, node };
    },
  );

  app.delete<{ Params: Static<typeof NodeParams> }>(
    '/api/relay-nodes/:nodeId',
    { schema: { params: NodeParams } },
    async (request) => {
      if (!relayNodes) throw new HostedStoreRequiredError();
      if (!(await relayNodes.delete(request.params.nodeId))) throw new NotFoundError('relay node not found');
      return { ok: true, nodeId: request.params.nodeId };
    },
  );
}
