import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { limitsOff, type RelayHarness, startRelay } from './support/relay-harness.js';
import {
  assertNextIsMarker,
  assertRoundTrip,
  channelIdSequence,
  createChannel,
  trackedSockets,
  type UserSpec,
} from './support/relay-steps.js';
import { within } from './support/within.js';
import { assertClosed, TestSocket } from './support/ws-client.js';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const { track, closeTracked, backendFor, client, openClient } = trackedSockets();
const uniqueChannelId = channelIdSequence('client');

/** Asserts a refused client left no trace at the backend: the next client's open is its next frame. */
async function assertBackendToldNothing(harness: RelayHarness, backend: TestSocket, channelId: string, query = {}) {
  const next = client(harness, { channelId, ...query, probe: 'after-refusal' });
  const open = await backend.next();
  assert.equal(open.type, 'relay.client.open');
  assert.match(String((open.query as { rawQuery?: unknown }).rawQuery), /probe=after-refusal/);
  await next.opened;
}

const alice: UserSpec = { senderId: 'alice', token: 'tok-alice-0001', chatId: 'c1', allowAgents: ['main', 'helper'] };
const bob: UserSpec = { senderId: 'bob', token: 'tok-bob-0002' };
const carol: UserSpec = { senderId: 'carol', token: 'tok-carol-0003', enabled: false };

