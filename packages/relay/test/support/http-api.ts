import assert from 'node:assert/strict';
import type { RelayHarness } from './relay-harness.js';

/** What the relay's HTTP endpoints answer: channel and user JSON, the error envelope, /metrics. */

export interface UserJson {
  id: string;
  senderId: string;
  chatId: string | null;
  token: string;
  allowAgents: string[] | null;
  enabled: boolean;
}

/** The fields of a channel an admin sets: what is stored, and must survive restarts and bad input. */
export interface StoredChannelJson {
  channelId: string;
  label: string | null;
  secret: string;
  secretMasked: string;
  tokenParam: string;
  userCount: number;
  users: UserJson[];
}

/** A channel as /api/state lists it: the stored fields and the live connection fields. */
export interface ChannelJson extends StoredChannelJson {
  backendConnected: boolean;
  clientCount: number;
  instanceId: string | null;
  lastConnectedAt: number | null;
  lastDisconnectedAt: number | null;
}

/** A secret or user token the relay generated: 32 lowercase hexadecimal characters. */
export const hex32 = /^[0-9a-f]{32}$/;

/** The channels of GET /api/state (with the admin token), asserting it answered 200. */
export async function stateChannels(harness: RelayHarness): Promise<ChannelJson[]> {
  const response = await harness.request('/api/state');
  assert.equal(response.status, 200);
  return ((await response.json()) as { channels: ChannelJson[] }).channels;
}

/** `channelId` as GET /api/state lists it, or undefined when it lists no such channel. */
export async function stateChannel(harness: RelayHarness, channelId: string): Promise<ChannelJson | undefined> {
  return (await stateChannels(harness)).find((channel) => channel.channelId === channelId);
}

/**
 * The stored fields of every channel in /api/state, sorted by channelId: what must survive
 * restarts and bad requests. The live fields change with every socket and the order of
 * /api/state is no part of the contract, so both are left out of such comparisons.
 */
export async function storedChannels(harness: RelayHarness): Promise<StoredChannelJson[]> {
  return (await stateChannels(harness))
    .map(({ channelId, label, secret, secretMasked, tokenParam, userCount, users }) => ({
      channelId,
      label,
      secret,
      secretMasked,
      tokenParam,
      userCount,
      users,
    }))
    .sort((a, b) => a.channelId.localeCompare(b.channelId));
}

/**
 * Asserts `body` is the seed's error envelope: exactly `{ok: false, error}` with a non-empty
 * error string, equal to `message` (a string) or matching it (a RegExp) when given.
 * `context` (the raw reply, say) is shown when the shape is wrong.
 */
export function assertErrorEnvelope(body: unknown, message?: string | RegExp, context?: string): void {
  assert.equal(typeof body, 'object', context);
  assert.notEqual(body, null, context);
  const envelope = body as Record<string, unknown>;
  assert.deepEqual(Object.keys(envelope).sort(), ['error', 'ok'], context);
  assert.equal(envelope.ok, false, context);
  assert.equal(typeof envelope.error, 'string', context);
  const error = String(envelope.error);
  assert.ok(error.length > 0, context);
  if (typeof message === 'string') assert.equal(error, message);
  else if (message) assert.match(error, message);
}

/** A REST reply read in full: its status, its body parsed as JSON, and its text for messages. */
export interface RestReply {
  status: number;
  body: unknown;
  text: string;
}

/** Asserts `reply` answered `status` with the error envelope (see assertErrorEnvelope). */
export function assertErrorBody(reply: RestReply, status: number, message?: string | RegExp): void {
  assert.equal(reply.status, status, reply.text);
  assertErrorEnvelope(reply.body, message, reply.text);
}

/** One sample of the relay's /metrics (Prometheus text); 0 while the series has no sample yet. */
export async function metricSample(harness: RelayHarness, series: string): Promise<number> {
  const response = await fetch(`${harness.url}/metrics`);
  assert.equal(response.status, 200);
  const line = (await response.text()).split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
