import { ServiceError } from '@hearth/core';

/**
 * Every error the relay answers a REST request with. `http/error-handler.ts` is the one
 * place that turns these (and Fastify's own errors) into `{ ok: false, error }`.
 */
export class BadRequestError extends ServiceError {
  readonly code = 'RELAY_BAD_REQUEST';
  readonly statusCode = 400;
}

export class UnauthorizedError extends ServiceError {
  readonly code = 'RELAY_UNAUTHORIZED';
  readonly statusCode = 401;
}

export class NotFoundError extends ServiceError {
  readonly code = 'RELAY_NOT_FOUND';
  readonly statusCode = 404;
}

export class FileTooLargeError extends ServiceError {
  readonly code = 'RELAY_FILE_TOO_LARGE';
  readonly statusCode = 413;
}

export class HostedStoreRequiredError extends ServiceError {
  readonly code = 'RELAY_HOSTED_STORE_REQUIRED';
  readonly statusCode = 400;
  constructor() {
    super('relay node registry requires a hosted store: set DATABASE_URL to a PostgreSQL database');
  }
}