describe('client connection', () => {
  let harness: RelayHarness;
  before(async () => {
    harness = await startRelay({ env: limitsOff });
  });
  afterEach(closeTracked);
  after(async () => {
    await harness.cleanup();
  });

  describe('checks, in order', () => {
    test('connecting + no channelId → closed 1008 "missing channelId"', async () => {
      await assertClosed(client(harness, {}), 1008, 'missing channelId');
      await assertClosed(client(harness, { channelId: '' }), 1008, 'missing channelId');
      await assertClosed(client(harness, { token: 'tok', chatId: 'c1' }), 1008, 'missing channelId');
    });

    test('connecting + channelId unknown → closed 1008 "unknown channelId"', async () => {
      await assertClosed(client(harness, { channelId: uniqueChannelId('nope') }), 1008, 'unknown channelId');
      // Before any token check.
      await assertClosed(
        client(harness, { channelId: uniqueChannelId('nope'), token: 'x' }),
        1008,
        'unknown channelId',
      );
    });

    test('connecting + backend not connected → closed 1013 "backend unavailable" (before the token check)', async () => {
      const channelId = uniqueChannelId('no-backend');
      await createChannel(harness, channelId, { users: [alice] });
      await assertClosed(client(harness, { channelId }), 1013, 'backend unavailable');
      await assertClosed(client(harness, { channelId, token: 'wrong' }), 1013, 'backend unavailable');
      await assertClosed(client(harness, { channelId, token: alice.token }), 1013, 'backend unavailable');
    });

    test('channel has users + token missing → closed 1008 "missing token"', async () => {
      const channelId = uniqueChannelId('missing-token');
      await createChannel(harness, channelId, { users: [alice, bob] });
      const backend = await backendFor(harness, channelId);
      await assertClosed(client(harness, { channelId }), 1008, 'missing token');
      await assertClosed(client(harness, { channelId, token: '' }), 1008, 'missing token');
      await assertClosed(client(harness, { channelId, chatId: 'c1', agentId: 'main' }), 1008, 'missing token');
      await assertBackendToldNothing(harness, backend, channelId, { token: bob.token });
    });

    test('channel with tokenParam "key" + token missing → closed 1008 "missing key"; the token is read from key', async () => {
      const channelId = uniqueChannelId('token-param');
      await createChannel(harness, channelId, { tokenParam: 'key', users: [bob] });
      const backend = await backendFor(harness, channelId);
      await assertClosed(client(harness, { channelId }), 1008, 'missing key');
      // The default parameter name does not count on this channel.
      await assertClosed(client(harness, { channelId, token: bob.token }), 1008, 'missing key');
      await assertClosed(client(harness, { channelId, key: 'wrong' }), 1008, 'invalid token');
      const { open } = await openClient(harness, backend, { channelId, key: bob.token });
      assert.deepEqual(open.query, {
        rawQuery: `?channelId=${channelId}&key=${bob.token}`,
        channelId,
        token: bob.token,
      });
      assert.equal((open.authUser as { senderId?: unknown }).senderId, 'bob');
    });

    test('channel has users + token matches no user → closed 1008 "invalid token"', async () => {
      const channelId = uniqueChannelId('invalid-token');
      const otherChannel = uniqueChannelId('invalid-token-other');
      await createChannel(harness, channelId, { users: [alice, bob] });
      await createChannel(harness, otherChannel, { users: [{ senderId: 'dave', token: 'tok-dave-0004' }] });
      const backend = await backendFor(harness, channelId);
      for (const token of [
        'wrong',
        `${bob.token}x`,
        bob.token.slice(0, -1),
        bob.token.toUpperCase(),
        'tok-dave-0004',
      ]) {
        await assertClosed(client(harness, { channelId, token }), 1008, 'invalid token');
      }
      // The token check comes before the chatId binding.
      await assertClosed(client(harness, { channelId, token: 'wrong', chatId: 'other' }), 1008, 'invalid token');
      await assertBackendToldNothing(harness, backend, channelId, { token: bob.token });
    });

    test('channel has users + token of a disabled user → closed 1008 "invalid token"', async () => {
      const channelId = uniqueChannelId('disabled');
      await createChannel(harness, channelId, { users: [bob, carol] });
      const backend = await backendFor(harness, channelId);
      await assertClosed(client(harness, { channelId, token: carol.token }), 1008, 'invalid token');
      await assertBackendToldNothing(harness, backend, channelId, { token: bob.token });
    });

    test('user bound to a chatId + another chatId given → closed 1008 "chatId does not match token binding"', async () => {
      const channelId = uniqueChannelId('chat-binding');
      await createChannel(harness, channelId, { users: [alice, bob] });
      const backend = await backendFor(harness, channelId);
      await assertClosed(
        client(harness, { channelId, token: alice.token, chatId: 'c2' }),
        1008,
        'chatId does not match token binding',
      );
      await assertBackendToldNothing(harness, backend, channelId, { token: bob.token, chatId: 'c2' });
      // The bound chatId itself, or none, is accepted; an unbound user may name any chat.
      const same = await openClient(harness, backend, { channelId, token: alice.token, chatId: 'c1' });
      assert.equal((same.open.query as { chatId?: unknown }).chatId, 'c1');
      const none = await openClient(harness, backend, { channelId, token: alice.token });
      assert.equal('chatId' in (none.open.query as object), false);
    });

    test('agentId not in the user’s allowAgents → closed 1008 "agent not allowed"', async () => {
      const channelId = uniqueChannelId('agents');
      await createChannel(harness, channelId, { users: [alice, bob] });
      const backend = await backendFor(harness, channelId);
      await assertClosed(
        client(harness, { channelId, token: alice.token, agentId: 'other' }),
        1008,
        'agent not allowed',
      );
      await assertBackendToldNothing(harness, backend, channelId, { token: bob.token, agentId: 'other' });
      // Listed agents (compared without case) and no agent at all pass; a user without a list may use any.
      await openClient(harness, backend, { channelId, token: alice.token, agentId: 'helper' });
      await openClient(harness, backend, { channelId, token: alice.token, agentId: 'Main' });
      await openClient(harness, backend, { channelId, token: alice.token });
    });
  });

  describe('admitted', () => {
    test('checks pass → backend receives relay.client.open {connectionId, query, authUser, timestamp}', async () => {
      const channelId = uniqueChannelId('open');
      await createChannel(harness, channelId, { users: [alice, bob] });
      const backend = await backendFor(harness, channelId);
      const before = Date.now();
      const { open } = await openClient(harness, backend, {
        channelId,
        token: alice.token,
        chatId: 'c1',
        agentId: 'main',
        extra: 'kept',
      });
      assert.deepEqual(Object.keys(open).sort(), ['authUser', 'connectionId', 'query', 'timestamp', 'type']);
      assert.match(String(open.connectionId), uuidPattern);
      assert.deepEqual(open.query, {
        rawQuery: `?channelId=${channelId}&token=${alice.token}&chatId=c1&agentId=main&extra=kept`,
        channelId,
        chatId: 'c1',
        agentId: 'main',
        token: alice.token,
      });
      assert.deepEqual(open.authUser, {
        id: 'alice',
        senderId: 'alice',
        chatId: 'c1',
        token: alice.token,
        allowAgents: ['main', 'helper'],
        enabled: true,
      });
      assert.equal(typeof open.timestamp, 'number');
      assert.ok(Number(open.timestamp) >= before && Number(open.timestamp) <= Date.now());

      // Query fields the client did not give are left out, not sent as null.
      const second = await openClient(harness, backend, { channelId, token: bob.token });
      assert.deepEqual(second.open.query, {
        rawQuery: `?channelId=${channelId}&token=${bob.token}`,
        channelId,
        token: bob.token,
      });
      assert.deepEqual(second.open.authUser, {
        id: 'bob',
        senderId: 'bob',
        chatId: null,
        token: bob.token,
        allowAgents: null,
        enabled: true,
      });
      assert.notEqual(second.connectionId, open.connectionId);
    });

    test('channel without users → no token check, raw query passed through, no authUser', async () => {
      const channelId = uniqueChannelId('open-channel');
      await createChannel(harness, channelId);
      const backend = await backendFor(harness, channelId);
      const bare = await openClient(harness, backend, { channelId });
      assert.deepEqual(bare.open.query, { rawQuery: `?channelId=${channelId}`, channelId });
      assert.equal('authUser' in bare.open, false);

      const raw = `channelId=${channelId}&token=anything&chatId=room%201&agentId=Main&lang=de&flag`;
      const socket = track(connectClientRaw(harness, raw));
      const open = await backend.next('relay.client.open');
      await socket.opened;
      assert.deepEqual(open.query, {
        rawQuery: `?${raw}`,
        channelId,
        chatId: 'room 1',
        agentId: 'Main',
        token: 'anything',
      });
      assert.equal('authUser' in open, false);
    });

    test('open + client sends JSON → backend receives relay.client.event {connectionId, event, timestamp}', async () => {
      const channelId = uniqueChannelId('events');
      await createChannel(harness, channelId);
      const backend = await backendFor(harness, channelId);
      const { client: socket, connectionId } = await openClient(harness, backend, { channelId, chatId: 'c1' });
      const events: unknown[] = [
        { type: 'message.receive', data: { messageId: 'm1', messageType: 'text', content: 'héllo ✓ 😀' } },
        { type: 'history.get', data: { requestId: 'r1', limit: 10, nested: { deep: [1, { two: null }] } } },
        [1, 'two', { three: 3 }],
        'just a string',
        42,
        -0.5,
        false,
        null,
        { text: 'quotes " and \\ backslashes, "}, fake closing' },
      ];
      for (const event of events) {
        const before = Date.now();
        // Always as JSON text: TestSocket sends a string argument as it is.
        socket.send(JSON.stringify(event));
        const frame = await backend.next();
        assert.deepEqual(Object.keys(frame).sort(), ['connectionId', 'event', 'timestamp', 'type']);
        assert.equal(frame.type, 'relay.client.event');
        assert.equal(frame.connectionId, connectionId);
        assert.deepEqual(frame.event, event);
        assert.ok(Number(frame.timestamp) >= before && Number(frame.timestamp) <= Date.now());
      }
      // Whitespace around the JSON does not matter.
      socket.send('  {"type":"spaced"}\n');
      assert.deepEqual((await backend.next()).event, { type: 'spaced' });
    });

    test('open + client closes → backend receives relay.client.close {connectionId, code, reason, timestamp}', async () => {
      const channelId = uniqueChannelId('close');
      await createChannel(harness, channelId);
      const backend = await backendFor(harness, channelId);
      const first = await openClient(harness, backend, { channelId });
      first.client.close(4005, 'leaving now');
      const closed = await backend.next('relay.client.close');
      assert.deepEqual(Object.keys(closed).sort(), ['code', 'connectionId', 'reason', 'timestamp', 'type']);
      assert.equal(closed.connectionId, first.connectionId);
      assert.equal(closed.code, 4005);
      assert.equal(closed.reason, 'leaving now');
      assert.equal(typeof closed.timestamp, 'number');

      const second = await openClient(harness, backend, { channelId });
      second.client.close(1000);
      const normal = await backend.next('relay.client.close');
      assert.deepEqual([normal.connectionId, normal.code, normal.reason], [second.connectionId, 1000, '']);
    });

    test('open + client sends {type:"ping"} → answered {type:"pong", data:{timestamp}}, not forwarded', async () => {
      const channelId = uniqueChannelId('ping');
      await createChannel(harness, channelId);
      const backend = await backendFor(harness, channelId);
      const { client: socket, connectionId } = await openClient(harness, backend, { channelId });
      const before = Date.now();
      socket.send({ type: 'ping' });
      const pong = await socket.next();
      assert.deepEqual(Object.keys(pong).sort(), ['data', 'type']);
      assert.equal(pong.type, 'pong');
      const timestamp = (pong.data as { timestamp?: unknown }).timestamp;
      assert.equal(typeof timestamp, 'number');
      assert.ok(Number(timestamp) >= before && Number(timestamp) <= Date.now());
      assert.deepEqual(Object.keys(pong.data as object), ['timestamp']);
      // The backend's next frame is the message sent after the ping.
      await assertRoundTrip(socket, backend, connectionId);
    });

    test('open + client sends non-JSON → error {code:"INVALID_PAYLOAD"}, stays open, nothing forwarded', async () => {
      const channelId = uniqueChannelId('invalid-payload');
      await createChannel(harness, channelId);
      const backend = await backendFor(harness, channelId);
      const { client: socket, connectionId } = await openClient(harness, backend, { channelId });
      for (const text of ['hello there', '{"type":', "{'single':'quotes'}", '']) {
        socket.send(text);
        const error = await socket.next();
        assert.equal(error.type, 'error');
        const data = error.data as { code?: unknown; message?: unknown };
        assert.equal(data.code, 'INVALID_PAYLOAD');
        assert.equal(typeof data.message, 'string');
      }
      await assertRoundTrip(socket, backend, connectionId);
    });
  });

  describe('siblings (same channel and chatId)', () => {
    test('message.receive from a client → copied to its siblings as message.send with echo:true, to no one else', async () => {
      const channelId = uniqueChannelId('echo');
      const otherChannel = uniqueChannelId('echo-other');
      await createChannel(harness, channelId);
      await createChannel(harness, otherChannel);
      const backend = await backendFor(harness, channelId);
      const otherBackend = await backendFor(harness, otherChannel);
      const a = await openClient(harness, backend, { channelId, chatId: 'c1' });
      const b = await openClient(harness, backend, { channelId, chatId: 'c1' });
      const c = await openClient(harness, backend, { channelId, chatId: 'c2' });
      const noChat = await openClient(harness, backend, { channelId });
      const elsewhere = await openClient(harness, otherBackend, { channelId: otherChannel, chatId: 'c1' });

      // Only message.receive is copied.
      a.client.send({ type: 'history.get', data: { requestId: 'r1' } });
      assert.equal((await backend.next('relay.client.event')).connectionId, a.connectionId);
      const message = { messageId: 'm1', messageType: 'text', content: 'hi all', timestamp: 1 };
      a.client.send({ type: 'message.receive', data: message });
      const forwarded = await backend.next('relay.client.event');
      assert.deepEqual(forwarded.event, { type: 'message.receive', data: message });

      assert.deepEqual(await b.client.next(), { type: 'message.send', data: { ...message, echo: true } });
      // Not back to the sender (its next frame is a marker sent afterwards; a marker to the
      // sender also reaches b, so b's next is that marker, not a second copy).
      await assertNextIsMarker(backend, a.connectionId, a.client);
      assert.equal((await b.client.next()).type, 'marker');
      await assertNextIsMarker(backend, c.connectionId, c.client);
      await assertNextIsMarker(backend, noChat.connectionId, noChat.client);
      await assertNextIsMarker(otherBackend, elsewhere.connectionId, elsewhere.client);
    });

    test('a user bound to a chatId who names no chatId is a sibling of that chat', async () => {
      const channelId = uniqueChannelId('echo-bound');
      await createChannel(harness, channelId, { users: [alice, bob] });
      const backend = await backendFor(harness, channelId);
      const bound = await openClient(harness, backend, { channelId, token: alice.token });
      const named = await openClient(harness, backend, { channelId, token: bob.token, chatId: 'c1' });
      named.client.send({ type: 'message.receive', data: { content: 'to c1' } });
      assert.deepEqual(await bound.client.next(), { type: 'message.send', data: { content: 'to c1', echo: true } });
    });

    test('clients without a chatId are not siblings of each other', async () => {
      const channelId = uniqueChannelId('no-chat');
      await createChannel(harness, channelId);
      const backend = await backendFor(harness, channelId);
      const a = await openClient(harness, backend, { channelId });
      const b = await openClient(harness, backend, { channelId });
      a.client.send({ type: 'message.receive', data: { content: 'alone' } });
      await backend.next('relay.client.event');
      backend.send({ type: 'relay.server.event', connectionId: a.connectionId, event: { type: 'only-a' } });
      assert.deepEqual(await a.client.next(), { type: 'only-a' });
      await assertNextIsMarker(backend, b.connectionId, b.client);
    });

    test('relay.server.event to one connection → also delivered to its siblings, to no one else', async () => {
      const channelId = uniqueChannelId('fanout');
      const otherChannel = uniqueChannelId('fanout-other');
      await createChannel(harness, channelId);
      await createChannel(harness, otherChannel);
      const backend = await backendFor(harness, channelId);
      const otherBackend = await backendFor(harness, otherChannel);
      const a = await openClient(harness, backend, { channelId, chatId: 'c1' });
      const b = await openClient(harness, backend, { channelId, chatId: 'c1' });
      const c = await openClient(harness, backend, { channelId, chatId: 'c2' });
      const elsewhere = await openClient(harness, otherBackend, { channelId: otherChannel, chatId: 'c1' });
      const event = { type: 'message.send', data: { messageId: 'msg-1', chatId: 'c1', content: 'reply' } };
      backend.send({ type: 'relay.server.event', connectionId: b.connectionId, event });
      assert.deepEqual(await b.client.next(), event);
      assert.deepEqual(await a.client.next(), event);
      await assertNextIsMarker(backend, c.connectionId, c.client);
      await assertNextIsMarker(otherBackend, elsewhere.connectionId, elsewhere.client);
    });
  });

  describe('admin changes while connected', () => {
    async function setup(label: string) {
      const channelId = uniqueChannelId(label);
      await createChannel(harness, channelId, { users: [alice, bob] });
      const backend = await backendFor(harness, channelId);
      const a = await openClient(harness, backend, { channelId, token: alice.token });
      const b = await openClient(harness, backend, { channelId, token: bob.token });
      return { channelId, backend, a, b };
    }

    async function assertDropped(
      backend: TestSocket,
      dropped: { client: TestSocket; connectionId: string },
      reason: string,
      kept: { client: TestSocket; connectionId: string },
    ): Promise<void> {
      await assertClosed(dropped.client, 1008, reason);
      const told = await backend.next();
      assert.deepEqual([told.type, told.connectionId, told.code], ['relay.client.close', dropped.connectionId, 1008]);
      await assertRoundTrip(kept.client, backend, kept.connectionId);
      await assertNextIsMarker(backend, kept.connectionId, kept.client);
    }

    test('user deleted → that user’s client closed 1008 "user removed", others stay', async () => {
      const { channelId, backend, a, b } = await setup('user-deleted');
      const response = await harness.request(`/api/channels/${channelId}/users/alice`, { method: 'DELETE' });
      assert.equal(response.status, 200);
      await assertDropped(backend, a, 'user removed', b);
    });

    test('user disabled → that user’s client closed 1008 "user disabled", others stay', async () => {
      const { channelId, backend, a, b } = await setup('user-disabled');
      const response = await harness.request(`/api/channels/${channelId}/users`, {
        json: { senderId: 'alice', enabled: false },
      });
      assert.equal(response.status, 200);
      await assertDropped(backend, a, 'user disabled', b);
    });

    test('user token changed → that user’s client closed 1008 "token changed", others stay', async () => {
      const { channelId, backend, a, b } = await setup('token-changed');
      const response = await harness.request(`/api/channels/${channelId}/users`, {
        json: { senderId: 'bob', token: 'tok-bob-rotated' },
      });
      assert.equal(response.status, 200);
      await assertDropped(backend, b, 'token changed', a);
      // The new token is accepted, the old one no longer.
      await assertClosed(client(harness, { channelId, token: bob.token }), 1008, 'invalid token');
      await openClient(harness, backend, { channelId, token: 'tok-bob-rotated' });
    });

    test('allowAgents narrowed → a client talking to an agent no longer allowed is closed 1008 "agent not allowed"', async () => {
      const channelId = uniqueChannelId('agents-narrowed');
      await createChannel(harness, channelId, { users: [alice, bob] });
      const backend = await backendFor(harness, channelId);
      const a = await openClient(harness, backend, { channelId, token: alice.token, agentId: 'helper' });
      const b = await openClient(harness, backend, { channelId, token: bob.token });
      const response = await harness.request(`/api/channels/${channelId}/users`, {
        json: { senderId: 'alice', allowAgents: ['main'] },
      });
      assert.equal(response.status, 200);
      await assertDropped(backend, a, 'agent not allowed', b);
    });

    test('user updated without a change to token or status → their client stays', async () => {
      const { channelId, backend, a, b } = await setup('user-unchanged');
      const response = await harness.request(`/api/channels/${channelId}/users`, {
        json: { senderId: 'bob', enabled: true },
      });
      assert.equal(response.status, 200);
      await assertRoundTrip(b.client, backend, b.connectionId);
      await assertRoundTrip(a.client, backend, a.connectionId);
    });

    test('channel gets its first user → clients that connected without a token are closed 1008', async () => {
      const channelId = uniqueChannelId('first-user');
      await createChannel(harness, channelId);
      const backend = await backendFor(harness, channelId);
      const tokenless = await openClient(harness, backend, { channelId });
      const guessing = await openClient(harness, backend, { channelId, token: bob.token });
      const response = await harness.request(`/api/channels/${channelId}/users`, { json: bob });
      assert.equal(response.status, 200);
      assert.equal((await within(tokenless.client.closed, 'close of the tokenless client')).code, 1008);
      assert.equal((await within(guessing.client.closed, 'close of the guessing client')).code, 1008);
      // From now on the token is required.
      await assertClosed(client(harness, { channelId }), 1008, 'missing token');
      const admitted = await openClient(harness, backend, { channelId, token: bob.token });
      assert.equal((admitted.open.authUser as { senderId?: unknown }).senderId, 'bob');
    });
  });
});

