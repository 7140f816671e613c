import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { type StoredChannelJson, storedChannels } from './support/http-api.js';
import { adminToken, limitsOff, type RelayHarness, startRelay } from './support/relay-harness.js';
import { openTaggedClient } from './support/relay-steps.js';
import { closeSockets, connectBackend, connectClient, type TestSocket } from './support/ws-client.js';

/**
 * Hostile input against a real relay: seeded random WebSocket frames and HTTP requests.
 * The seed is fixed, so a failure names a frame that can be replayed.
 */
const seed = 0x8ca5d544;
const maxPayloadBytes = 256 * 1024;
const adminBodyLimitBytes = 16 * 1024;

/** mulberry32: a tiny deterministic PRNG, good enough to pick fuzz cases. */
class Random {
  private state: number;

  constructor(seedValue: number) {
    this.state = seedValue >>> 0;
  }

  /** A float in [0, 1). */
  float(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined && items.length === 0) throw new Error('pick from an empty list');
    return item as T;
  }

  bytes(length: number): Buffer {
    const buffer = Buffer.alloc(length);
    for (let i = 0; i < length; i += 1) buffer[i] = this.int(256);
    return buffer;
  }

  /** Printable ASCII, plus (when `unicode`) control characters, emoji, RTL and lone surrogates. */
  text(maxLength: number, unicode = true): string {
    const length = this.int(maxLength + 1);
    let out = '';
    for (let i = 0; i < length; i += 1) {
      if (unicode && this.chance(0.15)) {
        out += this.pick(['\u0000', '\u001f', '\u2028', '\u202e', '\uffff', '\ud800', '\udfff', '😀', 'é', '"', '\\']);
      } else {
        out += String.fromCharCode(this.between(0x20, 0x7e));
      }
    }
    return out;
  }

  alnum(min: number, max: number): string {
    const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
    let out = '';
    const length = this.between(min, max);
    for (let i = 0; i < length; i += 1) out += alphabet[this.int(alphabet.length)];
    return out;
  }

  /** An arbitrary JSON value of bounded size. */
  json(depth = 0): unknown {
    switch (this.int(depth > 3 ? 5 : 7)) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.pick([0, -1, 1.5, 1e308, -1e-308, 2 ** 53 + 2, this.int(1e9), -this.int(70000)]);
      case 3:
        return this.text(24);
      case 4:
        return this.pick(['', 'null', '{}', '__proto__', 'relay.server.event']);
      case 5:
        return Array.from({ length: this.int(5) }, () => this.json(depth + 1));
      default:
        // Object.fromEntries defines own properties, so "__proto__" stays an ordinary key.
        return Object.fromEntries(
          Array.from({ length: this.int(5) }, () => [
            this.pick(['type', 'event', 'data', 'connectionId', '__proto__', 'constructor', 'toJSON', this.text(8)]),
            this.json(depth + 1),
          ]),
        );
    }
  }
}

interface Frame {
  kind: string;
  data: string | Buffer;
  /** Sent as a binary frame; otherwise a text frame (even when `data` is bytes that are not UTF-8). */
  binary: boolean;
}

