import { ServiceError } from '@hearth/core';
import type { FastifyError, FastifyInstance } from 'fastify';

/**
 * The one place that turns an error into the relay's REST envelope `{ ok: false, error }`.
 * Fastify's own errors are mapped onto the seed's table: a JSON body the parser rejects
 * (malformed, or over the admin body limit) is a 400; media's 413 is raised by the
 * upload code itself as a FileTooLargeError.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const { status, message } = describe(error);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    return reply.code(status).send({ ok: false, error: message });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ ok: false, error: `no route for ${request.method} ${request.url.split('?')[0]}` }),
  );
}

function describe(error: FastifyError): { status: number; message: string } {
  if (error instanceof ServiceError) return { status: error.statusCode, message: error.message };
  if (error.validation) return { status: 400, message: error.message };
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, message: `invalid JSON body: ${error.message}` };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, message: 'request body is empty; expected JSON' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 400, message: 'payload too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 400, message: 'unsupported content type; send application/json' };
  }
  if (error instanceof SyntaxError) return { status: 400, message: `invalid JSON body: ${error.message}` };
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return { status, message: error.message };
  return { status: 500, message: 'internal server error' };
}

interface SchemaProblem {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/**
 * Ajv's messages name JSON pointers ("body must have required property 'channelId'");
 * clients of the old relay read "channelId is required", so problems are phrased by field.
 */
export function formatSchemaErrors(errors: readonly SchemaProblem[], dataVariable: string): Error {
  const first = errors[0];
  if (!first) return new Error(`invalid ${dataVariable}`);
  const field = first.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (first.keyword === 'required') return new Error(`${String(first.params.missingProperty)} is required`);
  if (first.keyword === 'additionalProperties') {
    return new Error(`unknown field ${String(first.params.additionalProperty)}`);
  }
  return new Error(`${field || dataVariable} ${first.message ?? 'is invalid'}`);
}