describe('client counts', () => {
  let harness: RelayHarness;
  before(async () => {
    harness = await startRelay({ env: limitsOff });
  });
  afterEach(closeTracked);
  after(async () => {
    await harness.cleanup();
  });

  interface Counts {
    health: number;
    healthChannel: number | undefined;
    state: number;
    stateChannel: number | undefined;
  }

  async function counts(channelId: string): Promise<Counts> {
    const health = (await (await harness.request('/healthz', { admin: false })).json()) as {
      clientCount: number;
      channels: Array<{ channelId: string; clientCount: number }>;
    };
    const state = (await (await harness.request('/api/state')).json()) as {
      stats: { clientCount: number };
      channels: Array<{ channelId: string; clientCount: number }>;
    };
    return {
      health: health.clientCount,
      healthChannel: health.channels.find((channel) => channel.channelId === channelId)?.clientCount,
      state: state.stats.clientCount,
      stateChannel: state.channels.find((channel) => channel.channelId === channelId)?.clientCount,
    };
  }

  test('/healthz and /api/state clientCount track open clients', async () => {
    const channelId = uniqueChannelId('counts');
    const otherChannel = uniqueChannelId('counts-other');
    await createChannel(harness, channelId);
    await createChannel(harness, otherChannel);
    const backend = await backendFor(harness, channelId);
    const otherBackend = await backendFor(harness, otherChannel);
    assert.deepEqual(await counts(channelId), { health: 0, healthChannel: 0, state: 0, stateChannel: 0 });

    const a = await openClient(harness, backend, { channelId });
    const b = await openClient(harness, backend, { channelId, chatId: 'c1' });
    await openClient(harness, otherBackend, { channelId: otherChannel });
    assert.deepEqual(await counts(channelId), { health: 3, healthChannel: 2, state: 3, stateChannel: 2 });

    // Refused clients are never counted.
    await assertClosed(client(harness, { channelId: uniqueChannelId('missing') }), 1008, 'unknown channelId');
    assert.deepEqual(await counts(channelId), { health: 3, healthChannel: 2, state: 3, stateChannel: 2 });

    a.client.close();
    await backend.next('relay.client.close');
    assert.deepEqual(await counts(channelId), { health: 2, healthChannel: 1, state: 2, stateChannel: 1 });

    backend.send({ type: 'relay.server.close', connectionId: b.connectionId });
    await backend.next('relay.client.close');
    assert.deepEqual(await counts(channelId), { health: 1, healthChannel: 0, state: 1, stateChannel: 0 });
  });
});

/** A client with a query string exactly as given (connectClient would re-encode it). */
function connectClientRaw(harness: RelayHarness, rawQuery: string): TestSocket {
  return new TestSocket(`${harness.wsUrl}/client?${rawQuery}`);
}
