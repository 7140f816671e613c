import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect as netConnect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import WebSocket from 'ws';
import { type RelayHarness, startRelay } from './support/relay-harness.js';
import { nextClientTag, openTaggedClient } from './support/relay-steps.js';
import { within } from './support/within.js';
import { assertClosed, closeSockets, connectBackend, connectClient, TestSocket } from './support/ws-client.js';

/**
 * The relay's configurable limits: messages per client per minute, sockets per address,
 * frame size, heartbeat, the send buffer of slow readers, and the close on shutdown.
 * Each test sets one limit low enough to hit and shows the socket it applies to is
 * closed while the rest of the relay keeps serving.
 */

const channelId = 'limits';
const secret = 'limits-secret-0123456789';

interface ClientOpen {
  connectionId: string;
  query: { rawQuery: string };
}

interface ClientEvent {
  connectionId: string;
  event: unknown;
}

interface ClientClose {
  connectionId: string;
  code: number;
  reason: string;
}

async function relayWithChannel(env: Record<string, string>): Promise<RelayHarness> {
  const harness = await startRelay({ env });
  const created = await harness.request('/api/channels', { json: { channelId, secret } });
  assert.equal(created.status, 200);
  return harness;
}

/** Opens a client of the limits channel and waits until its backend has been told about it. */
function openClient(
  harness: RelayHarness,
  backend: TestSocket,
  query: Record<string, string> = {},
): Promise<{ client: TestSocket; connectionId: string }> {
  return openTaggedClient(harness, backend, { channelId, ...query });
}

/** The next relay.client.close the backend receives for `connectionId`. */
async function clientCloseOf(backend: TestSocket, connectionId: string, timeoutMs = 5000): Promise<ClientClose> {
  for (;;) {
    const close = await backend.next<ClientClose>('relay.client.close', timeoutMs);
    if (close.connectionId === connectionId) return close;
  }
}

/** The client is still connected: a JSON ping is answered by the relay. */
async function assertAnswersPing(client: TestSocket): Promise<void> {
  client.send({ type: 'ping' });
  const pong = await client.next<{ data: { timestamp: unknown } }>('pong');
  assert.equal(typeof pong.data.timestamp, 'number');
}

/** `sent` client events reach the backend, in order; returns their payloads. */
async function receivedEvents(backend: TestSocket, count: number): Promise<unknown[]> {
  const events: unknown[] = [];
  for (let i = 0; i < count; i += 1) events.push((await backend.next<ClientEvent>('relay.client.event')).event);
  return events;
}

describe('RELAY_CLIENT_MESSAGES_PER_MINUTE', () => {
  test('with 5, the 6th message in a minute closes the client 1008 "rate limit exceeded"; the first 5 reach the backend', async () => {
    const harness = await relayWithChannel({ RELAY_CLIENT_MESSAGES_PER_MINUTE: '5' });
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const { client, connectionId } = await openClient(harness, backend);
      await client.opened;
      for (let n = 1; n <= 6; n += 1) client.send({ type: 'message.receive', data: { n } });
      await assertClosed(client, 1008, 'rate limit exceeded', 5000);
      assert.deepEqual(
        await receivedEvents(backend, 5),
        [1, 2, 3, 4, 5].map((n) => ({ type: 'message.receive', data: { n } })),
      );
      const close = await clientCloseOf(backend, connectionId);
      assert.equal(close.code, 1008);
      // The close comes after everything the client got through: the 6th never arrived.
      assert.deepEqual(
        backend.pending().filter((frame) => (frame as { type?: unknown }).type === 'relay.client.event'),
        [],
      );

      // The limit is per client: another client of the same channel has its own 5.
      const other = await openClient(harness, backend);
      await other.client.opened;
      for (let n = 1; n <= 5; n += 1) other.client.send({ type: 'message.receive', data: { n } });
      assert.equal((await receivedEvents(backend, 5)).length, 5);
      assert.equal(other.client.socket.readyState, WebSocket.OPEN);
      await closeSockets([other.client, backend], 5000);
    } finally {
      await harness.cleanup();
    }
  });

  test('unset, the limit is 30 a minute as in the old relay: the 31st message closes the client', async () => {
    const harness = await relayWithChannel({});
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const { client } = await openClient(harness, backend);
      await client.opened;
      for (let n = 1; n <= 31; n += 1) client.send({ type: 'message.receive', data: { n } });
      await assertClosed(client, 1008, 'rate limit exceeded', 5000);
      assert.equal((await receivedEvents(backend, 30)).length, 30);
      await closeSockets([backend], 5000);
    } finally {
      await harness.cleanup();
    }
  });

  test('with 0 there is no limit: 200 messages all reach the backend and the client stays', async () => {
    const harness = await relayWithChannel({ RELAY_CLIENT_MESSAGES_PER_MINUTE: '0' });
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const { client } = await openClient(harness, backend);
      await client.opened;
      for (let n = 1; n <= 200; n += 1) client.send({ type: 'message.receive', data: { n } });
      const events = await receivedEvents(backend, 200);
      assert.deepEqual(
        events,
        Array.from({ length: 200 }, (_, i) => ({ type: 'message.receive', data: { n: i + 1 } })),
      );
      await assertAnswersPing(client);
      await closeSockets([client, backend], 5000);
    } finally {
      await harness.cleanup();
    }
  });
});

