import type { Socket } from 'node:net';
import { ServiceError } from '@hearth/core';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { corsHeaders } from './cors.js';

/**
 * Longest path parameter the router accepts. Channel and user ids may be 128 characters;
 * Fastify's default of 100 answered a bare 414 for longer ones, so such a channel could be
 * created but never deleted or given users.
 */
export const maxPathParameterLength = 512;

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

/**
 * Errors Fastify raises before routing (a malformed percent-encoding, an over-long path
 * parameter) skip the hooks and the error handler; they get the same envelope and the CORS
 * headers here. Wired as the `frameworkErrors` option.
 */
export function handleFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const { status, message } = describe(error);
  void reply.headers(corsHeaders).code(status).send({ ok: false, error: message });
}

/**
 * Requests Node's HTTP parser rejects (malformed request line or headers) never reach
 * Fastify's routing; they get the relay's envelope here instead of Fastify's default body.
 * Wired as the `clientErrorHandler` option.
 */
export function handleClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, text, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'request headers too large']
      : [400, 'Bad Request', 'malformed HTTP request'];
  const body = JSON.stringify({ ok: false, error: message });
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
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
