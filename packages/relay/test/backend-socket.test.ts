import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { type ChannelJson, stateChannel } from './support/http-api.js';
import { limitsOff, type RelayHarness, startRelay } from './support/relay-harness.js';
import {
  assertNextIsMarker,
  assertRoundTrip,
  channelIdSequence,
  createChannel,
  trackedSockets,
} from './support/relay-steps.js';
import { within } from './support/within.js';
import { assertClosed, connectBackend, connectClient, TestSocket } from './support/ws-client.js';

const { track, closeTracked, backendFor, openClient } = trackedSockets();
const uniqueChannelId = channelIdSequence('backend');

/** A raw /backend socket that has not said hello yet. */
async function rawBackend(harness: RelayHarness): Promise<TestSocket> {
  const socket = track(new TestSocket(`${harness.wsUrl}/backend`));
  await socket.opened;
  return socket;
}

async function stateOf(harness: RelayHarness, channelId: string): Promise<ChannelJson> {
  const channel = await stateChannel(harness, channelId);
  assert.ok(channel, `channel ${channelId} in /api/state`);
  return channel;
}

describe('backend connection: hello deadline (RELAY_HELLO_TIMEOUT_MS=300)', () => {
  let harness: RelayHarness;
  before(async () => {
    harness = await startRelay({ env: { ...limitsOff, RELAY_HELLO_TIMEOUT_MS: '300' } });
  });
  afterEach(closeTracked);
  after(async () => {
    await harness.cleanup();
  });

  test('no backend + no hello within the deadline → closed 1008 "missing relay.backend.hello"', async () => {
    const socket = await rawBackend(harness);
    await assertClosed(socket, 1008, 'missing relay.backend.hello');
  });

  test('no backend + valid hello within the deadline → ack, and the backend outlives the deadline', async () => {
    const channelId = uniqueChannelId('deadline');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    // A socket opened later that says nothing is closed at its deadline, so ours has passed too.
    const silent = await rawBackend(harness);
    await assertClosed(silent, 1008, 'missing relay.backend.hello');
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    await assertNextIsMarker(backend, connectionId, client);
  });
});