/** Deeply nested JSON: arrays or objects `depth` levels down. */
function deepJson(random: Random, depth: number): string {
  return random.chance(0.5)
    ? `${'['.repeat(depth)}${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Values for fields that expect a string id, a close code, a reason or an event. */
function wrongValue(random: Random): unknown {
  return random.pick<unknown>([
    123,
    -1,
    1.5,
    {},
    { id: 'x' },
    [],
    ['a'],
    null,
    true,
    '',
    '1000',
    'x'.repeat(300),
    '€'.repeat(100),
    '\ud800',
    1e21,
  ]);
}

/** Frames that look like what a peer may send, with their fields of the wrong types. */
function typedFrame(random: Random, types: readonly string[], connectionIds: readonly unknown[]): Frame {
  // The first type is the one that carries data the relay passes on; it is picked most.
  const fields: Record<string, unknown> = { type: random.chance(0.4) ? types[0] : random.pick(types) };
  if (random.chance(0.8)) fields.connectionId = random.chance(0.7) ? random.pick(connectionIds) : wrongValue(random);
  if (random.chance(0.7)) {
    fields.code = random.pick<unknown>([
      'x',
      '1000',
      1000.5,
      -1,
      0,
      999,
      1004,
      1005,
      1006,
      1015,
      2999,
      3000,
      4999,
      5000,
      65536,
      1e20,
      null,
      {},
      [],
      true,
      1000,
      4000,
    ]);
  }
  for (const name of ['reason', 'message', 'channelId', 'secret', 'instanceId']) {
    if (random.chance(0.3)) fields[name] = wrongValue(random);
  }
  // `event` missing (undefined), or any value, sometimes deeply nested or huge.
  const eventKind = random.int(7);
  let deepEvent: string | undefined;
  if (eventKind === 1) fields.event = random.json();
  else if (eventKind === 2) fields.event = wrongValue(random);
  else if (eventKind === 3) fields.data = random.json();
  else if (eventKind >= 4 && eventKind <= 5) deepEvent = deepJson(random, random.pick([1000, 20_000, 60_000]));
  else if (eventKind === 6) fields.event = { type: 'message.send', data: 'x'.repeat(random.between(1, 200_000)) };
  let text = JSON.stringify(fields);
  if (deepEvent !== undefined) {
    const key = random.chance(0.5) ? 'event' : 'data';
    text = `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"${key}":${deepEvent}}`;
  }
  return { kind: `typed ${String(fields.type)}`, data: text, binary: random.chance(0.1) };
}

/** One random frame for a socket whose valid frames have `types`. */
function randomFrame(random: Random, types: readonly string[], connectionIds: readonly unknown[]): Frame {
  switch (random.int(12)) {
    case 0:
      return { kind: 'random bytes (binary)', data: random.bytes(random.between(0, 512)), binary: true };
    case 1:
      return { kind: 'random bytes (text frame)', data: random.bytes(random.between(1, 512)), binary: false };
    case 2:
      return { kind: 'random JSON value', data: JSON.stringify(random.json()), binary: random.chance(0.2) };
    case 3: {
      const whole = typedFrame(random, types, connectionIds).data.toString();
      return {
        kind: 'truncated JSON',
        data: whole.slice(0, random.between(1, Math.max(1, whole.length - 1))),
        binary: false,
      };
    }
    case 4:
      return { kind: 'deeply nested JSON', data: deepJson(random, random.pick([500, 10_000, 100_000])), binary: false };
    case 5:
      return {
        kind: 'huge string',
        data: JSON.stringify('x'.repeat(random.between(100_000, 2 * maxPayloadBytes))),
        binary: false,
      };
    case 6:
      return { kind: 'random text', data: random.text(256), binary: false };
    default:
      return typedFrame(random, types, connectionIds);
  }
}

/** Levels of arrays and objects in `value`, counted without recursion. */
function nestingDepth(value: unknown): number {
  let depth = 0;
  let level: unknown[] = [value];
  for (;;) {
    const containers = level.filter((item): item is object => typeof item === 'object' && item !== null);
    if (containers.length === 0) return depth;
    depth += 1;
    level = containers.flatMap((container) => Object.values(container));
  }
}

function describeFrame(frame: Frame): string {
  const preview = typeof frame.data === 'string' ? frame.data.slice(0, 80) : frame.data.subarray(0, 40).toString('hex');
  return `${frame.kind} (${frame.binary ? 'binary' : 'text'}, ${frame.data.length} units): ${preview}`;
}

/**
 * Sends `frame` and waits until the relay has handled it: a WebSocket ping sent after the
 * frame is answered only once the frame was processed, and not at all if it closed the
 * socket. Resolves true when the socket is still open.
 */
async function sendAndSettle(socket: WebSocket, frame: Frame): Promise<boolean> {
  if (socket.readyState === WebSocket.OPEN) socket.send(frame.data, { binary: frame.binary });
  return settle(socket);
}

function settle(socket: WebSocket, timeoutMs = 10_000): Promise<boolean> {
  if (socket.readyState === WebSocket.CLOSED) return Promise.resolve(false);
  return new Promise((resolve, reject) => {
    const finish = (open: boolean) => {
      clearTimeout(timer);
      socket.off('pong', onPong);
      socket.off('close', onClose);
      resolve(open);
    };
    const onPong = () => finish(true);
    const onClose = () => finish(false);
    const timer = setTimeout(() => {
      socket.off('pong', onPong);
      socket.off('close', onClose);
      reject(new Error('the relay neither answered a ping nor closed the socket'));
    }, timeoutMs);
    socket.on('pong', onPong);
    socket.on('close', onClose);
    if (socket.readyState === WebSocket.OPEN) socket.ping();
  });
}

/**
 * An upgrade request on a raw TCP socket. `reset` answers the reply with a TCP reset;
 * `halfOpen` keeps the peer's side open after the relay's reply and reports whether the
 * relay then closed the connection (a write to it fails) rather than leaving it half-open.
 */
async function rawUpgrade(
  harness: RelayHarness,
  target: string,
  options: { reset?: boolean; halfOpen?: boolean } = {},
): Promise<{ text: string; closedByRelay: boolean }> {
  const socket = netConnect({
    port: Number(new URL(harness.url).port),
    host: '127.0.0.1',
    allowHalfOpen: options.halfOpen === true,
  });
  socket.on('error', () => undefined);
  let text = '';
  const replied = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer to an upgrade to ${target}`)), 5000);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (text.includes('\r\n\r\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const ended = new Promise<void>((resolve) => socket.once('end', resolve));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  await replied;
  if (options.reset) {
    socket.resetAndDestroy();
    await closed;
    return { text, closedByRelay: false };
  }
  if (options.halfOpen) {
    await ended;
    // Our side is still open. If the relay has let go of the connection, these writes are
    // refused (a reset, then EPIPE) and the socket closes; if it holds it half-open, they
    // are taken in silently.
    const writer = setInterval(() => socket.write('still here'), 20);
    const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 3000).unref());
    const closedByRelay = await Promise.race([closed.then(() => true), timeout]);
    clearInterval(writer);
    socket.destroy();
    return { text, closedByRelay };
  }
  await closed;
  return { text, closedByRelay: true };
}

