/**
 * Base of every error a Hearth service answers a request with. Each service keeps one
 * registry of subclasses and one place that maps them to its own response envelope.
 */
export abstract class ServiceError extends Error {
  abstract readonly code: string;
  abstract readonly statusCode: number;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