describe('backend connection', () => {
  let harness: RelayHarness;
  before(async () => {
    harness = await startRelay({ env: limitsOff });
  });
  afterEach(closeTracked);
  after(async () => {
    await harness.cleanup();
  });

  test('no backend + valid hello → relay.backend.ack {type, channelId, timestamp}', async () => {
    const channelId = uniqueChannelId('ack');
    const secret = await createChannel(harness, channelId);
    const socket = await rawBackend(harness);
    const before = Date.now();
    socket.send({ type: 'relay.backend.hello', channelId, secret, instanceId: 'node-a', timestamp: before });
    const ack = await socket.next();
    assert.deepEqual(Object.keys(ack).sort(), ['channelId', 'timestamp', 'type']);
    assert.equal(ack.type, 'relay.backend.ack');
    assert.equal(ack.channelId, channelId);
    assert.equal(typeof ack.timestamp, 'number');
    assert.ok(Number(ack.timestamp) >= before && Number(ack.timestamp) <= Date.now());
  });

  test('first frame not a hello → closed 1008 "expected relay.backend.hello"', async () => {
    const channelId = uniqueChannelId('not-hello');
    await createChannel(harness, channelId);
    for (const frame of [
      { type: 'relay.server.event', connectionId: 'x', event: {} },
      { channelId },
      { type: 'ping' },
    ]) {
      const socket = await rawBackend(harness);
      socket.send(frame);
      await assertClosed(socket, 1008, 'expected relay.backend.hello');
    }
  });

  test('unknown channelId → relay.backend.error {message, timestamp}, then closed 1008 "backend auth failed"', async () => {
    const socket = await rawBackend(harness);
    socket.send({ type: 'relay.backend.hello', channelId: uniqueChannelId('unknown'), secret: 'whatever' });
    const error = await socket.next();
    assert.deepEqual(Object.keys(error).sort(), ['message', 'timestamp', 'type']);
    assert.equal(error.type, 'relay.backend.error');
    assert.equal(error.message, 'backend auth failed');
    assert.equal(typeof error.timestamp, 'number');
    await assertClosed(socket, 1008, 'backend auth failed');
  });

  test('wrong secret → relay.backend.error, then closed 1008 "backend auth failed"', async () => {
    const channelId = uniqueChannelId('wrong-secret');
    const secret = await createChannel(harness, channelId);
    const wrong: Array<Record<string, unknown>> = [
      { secret: `${secret}x` },
      { secret: secret.slice(0, -1) },
      { secret: '' },
      {},
      { secret: 42 },
      { secret: { value: secret } },
    ];
    for (const variant of wrong) {
      const socket = await rawBackend(harness);
      socket.send({ type: 'relay.backend.hello', channelId, ...variant });
      const error = await socket.next();
      assert.equal(error.type, 'relay.backend.error');
      assert.equal(error.message, 'backend auth failed');
      await assertClosed(socket, 1008, 'backend auth failed');
    }
    // The channel still accepts its real secret.
    await backendFor(harness, channelId);
  });

  test('a valid hello right behind a refused frame on the same socket is not accepted', async () => {
    const channelId = uniqueChannelId('refused-then-hello');
    const secret = await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    for (const first of [{ type: 'nope' }, { type: 'relay.backend.hello', channelId, secret: 'wrong' }]) {
      const socket = await rawBackend(harness);
      // Both frames go out back to back, so the relay reads the hello while it is closing the socket.
      socket.send(first);
      socket.send({ type: 'relay.backend.hello', channelId, secret });
      const closed = await within(socket.closed, 'close of the refused backend');
      assert.equal(closed.code, 1008);
      assert.equal(
        socket.pending().some((frame) => (frame as { type?: unknown }).type === 'relay.backend.ack'),
        false,
      );
    }
    // The real backend was never replaced, and its client was never dropped.
    await assertRoundTrip(client, backend, connectionId);
    await assertNextIsMarker(backend, connectionId, client);
  });

  test('non-JSON frame before the hello → closed 1003 "invalid json"', async () => {
    for (const text of ['not json', '{"type":', '42', '[1,2]', 'null']) {
      const socket = await rawBackend(harness);
      socket.send(text);
      await assertClosed(socket, 1003, 'invalid json');
    }
  });

  test('backend connected + non-JSON frame → closed 1003 "invalid json", its clients closed 1012', async () => {
    const channelId = uniqueChannelId('bad-json');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client } = await openClient(harness, backend, { channelId });
    backend.send('{{ not json');
    await assertClosed(backend, 1003, 'invalid json');
    await assertClosed(client, 1012, 'backend disconnected');
  });

  test('backend connected + a new valid hello for the channel → older closed 1012 "backend replaced", new acked, clients announced and kept', async () => {
    const channelId = uniqueChannelId('replace');
    const token = 'tok-replace-0001';
    await createChannel(harness, channelId, { users: [{ senderId: 'alice', token, chatId: 'c1' }] });
    const first = await backendFor(harness, channelId, 'first');
    const a = await openClient(harness, first, { channelId, token, chatId: 'c1', agentId: 'main' });
    const b = await openClient(harness, first, { channelId, token });

    const second = await backendFor(harness, channelId, 'second');
    await assertClosed(first, 1012, 'backend replaced');
    const announced = [await second.next('relay.client.open'), await second.next('relay.client.open')];
    assert.deepEqual(announced.map((frame) => frame.connectionId).sort(), [a.connectionId, b.connectionId].sort());
    const byId = new Map(announced.map((frame) => [String(frame.connectionId), frame]));
    const announcedA = byId.get(a.connectionId);
    assert.ok(announcedA);
    assert.deepEqual(announcedA.query, {
      rawQuery: `?${new URLSearchParams({ channelId, token, chatId: 'c1', agentId: 'main' }).toString()}`,
      channelId,
      chatId: 'c1',
      agentId: 'main',
      token,
    });
    assert.deepEqual(announcedA.authUser, {
      id: 'alice',
      senderId: 'alice',
      chatId: 'c1',
      token,
      allowAgents: null,
      enabled: true,
    });
    assert.equal(typeof announcedA.timestamp, 'number');

    // Both clients stay connected and now talk to the new backend.
    await assertRoundTrip(a.client, second, a.connectionId);
    await assertRoundTrip(b.client, second, b.connectionId);
    await assertNextIsMarker(second, b.connectionId, b.client);
  });

  test('backend replaced + the old backend closes late → the new backend’s clients stay connected', async () => {
    const channelId = uniqueChannelId('late-close');
    await createChannel(harness, channelId);
    const first = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, first, { channelId, chatId: 'c1' });
    const second = await backendFor(harness, channelId);
    await second.next('relay.client.open');
    // The relay has now seen the old socket's close completely.
    await assertClosed(first, 1012, 'backend replaced');
    await assertRoundTrip(client, second, connectionId);
    await assertNextIsMarker(second, connectionId, client);
    // And a new client is admitted (the channel still has a backend).
    const late = await openClient(harness, second, { channelId });
    await assertNextIsMarker(second, late.connectionId, late.client);
    const state = await stateOf(harness, channelId);
    assert.equal(state.backendConnected, true);
  });

  test('backend replaced → frames the old backend still sends are ignored', async () => {
    const channelId = uniqueChannelId('replaced-frames');
    await createChannel(harness, channelId);
    const first = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, first, { channelId });
    // Keep the old backend from reading the relay's close frame, so it can still send.
    first.socket.pause();
    const second = await backendFor(harness, channelId);
    await second.next('relay.client.open');
    first.send({ type: 'relay.server.event', connectionId, event: { type: 'from-old-backend' } });
    first.send({ type: 'relay.server.close', connectionId, code: 4000, reason: 'old backend' });
    first.socket.resume();
    // The relay reads the old socket in order, so by its close it has seen both frames.
    await assertClosed(first, 1012, 'backend replaced');
    await assertNextIsMarker(second, connectionId, client);
    await assertRoundTrip(client, second, connectionId);
  });

  test('backend connected + backend disconnects → its clients closed 1012 "backend disconnected"', async () => {
    const channelId = uniqueChannelId('disconnect');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const a = await openClient(harness, backend, { channelId, chatId: 'c1' });
    const b = await openClient(harness, backend, { channelId });
    backend.close(1000, 'bye');
    await assertClosed(a.client, 1012, 'backend disconnected');
    await assertClosed(b.client, 1012, 'backend disconnected');
    const late = track(connectClient(harness.wsUrl, { channelId }));
    await assertClosed(late, 1013, 'backend unavailable');
  });

  test('backend connected + DELETE /api/channels/:channelId → backend and clients closed 1012 "channel removed"', async () => {
    const channelId = uniqueChannelId('delete');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const a = await openClient(harness, backend, { channelId, chatId: 'c1' });
    const b = await openClient(harness, backend, { channelId });
    const response = await harness.request(`/api/channels/${channelId}`, { method: 'DELETE' });
    assert.equal(response.status, 200);
    await assertClosed(backend, 1012, 'channel removed');
    await assertClosed(a.client, 1012, 'channel removed');
    await assertClosed(b.client, 1012, 'channel removed');
    const again = await rawBackend(harness);
    again.send({ type: 'relay.backend.hello', channelId, secret: `secret-${channelId}` });
    assert.equal((await again.next()).type, 'relay.backend.error');
    await assertClosed(again, 1008, 'backend auth failed');
  });

  test('backend connected + channel secret changed by POST /api/channels → backend closed 1008, its clients dropped', async () => {
    const channelId = uniqueChannelId('secret-change');
    const oldSecret = await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client } = await openClient(harness, backend, { channelId });
    const response = await harness.request('/api/channels', { json: { channelId, secret: 'a-brand-new-secret' } });
    assert.equal(response.status, 200);
    const closed = await within(backend.closed, 'close of the backend');
    assert.equal(closed.code, 1008);
    assert.equal((await within(client.closed, 'close of the client')).code, 1012);
    // The old secret no longer authenticates; the new one does.
    const stale = await rawBackend(harness);
    stale.send({ type: 'relay.backend.hello', channelId, secret: oldSecret });
    await assertClosed(stale, 1008, 'backend auth failed');
    track(await connectBackend(harness.wsUrl, channelId, 'a-brand-new-secret'));
  });

  test('backend dropped by a secret change → lastDisconnectedAt recorded in /api/state', async () => {
    const channelId = uniqueChannelId('secret-change-state');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const beforeChange = Date.now();
    const response = await harness.request('/api/channels', { json: { channelId, secret: 'rotated-secret-123' } });
    assert.equal(response.status, 200);
    await within(backend.closed, 'close of the backend');
    // The relay records the disconnect when it sees the socket close; poll until it has.
    let state = await stateOf(harness, channelId);
    for (let attempt = 0; attempt < 100 && state.lastDisconnectedAt === null; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      state = await stateOf(harness, channelId);
    }
    assert.equal(state.backendConnected, false);
    assert.ok(Number(state.lastDisconnectedAt) >= beforeChange, 'lastDisconnectedAt set after the change');
  });

  test('backend connected + channel updated with the same secret → backend and clients stay', async () => {
    const channelId = uniqueChannelId('same-secret');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    const response = await harness.request('/api/channels', { json: { channelId, label: 'Renamed' } });
    assert.equal(response.status, 200);
    await assertRoundTrip(client, backend, connectionId);
    await assertNextIsMarker(backend, connectionId, client);
  });

  test('relay.server.event → its event is delivered to that client', async () => {
    const channelId = uniqueChannelId('server-event');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    const events: unknown[] = [
      { type: 'message.send', data: { content: 'hello', nested: { list: [1, 'two', null] } } },
      [1, 2, 3],
      'plain text',
      7.5,
      true,
      null,
    ];
    for (const event of events) {
      backend.send({ type: 'relay.server.event', connectionId, event });
      assert.deepEqual(await client.next(), event);
    }
  });

  test('relay.server.event → only the named client receives it', async () => {
    const channelId = uniqueChannelId('server-event-one');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const a = await openClient(harness, backend, { channelId, chatId: 'c1' });
    const b = await openClient(harness, backend, { channelId, chatId: 'c2' });
    backend.send({ type: 'relay.server.event', connectionId: a.connectionId, event: { type: 'for-a' } });
    assert.deepEqual(await a.client.next(), { type: 'for-a' });
    await assertNextIsMarker(backend, b.connectionId, b.client);
  });

  test('relay.server.reject without code or message → client closed 1008 "rejected"', async () => {
    const channelId = uniqueChannelId('reject-default');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    backend.send({ type: 'relay.server.reject', connectionId });
    await assertClosed(client, 1008, 'rejected');
    const close = await backend.next('relay.client.close');
    assert.equal(close.connectionId, connectionId);
    assert.equal(close.code, 1008);
  });

  test('relay.server.reject {code, message} → client closed with that code and message', async () => {
    const channelId = uniqueChannelId('reject');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    backend.send({ type: 'relay.server.reject', connectionId, code: 4401, message: 'Invalid token' });
    await assertClosed(client, 4401, 'Invalid token');
  });

  test('relay.server.close without code or reason → client closed 1000 "closed"', async () => {
    const channelId = uniqueChannelId('close-default');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    backend.send({ type: 'relay.server.close', connectionId });
    await assertClosed(client, 1000, 'closed');
  });

  test('relay.server.close {code, reason} → client closed with that code and reason', async () => {
    const channelId = uniqueChannelId('close');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    backend.send({ type: 'relay.server.close', connectionId, code: 4000, reason: 'session over' });
    await assertClosed(client, 4000, 'session over');
  });

  test('relay.server.reject/close with an invalid close code → client closed 1008, relay keeps serving', async () => {
    const channelId = uniqueChannelId('invalid-code');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const invalid: unknown[] = [999, 1004, 1005, 1006, 1015, 2000, 2999, 5000, 1000.5, -1, 'x', '4000', true];
    for (const type of ['relay.server.reject', 'relay.server.close']) {
      for (const code of invalid) {
        const { client, connectionId } = await openClient(harness, backend, { channelId });
        backend.send({ type, connectionId, code, message: 'bad code', reason: 'bad code' });
        const closed = await within(client.closed, `close for code ${String(code)}`);
        assert.equal(closed.code, 1008, `${type} with code ${JSON.stringify(code)}`);
        const told = await backend.next('relay.client.close');
        assert.deepEqual([told.connectionId, told.code], [connectionId, 1008]);
      }
    }
    // Still serving: the backend is connected and a new client round-trips.
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    await assertRoundTrip(client, backend, connectionId);
    await assertNextIsMarker(backend, connectionId, client);
  });

  test('relay.server.reject/close with an over-long reason → reason cut to at most 123 bytes, not an error', async () => {
    const channelId = uniqueChannelId('long-reason');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const cases = [
      { type: 'relay.server.reject', field: 'message', text: 'r'.repeat(300), code: 4001 },
      { type: 'relay.server.close', field: 'reason', text: 'c'.repeat(300), code: 4002 },
      // Two bytes a character: the cut must not split one.
      { type: 'relay.server.close', field: 'reason', text: 'é'.repeat(150), code: 4003 },
      { type: 'relay.server.close', field: 'reason', text: '😀'.repeat(80), code: 4004 },
    ];
    for (const { type, field, text, code } of cases) {
      const { client, connectionId } = await openClient(harness, backend, { channelId });
      backend.send({ type, connectionId, code, [field]: text });
      const closed = await within(client.closed, `close with a long ${field}`);
      assert.equal(closed.code, code);
      assert.ok(Buffer.byteLength(closed.reason) <= 123, `${Buffer.byteLength(closed.reason)} bytes`);
      assert.ok(Buffer.byteLength(closed.reason) > 100, 'cut, not dropped');
      assert.ok(text.startsWith(closed.reason), 'a prefix of the reason given');
      assert.equal(closed.reason.includes('\uFFFD'), false);
      const told = await backend.next('relay.client.close');
      assert.deepEqual([told.connectionId, told.code, told.reason], [connectionId, code, closed.reason]);
    }
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    await assertRoundTrip(client, backend, connectionId);
  });

  test('unknown frame types are ignored: no answer, no close', async () => {
    const channelId = uniqueChannelId('unknown-type');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    backend.send({ type: 'relay.server.bogus', connectionId, event: { type: 'should-not-arrive' } });
    backend.send({ connectionId, event: { type: 'no-type' } });
    backend.send({ type: 'relay.backend.hello', channelId, secret: `secret-${channelId}` });
    // The client sees nothing of those, and the backend gets no answer to them.
    await assertNextIsMarker(backend, connectionId, client);
    await assertRoundTrip(client, backend, connectionId);
  });

  test('frames naming a connectionId of another channel are ignored', async () => {
    const channelA = uniqueChannelId('other-a');
    const channelB = uniqueChannelId('other-b');
    await createChannel(harness, channelA);
    await createChannel(harness, channelB);
    const backendA = await backendFor(harness, channelA);
    const backendB = await backendFor(harness, channelB);
    const a = await openClient(harness, backendA, { channelId: channelA });
    const b = await openClient(harness, backendB, { channelId: channelB, chatId: 'c1' });
    backendA.send({ type: 'relay.server.event', connectionId: b.connectionId, event: { type: 'cross-channel' } });
    backendA.send({ type: 'relay.server.reject', connectionId: b.connectionId, code: 4001, message: 'cross' });
    backendA.send({ type: 'relay.server.close', connectionId: b.connectionId, code: 4002, reason: 'cross' });
    // Channel A's backend is still connected and serving…
    await assertNextIsMarker(backendA, a.connectionId, a.client);
    // …and channel B's client got nothing and is still open.
    await assertNextIsMarker(backendB, b.connectionId, b.client);
    await assertRoundTrip(b.client, backendB, b.connectionId);
  });

  test('frames naming an unknown or missing connectionId are ignored', async () => {
    const channelId = uniqueChannelId('unknown-connection');
    await createChannel(harness, channelId);
    const backend = await backendFor(harness, channelId);
    const { client, connectionId } = await openClient(harness, backend, { channelId });
    for (const target of ['00000000-0000-4000-8000-000000000000', 42, null, undefined]) {
      backend.send({ type: 'relay.server.event', connectionId: target, event: { type: 'nowhere' } });
      backend.send({ type: 'relay.server.close', connectionId: target });
    }
    await assertNextIsMarker(backend, connectionId, client);
  });

  test('/api/state: instanceId and lastConnectedAt after connect, lastDisconnectedAt after disconnect', async () => {
    const channelId = uniqueChannelId('state');
    await createChannel(harness, channelId);
    const initial = await stateOf(harness, channelId);
    assert.equal(initial.backendConnected, false);
    assert.equal(initial.lastConnectedAt, null);
    assert.equal(initial.lastDisconnectedAt, null);

    const beforeConnect = Date.now();
    const backend = await backendFor(harness, channelId, 'instance-42');
    const connected = await stateOf(harness, channelId);
    assert.equal(connected.backendConnected, true);
    assert.equal(connected.instanceId, 'instance-42');
    assert.equal(typeof connected.lastConnectedAt, 'number');
    assert.ok(Number(connected.lastConnectedAt) >= beforeConnect && Number(connected.lastConnectedAt) <= Date.now());
    assert.equal(connected.lastDisconnectedAt, null);

    // A client on the channel lets the test see when the relay has handled the backend's close.
    const { client } = await openClient(harness, backend, { channelId });
    const beforeDisconnect = Date.now();
    backend.close();
    await assertClosed(client, 1012, 'backend disconnected');
    const disconnected = await stateOf(harness, channelId);
    assert.equal(disconnected.backendConnected, false);
    assert.equal(disconnected.instanceId, 'instance-42');
    assert.equal(disconnected.lastConnectedAt, connected.lastConnectedAt);
    assert.equal(typeof disconnected.lastDisconnectedAt, 'number');
    assert.ok(
      Number(disconnected.lastDisconnectedAt) >= beforeDisconnect &&
        Number(disconnected.lastDisconnectedAt) <= Date.now(),
    );
  });
});
