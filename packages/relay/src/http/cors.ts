import type { FastifyInstance } from 'fastify';

/** The seed's CORS headers, on every REST response, and an answer to every preflight. */
export const corsHeaders = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'content-type, authorization, x-relay-admin-token',
  'access-control-max-age': '86400',
};

export function installCors(app: FastifyInstance): void {
  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(corsHeaders);
  });
  app.options('/*', async (_request, reply) => reply.code(204).send());
}
