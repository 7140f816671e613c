import type { UserView } from '../channels/channel-model.js';

/** Query of a client connection as passed to the backend; undefined fields are left out. */
export interface ClientQuery {
  rawQuery: string;
  channelId: string;
  chatId?: string;
  agentId?: string;
  token?: string;
}

/** Frames the gateway sends to a backend, built in one place so their shapes stay in step. */
export const backendFrame = {
  ack: (channelId: string) => JSON.stringify({ type: 'relay.backend.ack', channelId, timestamp: Date.now() }),
  error: (message: string) => JSON.stringify({ type: 'relay.backend.error', message, timestamp: Date.now() }),
  clientOpen: (connectionId: string, query: ClientQuery, authUser: UserView | undefined) =>
    JSON.stringify({ type: 'relay.client.open', connectionId, query, authUser, timestamp: Date.now() }),
  /**
   * `eventJson` was just parsed successfully, so it is embedded as it came instead of
   * being parsed into objects and serialized again on the relay's busiest path.
   */
  clientEvent: (connectionId: string, eventJson: string) =>
    `{"type":"relay.client.event","connectionId":"${connectionId}","event":${eventJson},"timestamp":${Date.now()}}`,
  clientClose: (connectionId: string, code: number, reason: string) =>
    JSON.stringify({ type: 'relay.client.close', connectionId, code, reason, timestamp: Date.now() }),
};

export const clientFrame = {
  pong: () => JSON.stringify({ type: 'pong', data: { timestamp: Date.now() } }),
  error: (code: 'INVALID_PAYLOAD' | 'RATE_LIMITED', message: string) =>
    JSON.stringify({ type: 'error', data: { code, message } }),
  /** What siblings (same channel and chat) see of a message one of them sent; undefined if it cannot be serialized. */
  echo: (data: unknown) =>
    stringifyJson({ type: 'message.send', data: { ...(isObject(data) ? data : {}), echo: true } }),
};

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses a frame's text; undefined when it is not JSON. */
export function parseJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/**
 * JSON text of a value, or undefined when it is nested too deeply to serialize: JSON.parse
 * accepts any depth but JSON.stringify recurses and throws RangeError, which inside a
 * socket's message handler would end the relay process.
 */
export function stringifyJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