describe('RELAY_MAX_CONNECTIONS_PER_IP', () => {
  test('with 3, the 4th concurrent socket from 127.0.0.1 is closed 1008 (too many connections); after one closes a new one is accepted', async () => {
    const harness = await relayWithChannel({ RELAY_MAX_CONNECTIONS_PER_IP: '3' });
    try {
      // The backend counts too: backend + 2 clients = 3 sockets from 127.0.0.1.
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const first = await openClient(harness, backend);
      const second = await openClient(harness, backend);
      await Promise.all([first.client.opened, second.client.opened]);

      const fourth = connectClient(harness.wsUrl, { channelId, n: 'fourth' });
      const refused = await within(fourth.closed, 'close of the 4th socket', 5000);
      assert.equal(refused.code, 1008);
      assert.match(refused.reason, /too many connections/);
      await assertAnswersPing(first.client);
      assert.deepEqual(
        backend.pending().filter((frame) => (frame as { type?: unknown }).type === 'relay.client.open'),
        [],
        'the refused socket was never announced to the backend',
      );

      // Another address is counted on its own (Linux routes all of 127/8 to loopback).
      const elsewhere = new TestSocket(
        `${harness.wsUrl}/client?channelId=${channelId}&n=elsewhere`,
        new WebSocket(`${harness.wsUrl}/client?channelId=${channelId}&n=elsewhere`, { localAddress: '127.0.0.2' }),
      );
      await within(elsewhere.opened, 'open from 127.0.0.2', 5000);
      await assertAnswersPing(elsewhere);
      await closeSockets([elsewhere], 5000);

      first.client.close();
      await clientCloseOf(backend, first.connectionId);
      const replacement = await openClient(harness, backend);
      await replacement.client.opened;
      await assertAnswersPing(replacement.client);
      assert.equal(replacement.client.socket.readyState, WebSocket.OPEN);
      await closeSockets([replacement.client, second.client, backend], 5000);
    } finally {
      await harness.cleanup();
    }
  });

  test('with 0 there is no limit: 60 sockets from 127.0.0.1 (over the default of 50) are all accepted', async () => {
    const harness = await relayWithChannel({ RELAY_MAX_CONNECTIONS_PER_IP: '0' });
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const clients: TestSocket[] = [];
      for (let i = 0; i < 59; i += 1) clients.push((await openClient(harness, backend)).client);
      await Promise.all(clients.map((client) => client.opened));
      const health = (await (await harness.request('/healthz', { admin: false })).json()) as { clientCount: number };
      assert.equal(health.clientCount, 59);
      await assertAnswersPing(clients[clients.length - 1] ?? backend);
      await closeSockets([...clients, backend], 5000);
    } finally {
      await harness.cleanup();
    }
  });
});

