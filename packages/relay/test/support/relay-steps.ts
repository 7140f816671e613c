import assert from 'node:assert/strict';
import type { RelayHarness } from './relay-harness.js';
import { closeSockets, connectBackend, connectClient, type TestSocket } from './ws-client.js';

/**
 * Steps the socket tests take over and over: create a channel, connect its backend and
 * clients, and check that both ends still talk to each other.
 */

export interface UserSpec {
  senderId: string;
  token: string;
  chatId?: string;
  allowAgents?: string[];
  enabled?: boolean;
}

export interface ChannelOptions {
  users?: UserSpec[];
  tokenParam?: string;
}

/** A client the relay admitted, with what its backend was told about it. */
export interface OpenedClient {
  client: TestSocket;
  connectionId: string;
  /** The relay.client.open frame the backend received. */
  open: Record<string, unknown>;
}

/** The secret createChannel gives `channelId`, so its backend can be connected by the id alone. */
export function secretOf(channelId: string): string {
  return `secret-${channelId}`;
}

/** Creates (POST /api/channels) `channelId` with the secret secretOf() names, and returns that secret. */
export async function createChannel(
  harness: RelayHarness,
  channelId: string,
  options: ChannelOptions = {},
): Promise<string> {
  const secret = secretOf(channelId);
  const response = await harness.request('/api/channels', { json: { channelId, secret, ...options } });
  assert.equal(response.status, 200, await response.clone().text());
  return secret;
}

/**
 * A generator of channel ids `<prefix>-<label>-<n>`: tests on one relay share its channel
 * directory, so each test gets channels no earlier test has touched.
 */
export function channelIdSequence(prefix: string): (label: string) => string {
  let sequence = 0;
  return (label) => {
    sequence += 1;
    return `${prefix}-${label}-${sequence}`;
  };
}

/**
 * Sockets remembered as a test opens them, so an afterEach can close what a test (or its
 * failure) left open; and the steps that open them. One per test file, as its sockets
 * belong to that file's relays.
 */
export function trackedSockets() {
  const sockets: TestSocket[] = [];

  function track<T extends TestSocket>(socket: T): T {
    sockets.push(socket);
    return socket;
  }

  /** Closes every tracked socket still open, and forgets them all. */
  async function closeTracked(): Promise<void> {
    await closeSockets(sockets.splice(0));
  }

  /** Connects (and tracks) the backend of a channel made by createChannel. */
  async function backendFor(harness: RelayHarness, channelId: string, instanceId?: string): Promise<TestSocket> {
    return track(await connectBackend(harness.wsUrl, channelId, secretOf(channelId), instanceId));
  }

  /** A tracked client socket with `query`; not waited for, as the relay may refuse it. */
  function client(harness: RelayHarness, query: Record<string, string>): TestSocket {
    return track(connectClient(harness.wsUrl, query));
  }

  /** Connects a client the relay admits, and returns it with the relay.client.open its backend received. */
  async function openClient(
    harness: RelayHarness,
    backend: TestSocket,
    query: Record<string, string>,
  ): Promise<OpenedClient> {
    const socket = client(harness, query);
    const open = await backend.next('relay.client.open');
    await socket.opened;
    assert.equal(typeof open.connectionId, 'string');
    return { client: socket, connectionId: String(open.connectionId), open };
  }

  return { track, closeTracked, backendFor, client, openClient };
}

let clientTags = 0;

/**
 * A value for a client's `n` query parameter that no other client of this process carries,
 * to pick that client's relay.client.open out of those of others.
 */
export function nextClientTag(): string {
  clientTags += 1;
  return String(clientTags);
}

/**
 * Connects a client tagged with nextClientTag() and waits for the relay.client.open that
 * carries its tag. Opens of other clients that arrive first are skipped: where clients come
 * and go (limits, fuzzing) the next open is not necessarily this client's.
 */
export async function openTaggedClient(
  harness: RelayHarness,
  backend: TestSocket,
  query: Record<string, string>,
): Promise<{ client: TestSocket; connectionId: string }> {
  const tag = nextClientTag();
  const client = connectClient(harness.wsUrl, { ...query, n: tag });
  await client.opened;
  for (;;) {
    const open = await backend.next<{ connectionId: string; query: { rawQuery: string } }>('relay.client.open');
    if (open.query.rawQuery.endsWith(`n=${tag}`)) return { client, connectionId: open.connectionId };
  }
}

/** Sends a marker event to `connectionId` through `backend` and asserts it is the client's next frame. */
export async function assertNextIsMarker(backend: TestSocket, connectionId: string, client: TestSocket): Promise<void> {
  const marker = { type: 'marker', data: { n: Math.random() } };
  backend.send({ type: 'relay.server.event', connectionId, event: marker });
  assert.deepEqual(await client.next(), marker);
}

/** The client's next message is the backend's next frame, as a relay.client.event: both ends are still connected. */
export async function assertRoundTrip(client: TestSocket, backend: TestSocket, connectionId: string): Promise<void> {
  const probe = { type: 'probe', data: { n: Math.random() } };
  client.send(probe);
  const event = await backend.next();
  assert.equal(event.type, 'relay.client.event');
  assert.equal(event.connectionId, connectionId);
  assert.deepEqual(event.event, probe);
}