const channels = {
  backendFuzz: { channelId: 'fuzz-backend', secret: 'fuzz-backend-secret-0001', label: 'Backend fuzz' },
  clientFuzz: { channelId: 'fuzz-client', secret: 'fuzz-client-secret-0002', label: 'Client fuzz' },
  bystander: { channelId: 'bystander', secret: 'bystander-secret-0003', label: 'Never touched' },
};
const clientUser = { senderId: 'alice', token: 'alice-token-0123456789abcdef0123', chatId: 'room-1' };
const bystanderUsers = [
  { senderId: 'bob', token: 'bob-token-0123456789abcdef012345', allowAgents: ['main'] },
  { senderId: 'carol', token: 'carol-token-0123456789abcdef0123', enabled: false },
];

const backendTypes = [
  'relay.server.event',
  'relay.server.reject',
  'relay.server.close',
  'relay.backend.hello',
  'relay.client.open',
  'relay.backend.ack',
  'unknown.type',
] as const;
const clientTypes = ['message.receive', 'ping', 'agent.list.get', 'history.get', 'relay.server.event', 'pong'] as const;
const closeCodesForBadFrames = [1003, 1007, 1008, 1009];

describe('hostile input: the relay keeps serving and loses nothing stored', { timeout: 120_000 }, () => {
  let harness: RelayHarness;
  let before_: StoredChannelJson[];
  const random = new Random(seed);

  before(async () => {
    harness = await startRelay({
      env: {
        ...limitsOff,
        RELAY_MAX_PAYLOAD_BYTES: String(maxPayloadBytes),
        RELAY_ADMIN_BODY_LIMIT_BYTES: String(adminBodyLimitBytes),
      },
    });
    for (const channel of Object.values(channels)) {
      assert.equal((await harness.request('/api/channels', { json: channel })).status, 200);
    }
    const created = await harness.request(`/api/channels/${channels.clientFuzz.channelId}/users`, { json: clientUser });
    assert.equal(created.status, 200);
    for (const user of bystanderUsers) {
      const response = await harness.request(`/api/channels/${channels.bystander.channelId}/users`, { json: user });
      assert.equal(response.status, 200);
    }
    before_ = await storedChannels(harness);
    assert.equal(before_.length, 3);
  });

  after(async () => {
    await harness?.cleanup();
  });

  test('random frames to /backend before the hello are refused with a close, never acknowledged', async () => {
    const codes = new Set<number>();
    for (let i = 0; i < 250; i += 1) {
      const frame = randomFrame(random, backendTypes, [channels.backendFuzz.channelId]);
      const fresh = new WebSocket(`${harness.wsUrl}/backend`);
      const received: unknown[] = [];
      fresh.on('message', (data) => received.push(data.toString()));
      const closed = new Promise<number>((resolve) => fresh.once('close', (code) => resolve(code)));
      await new Promise<void>((resolve, reject) => {
        fresh.once('open', () => resolve());
        fresh.once('error', reject);
      });
      const stillOpen = await sendAndSettle(fresh, frame);
      assert.equal(stillOpen, false, `frame ${i} left a hello-less backend open: ${describeFrame(frame)}`);
      const code = await closed;
      assert.ok(closeCodesForBadFrames.includes(code), `frame ${i} closed with ${code}: ${describeFrame(frame)}`);
      codes.add(code);
      assert.ok(
        received.every((text) => typeof text === 'string' && !text.includes('relay.backend.ack')),
        `frame ${i} was acknowledged: ${describeFrame(frame)}`,
      );
    }
    // The fuzzer reached the invalid-json, wrong-hello and oversized paths at least.
    assert.ok(codes.has(1003) && codes.has(1008) && codes.has(1009), `close codes seen: ${[...codes].join(', ')}`);
  });

  test('random frames to /backend after a valid hello are survived; the clients are closed only as the frames ask', async () => {
    const { channelId, secret } = channels.backendFuzz;
    let backend = await connectBackend(harness.wsUrl, channelId, secret);

    /** A client of the fuzzed channel, with the connectionId its backend was told. */
    const openClient = (current: TestSocket) =>
      openTaggedClient(harness, current, { channelId, chatId: 'shared-chat' });
    let victim = await openClient(backend);
    let sibling = await openClient(backend);
    let backendCloses = 0;

    for (let i = 0; i < 375; i += 1) {
      const ids = [
        victim.connectionId,
        victim.connectionId,
        sibling.connectionId,
        crypto.randomUUID(),
        '',
        'not-a-uuid',
      ];
      const frame = randomFrame(random, backendTypes, ids);
      if (!(await sendAndSettle(backend.socket, frame))) {
        backendCloses += 1;
        const { code } = await backend.closed;
        assert.ok(
          closeCodesForBadFrames.includes(code),
          `frame ${i} closed the backend with ${code}: ${describeFrame(frame)}`,
        );
        // A backend that is gone takes its clients with it.
        const gone = { code: 1012, reason: 'backend disconnected' };
        assert.deepEqual(await victim.client.closed, gone, `frame ${i}: the victim outlived its backend`);
        assert.deepEqual(await sibling.client.closed, gone, `frame ${i}: the sibling outlived its backend`);
        backend = await connectBackend(harness.wsUrl, channelId, secret);
        victim = await openClient(backend);
        sibling = await openClient(backend);
        continue;
      }
      // A frame that closed a client (relay.server.close / reject) has queued the close
      // frame before the backend's pong, so these pings see it.
      const victimOpen = await settle(victim.client.socket);
      const siblingOpen = await settle(sibling.client.socket);
      if (!victimOpen) victim = await openClient(backend);
      if (!siblingOpen) sibling = await openClient(backend);
    }
    assert.ok(backendCloses > 0, 'some frames were bad enough to close the backend');

    // The channel still works: a plain event reaches the victim and its sibling.
    backend.send({ type: 'relay.server.event', connectionId: victim.connectionId, event: { type: 'after-fuzz' } });
    assert.deepEqual(await victim.client.next('after-fuzz'), { type: 'after-fuzz' });
    assert.deepEqual(await sibling.client.next('after-fuzz'), { type: 'after-fuzz' });
    await closeSockets([victim.client, sibling.client, backend]);
  });

  test('random frames to /client are survived; valid JSON reaches the backend, anything else is answered INVALID_PAYLOAD', async () => {
    const { channelId, secret } = channels.clientFuzz;
    const backend = await connectBackend(harness.wsUrl, channelId, secret);
    let clientEvents = 0;
    let backendGotNonJson = false;
    backend.socket.on('message', (data) => {
      try {
        const frame = JSON.parse(data.toString()) as { type?: unknown };
        if (frame.type === 'relay.client.event') clientEvents += 1;
      } catch {
        backendGotNonJson = true;
      }
    });
    const query = { channelId, token: clientUser.token, chatId: clientUser.chatId };
    const sibling = connectClient(harness.wsUrl, query);
    await sibling.opened;
    let echoes = 0;
    sibling.socket.on('message', (data) => {
      if (data.toString().includes('"echo":true')) echoes += 1;
    });

    let expectedEvents = 0;
    let expectedInvalid = 0;
    let expectedPongs = 0;
    let expectedEchoes = 0;
    let invalid = 0;
    let pongs = 0;
    let fuzzed: TestSocket | undefined;
    const open = async () => {
      const client = connectClient(harness.wsUrl, query);
      client.socket.on('message', (data) => {
        const text = data.toString();
        if (text.includes('"INVALID_PAYLOAD"')) invalid += 1;
        else if (text.startsWith('{"type":"pong"')) pongs += 1;
      });
      await client.opened;
      return client;
    };
    let reopened = 0;
    for (let i = 0; i < 375; i += 1) {
      fuzzed ??= await open();
      const frame = randomFrame(random, clientTypes, ['x', 1]);
      if (await sendAndSettle(fuzzed.socket, frame)) {
        // Mirror what the relay promises for a frame it accepted.
        const text = Buffer.from(frame.data).toString();
        let parsed: { value: unknown } | undefined;
        try {
          parsed = { value: JSON.parse(text) };
        } catch {
          parsed = undefined;
        }
        const value = parsed?.value;
        const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
        const type = isObject ? (value as { type?: unknown }).type : undefined;
        if (!parsed) expectedInvalid += 1;
        else if (type === 'ping') expectedPongs += 1;
        else {
          expectedEvents += 1;
          // The echo copies the fields of an object `data`. One nested too deeply to
          // serialize is forwarded but not echoed (the fuzzer nests either 1,000 levels,
          // which serialize, or 20,000 and more, which cannot).
          const data = isObject ? (value as { data?: unknown }).data : undefined;
          const dataIsObject = typeof data === 'object' && data !== null && !Array.isArray(data);
          if (type === 'message.receive' && (!dataIsObject || nestingDepth(data) <= 1000)) expectedEchoes += 1;
        }
      } else {
        const { code } = await fuzzed.closed;
        assert.ok([1007, 1009].includes(code), `frame ${i} closed the client with ${code}: ${describeFrame(frame)}`);
        fuzzed = undefined;
        reopened += 1;
      }
    }
    assert.ok(reopened > 0, 'some frames were bad enough to close the client');
    assert.ok(expectedEvents > 0 && expectedInvalid > 0, 'the fuzzer produced both valid and invalid JSON');
    // Everything the relay forwarded is written before it answers these pings.
    assert.equal(await settle(backend.socket), true);
    assert.equal(await settle(sibling.socket), true);
    assert.equal(backendGotNonJson, false, 'the backend received a frame that is not JSON');
    assert.equal(clientEvents, expectedEvents, 'every valid client message, and nothing else, reached the backend');
    assert.equal(invalid, expectedInvalid, 'every non-JSON message was answered INVALID_PAYLOAD');
    assert.equal(pongs, expectedPongs, 'every ping was answered');
    assert.equal(echoes, expectedEchoes, 'every message.receive was echoed to the sibling');
    await closeSockets([fuzzed, sibling, backend]);
  });

  test('a relay.server.event nested 100,000 levels deep is dropped; the backend stays and the next event arrives', async () => {
    const { channelId, secret } = channels.backendFuzz;
    const backend = await connectBackend(harness.wsUrl, channelId, secret);
    const client = connectClient(harness.wsUrl, { channelId, chatId: 'deep' });
    const open = await backend.next<{ connectionId: string }>('relay.client.open');
    const depth = 100_000;
    backend.send(
      `{"type":"relay.server.event","connectionId":"${open.connectionId}","event":${'['.repeat(depth)}${']'.repeat(depth)}}`,
    );
    assert.equal(await settle(backend.socket), true, 'the backend is still connected');
    backend.send({ type: 'relay.server.event', connectionId: open.connectionId, event: { type: 'after-deep' } });
    assert.deepEqual(await client.next(), { type: 'after-deep' }, 'the deep event was not delivered, the next one was');
    await closeSockets([client, backend]);
  });

  test('a client message.receive whose data is nested 30,000 levels deep reaches the backend; its siblings get no echo and the relay keeps serving', async () => {
    const { channelId, secret } = channels.clientFuzz;
    const backend = await connectBackend(harness.wsUrl, channelId, secret);
    const query = { channelId, token: clientUser.token, chatId: clientUser.chatId };
    const sender = connectClient(harness.wsUrl, query);
    const sibling = connectClient(harness.wsUrl, query);
    await Promise.all([sender.opened, sibling.opened]);
    const depth = 30_000;
    sender.send(`{"type":"message.receive","data":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`);
    const deep = await backend.next<{ event: { type: string; data: unknown } }>('relay.client.event');
    assert.equal(deep.event.type, 'message.receive');
    assert.equal(nestingDepth(deep.event.data), depth);
    sender.send({ type: 'message.receive', data: { content: 'shallow' } });
    assert.deepEqual(await sibling.next('message.send'), {
      type: 'message.send',
      data: { content: 'shallow', echo: true },
    });
    await closeSockets([sender, sibling, backend]);
  });

  test('random HTTP requests to the admin endpoints never answer 5xx and always answer the JSON envelope', async () => {
    const port = new URL(harness.url).port;
    const existing = new Set(Object.values(channels).map((channel) => channel.channelId));
    const segment = (): string => {
      const value = random.pick([
        '%00',
        '..',
        '%2e%2e',
        '.',
        '%2F',
        'a%00b',
        '%',
        '%zz',
        '%C0%AF',
        '~',
        '%F0%9F%98%80',
        '..%2F..%2Fetc%2Fpasswd',
        'x'.repeat(random.between(1000, 8000)),
        random.alnum(1, 12),
        random.alnum(1, 12),
        `${crypto.randomUUID()}.png`,
      ]);
      // Never name a real channel: a DELETE of one with the admin token would be a valid request.
      return existing.has(value) ? `x${value}` : value;
    };
    const paths: Array<() => string> = [
      () => '/api/state',
      () => '/api/channels',
      () => `/api/channels/${segment()}`,
      () => `/api/channels/${segment()}/users`,
      () => `/api/channels/${segment()}/users/${segment()}`,
      () => '/api/relay-nodes',
      () => `/api/relay-nodes/${segment()}`,
      () => '/api/media/upload',
      () => `/api/media/${segment()}`,
      () => '/healthz',
      () => '/api/meta',
      () => `/${segment()}`,
      () => `/api/${segment()}/${segment()}`,
    ];
    const queries = [
      '',
      '',
      '?adminToken=wrong',
      `?adminToken=${adminToken}`,
      '?token=x',
      '?filename=../../etc/passwd',
      '?a=%00&b=%zz',
      '?channelId[]=1&channelId[x]=2',
    ];
    const contentTypes = [
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'multipart/form-data',
      'multipart/form-data; boundary=fuzz',
      'application/x-www-form-urlencoded',
      'image/png',
      'garbage/;;;',
      '',
    ];
    const bodies: Array<() => Buffer | string | undefined> = [
      () => undefined,
      () => random.bytes(random.between(0, 4096)),
      () => JSON.stringify(random.json()),
      () => JSON.stringify(random.json()).slice(0, -1),
      () =>
        JSON.stringify(
          random.pick<unknown>([
            { channelId: 5 },
            { channelId: '' },
            { channelId: null },
            { channelId: {} },
            { id: [] },
            { channelId: '', users: 'alice' },
            { senderId: 7 },
            { senderId: '' },
            { senderId: ['a'], enabled: 'yes' },
            { data: 5 },
            { data: '!!!not base64!!!' },
            { id: 1, name: {}, url: [] },
          ]),
        ),
      () => `--fuzz\r\nContent-Disposition: form-data; name="file"\r\n\r\n${random.text(64, false)}`,
      () => 'x'.repeat(adminBodyLimitBytes + random.between(1, 4096)),
      () => deepJson(random, 5000),
    ];
    const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'MKCOL'];

    for (let i = 0; i < 200; i += 1) {
      const method = random.pick(methods);
      const path = `${random.pick(paths)()}${random.pick(queries)}`;
      const headers: Record<string, string> = {};
      if (random.chance(0.5)) headers['x-relay-admin-token'] = adminToken;
      else if (random.chance(0.3)) headers['x-relay-admin-token'] = random.text(40, false);
      if (random.chance(0.3))
        headers.authorization =
          random.pick(['Bearer ', 'Bearer a.b.c', 'Basic Zm9vOmJhcg==', 'Bearer ']) + random.alnum(0, 40);
      if (random.chance(0.2)) headers['x-channel-secret'] = random.text(32, false);
      if (random.chance(0.2)) headers['x-api-key'] = random.text(32, false);
      for (let h = random.int(4); h > 0; h -= 1) headers[`x-fuzz-${random.alnum(1, 10)}`] = random.text(200, false);
      const body = random.pick(bodies)();
      const contentType = random.pick(contentTypes);
      if (body !== undefined && contentType) headers['content-type'] = contentType;
      const sendsBody = body !== undefined && method !== 'GET' && method !== 'HEAD';
      if (sendsBody) headers['content-length'] = String(Buffer.byteLength(body));
      const label = `request ${i}: ${method} ${path.slice(0, 120)} ${JSON.stringify(headers).slice(0, 200)}`;

      const response = await new Promise<{ status: number; contentType: string; text: string }>((resolve, reject) => {
        const outgoing = httpRequest(
          { host: '127.0.0.1', port, method, path, headers, agent: false, timeout: 10_000 },
          (incoming) => {
            const chunks: Buffer[] = [];
            incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
            incoming.on('end', () =>
              resolve({
                status: incoming.statusCode ?? 0,
                contentType: String(incoming.headers['content-type'] ?? ''),
                text: Buffer.concat(chunks).toString(),
              }),
            );
            incoming.on('error', reject);
          },
        );
        outgoing.on('timeout', () => outgoing.destroy(new Error(`${label} timed out`)));
        outgoing.on('error', reject);
        outgoing.end(sendsBody ? body : undefined);
      });

      assert.ok(response.status < 500, `${label} answered ${response.status}: ${response.text.slice(0, 200)}`);
      if (method === 'HEAD' || response.status === 204) continue;
      assert.match(response.contentType, /^application\/json/, `${label} answered ${response.contentType}`);
      const parsed = JSON.parse(response.text) as { ok?: unknown; error?: unknown };
      if (response.status >= 400) {
        assert.equal(parsed.ok, false, `${label}: ${response.text.slice(0, 200)}`);
        assert.equal(typeof parsed.error, 'string', `${label}: ${response.text.slice(0, 200)}`);
      } else {
        assert.equal(response.status, 200, label);
        assert.equal(parsed.ok, true, `${label}: ${response.text.slice(0, 200)}`);
      }
    }
  });

  test('a WebSocket upgrade to an unknown path answers HTTP 404 and a malformed upgrade HTTP 400', async () => {
    for (const path of ['/nope', '/backend/extra', '/clients', '/api/state', '/%00']) {
      const socket = new WebSocket(`${harness.wsUrl}${path}`);
      const status = await new Promise<number>((resolve, reject) => {
        socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.once('open', () => reject(new Error(`upgrade to ${path} was accepted`)));
        socket.once('error', reject);
      });
      socket.terminate();
      assert.equal(status, 404, path);
    }
    // An upgrade to a real endpoint without a Sec-WebSocket-Key.
    const reply = await new Promise<string>((resolve, reject) => {
      const raw = netConnect(Number(new URL(harness.url).port), '127.0.0.1');
      let text = '';
      raw.on('data', (chunk) => {
        text += chunk.toString();
      });
      raw.on('close', () => resolve(text));
      raw.on('error', reject);
      raw.write(
        'GET /client?channelId=bystander HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
      );
    });
    assert.match(reply, /^HTTP\/1\.1 400 /);
  });

  test('an upgrade whose request target is no URL ("//", "//[") answers HTTP 400 and the relay keeps serving', async () => {
    for (const target of ['//', '//[', '//a:b@', '//:99999/']) {
      const reply = await rawUpgrade(harness, target);
      assert.match(reply.text, /^HTTP\/1\.1 400 /, `upgrade to ${target}`);
    }
    assert.equal((await harness.request('/healthz', { admin: false })).status, 200);
  });

  test('a peer that resets its connection after a refused upgrade does not stop the relay', async () => {
    // The relay runs in this process, where the test runner catches what would otherwise
    // end it; an uncaught ECONNRESET from the refused socket is watched for here.
    const uncaught: unknown[] = [];
    const watch = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', watch);
    try {
      for (let i = 0; i < 5; i += 1) {
        const reply = await rawUpgrade(harness, '/not-a-socket', { reset: true });
        assert.match(reply.text, /^HTTP\/1\.1 404 /);
      }
      assert.equal((await harness.request('/healthz', { admin: false })).status, 200);
    } finally {
      process.off('uncaughtException', watch);
    }
    assert.deepEqual(uncaught, []);
  });

  test('the relay closes a refused upgrade connection even when the peer keeps its side open', async () => {
    const reply = await rawUpgrade(harness, '/not-a-socket', { halfOpen: true });
    assert.match(reply.text, /^HTTP\/1\.1 404 /);
    assert.equal(reply.closedByRelay, true);
  });

  test('after all of it /healthz is ok, the stored channels and users are unchanged, and a fresh pair relays both ways', async () => {
    const health = await harness.request('/healthz', { admin: false });
    assert.equal(health.status, 200);
    assert.equal(((await health.json()) as { ok: unknown }).ok, true);
    assert.deepEqual(await storedChannels(harness), before_);

    const { channelId, secret } = channels.bystander;
    const backend = await connectBackend(harness.wsUrl, channelId, secret);
    const client = connectClient(harness.wsUrl, { channelId, token: bystanderUsers[0]?.token ?? '', agentId: 'main' });
    const open = await backend.next<{ connectionId: string; authUser: { senderId: string } }>('relay.client.open');
    assert.equal(open.authUser.senderId, 'bob');
    client.send({ type: 'message.receive', data: { content: 'still here?' } });
    const event = await backend.next('relay.client.event');
    assert.deepEqual(event.event, { type: 'message.receive', data: { content: 'still here?' } });
    backend.send({
      type: 'relay.server.event',
      connectionId: open.connectionId,
      event: { type: 'message.send', data: 'yes' },
    });
    assert.deepEqual(await client.next('message.send'), { type: 'message.send', data: 'yes' });
    await closeSockets([client, backend]);
  });
});