describe('RELAY_MAX_PAYLOAD_BYTES', () => {
  test('with 4096, a larger client frame closes that socket 1009; a smaller one passes and the relay keeps serving', async () => {
    const harness = await relayWithChannel({ RELAY_MAX_PAYLOAD_BYTES: '4096' });
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const big = await openClient(harness, backend);
      const bystander = await openClient(harness, backend);
      await Promise.all([big.client.opened, bystander.client.opened]);

      const fits = { type: 'message.receive', data: 'a'.repeat(4000) };
      big.client.send(fits);
      assert.deepEqual((await backend.next<ClientEvent>('relay.client.event')).event, fits);

      big.client.send({ type: 'message.receive', data: 'b'.repeat(5000) });
      const closed = await within(big.client.closed, 'close of the oversized sender', 5000);
      assert.equal(closed.code, 1009);
      await clientCloseOf(backend, big.connectionId);
      assert.deepEqual(
        backend.pending().filter((frame) => (frame as { type?: unknown }).type === 'relay.client.event'),
        [],
        'the oversized frame was not forwarded',
      );

      bystander.client.send({ type: 'message.receive', data: 'still fine' });
      assert.deepEqual((await backend.next<ClientEvent>('relay.client.event')).event, {
        type: 'message.receive',
        data: 'still fine',
      });
      backend.send({ type: 'relay.server.event', connectionId: bystander.connectionId, event: { type: 'reply' } });
      assert.deepEqual(await bystander.client.next('reply'), { type: 'reply' });
      const fresh = await openClient(harness, backend);
      await fresh.client.opened;
      await assertAnswersPing(fresh.client);
      await closeSockets([fresh.client, bystander.client, backend], 5000);
    } finally {
      await harness.cleanup();
    }
  });

  test('with 4096, a larger backend frame closes the backend 1009 and a new backend can connect', async () => {
    const harness = await relayWithChannel({ RELAY_MAX_PAYLOAD_BYTES: '4096' });
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      backend.send({ type: 'relay.server.event', connectionId: 'nobody', event: 'c'.repeat(5000) });
      assert.equal((await within(backend.closed, 'close of the oversized backend', 5000)).code, 1009);
      const next = await connectBackend(harness.wsUrl, channelId, secret);
      const { client } = await openClient(harness, next);
      await client.opened;
      await assertAnswersPing(client);
      await closeSockets([client, next], 5000);
    } finally {
      await harness.cleanup();
    }
  });
});

describe('RELAY_HEARTBEAT_INTERVAL_MS', () => {
  test('with 100, a client that does not answer pings is dropped and its backend told; a normal client stays across several intervals', async () => {
    const harness = await relayWithChannel({ RELAY_HEARTBEAT_INTERVAL_MS: '100' });
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      let backendPings = 0;
      backend.socket.on('ping', () => {
        backendPings += 1;
      });
      const normal = await openClient(harness, backend);
      let pings = 0;
      const fivePings = new Promise<void>((resolve) => {
        normal.client.socket.on('ping', () => {
          pings += 1;
          if (pings === 5) resolve();
        });
      });

      const muteTag = nextClientTag();
      const muteUrl = `${harness.wsUrl}/client?channelId=${channelId}&n=${muteTag}`;
      const mute = new TestSocket(muteUrl, new WebSocket(muteUrl, { autoPong: false }));
      const muteOpen = await backend.next<ClientOpen>('relay.client.open');
      assert.ok(muteOpen.query.rawQuery.endsWith(`n=${muteTag}`));

      const dropped = await within(mute.closed, 'drop of the client that does not answer pings', 5000);
      assert.equal(dropped.code, 1006, 'the relay cut the socket off without a close handshake');
      const close = await clientCloseOf(backend, muteOpen.connectionId);
      assert.equal(close.connectionId, muteOpen.connectionId);

      await within(fivePings, 'five heartbeat pings to the normal client', 5000);
      assert.equal(normal.client.socket.readyState, WebSocket.OPEN);
      assert.equal(backend.socket.readyState, WebSocket.OPEN);
      assert.ok(backendPings >= 2, 'the backend is pinged too');
      await assertAnswersPing(normal.client);
      const health = (await (await harness.request('/healthz', { admin: false })).json()) as {
        clientCount: number;
        backendCount: number;
      };
      assert.equal(health.clientCount, 1);
      assert.equal(health.backendCount, 1);
      await closeSockets([normal.client, backend], 5000);
    } finally {
      await harness.cleanup();
    }
  });
});

/** A WebSocket client made by hand on a raw TCP socket, so the test can stop reading. */
async function rawClient(port: number, path: string): Promise<Socket> {
  const socket = netConnect(port, '127.0.0.1');
  const key = randomBytes(16).toString('base64');
  await new Promise<void>((resolve, reject) => {
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (head.startsWith('HTTP/1.1 101')) resolve();
      else reject(new Error(`handshake refused: ${head.split('\r\n')[0]}`));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
  socket.on('error', () => undefined);
  return socket;
}

describe('RELAY_SEND_BUFFER_LIMIT_BYTES', () => {
  test('with 65536, a client that stops reading is closed instead of buffered; the relay keeps serving the others', async () => {
    const limit = 65_536;
    const harness = await relayWithChannel({ RELAY_SEND_BUFFER_LIMIT_BYTES: String(limit) });
    let slow: Socket | undefined;
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const reader = await openClient(harness, backend, { chatId: 'reader' });
      await reader.client.opened;

      const slowTag = nextClientTag();
      const port = Number(new URL(harness.url).port);
      slow = await rawClient(port, `/client?channelId=${channelId}&chatId=slow&n=${slowTag}`);
      // Stop reading: once the socket's buffers fill, everything the relay sends stays with it.
      slow.pause();
      let slowOpen: ClientOpen;
      do slowOpen = await backend.next<ClientOpen>('relay.client.open');
      while (!slowOpen.query.rawQuery.endsWith(`n=${slowTag}`));
      const slowConnectionId = slowOpen.connectionId;

      const hub = harness.relay.context.hub;
      const relaySide = hub.clientOf(channelId, slowConnectionId)?.peer;
      assert.ok(relaySide, 'the relay has the slow client');
      let maxBuffered = 0;
      const sample = setInterval(() => {
        maxBuffered = Math.max(maxBuffered, relaySide.socket.bufferedAmount);
      }, 1);

      const frameBytes = 64 * 1024;
      const event = { type: 'message.send', data: 'z'.repeat(frameBytes) };
      let sentBytes = 0;
      try {
        // Rounds of 1 MB until the relay gives up on the reader, at most 64 MB.
        for (let round = 0; round < 64 && relaySide.open; round += 1) {
          for (let i = 0; i < 16; i += 1) {
            backend.send({ type: 'relay.server.event', connectionId: slowConnectionId, event });
            sentBytes += frameBytes;
          }
          // The relay has handled every frame sent so far once it answers this ping.
          await new Promise<void>((resolve) => {
            backend.socket.once('pong', () => resolve());
            backend.socket.ping();
          });
          maxBuffered = Math.max(maxBuffered, relaySide.socket.bufferedAmount);
        }
      } finally {
        clearInterval(sample);
      }
      assert.equal(relaySide.open, false, `the relay still buffers for the slow reader after ${sentBytes} bytes`);
      assert.ok(
        maxBuffered <= limit + 2 * frameBytes,
        `the relay buffered ${maxBuffered} bytes for the slow reader (limit ${limit})`,
      );

      // Closed with 1013, or cut off after the grace period since it reads no close frame.
      const close = await clientCloseOf(backend, slowConnectionId, 10_000);
      assert.ok([1006, 1013].includes(close.code), `closed with ${close.code}`);
      assert.equal(hub.clientOf(channelId, slowConnectionId), undefined);
      const health = (await (await harness.request('/healthz', { admin: false })).json()) as { clientCount: number };
      assert.equal(health.clientCount, 1, 'only the reading client is left');

      backend.send({ type: 'relay.server.event', connectionId: reader.connectionId, event: { type: 'after-flood' } });
      assert.deepEqual(await reader.client.next('after-flood'), { type: 'after-flood' });
      await closeSockets([reader.client, backend], 5000);
    } finally {
      slow?.destroy();
      await harness.cleanup();
    }
  });
});

describe('graceful shutdown', () => {
  test('destroying the relay closes open backend and client sockets with 1001', async () => {
    const harness = await relayWithChannel({});
    try {
      const backend = await connectBackend(harness.wsUrl, channelId, secret);
      const first = await openClient(harness, backend);
      const second = await openClient(harness, backend);
      await Promise.all([first.client.opened, second.client.opened]);
      const stopped = harness.stop(); // RelayServer.destroy()
      await assertClosed(backend, 1001, 'server shutting down', 5000);
      await assertClosed(first.client, 1001, 'server shutting down', 5000);
      await assertClosed(second.client, 1001, 'server shutting down', 5000);
      await within(stopped, 'relay shutdown', 10_000);
      const refused = new WebSocket(`${harness.wsUrl}/backend`);
      await assert.rejects(
        new Promise((resolve, reject) => {
          refused.once('open', resolve);
          refused.once('error', reject);
        }),
      );
    } finally {
      await harness.cleanup();
    }
  });

  test('a request whose body never finishes does not hold shutdown open', async () => {
    const harness = await relayWithChannel({});
    const socket = netConnect(Number(new URL(harness.url).port), '127.0.0.1');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('error', reject);
      });
      socket.on('error', () => undefined);
      const answered = new Promise<string>((resolve) => socket.once('data', (chunk) => resolve(chunk.toString())));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      // Headers promise a body that never comes. The relay answers 401 at once (auth comes
      // before the body) but the request stays unfinished, so the connection is busy, not
      // idle: only the shutdown grace period ends it (Node's own request timeout is 5 min).
      socket.write('POST /api/channels HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n');
      socket.write('Content-Length: 100\r\n\r\n{"channelId":');
      assert.match(await within(answered, 'the 401 answer', 5000), /^HTTP\/1\.1 401 /);
      await within(harness.stop(), 'relay shutdown', 10_000);
      await within(closed, 'the half-sent request closed', 5000);
    } finally {
      socket.destroy();
      await harness.cleanup();
    }
  });
});
