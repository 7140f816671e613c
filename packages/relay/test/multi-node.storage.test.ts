import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type RelayHarness, startRelay } from './support/relay-harness.js';
import { connectBackend, connectClient } from './support/ws-client.js';

/**
 * Two relay nodes on one store and one Redis bus: an admin change made on one node reaches
 * the sockets of the other, and a backend that connects to one node takes its channel over
 * from the other. Without Redis each node has its own in-process bus, so this needs REDIS_URL.
 */
const skip = process.env.REDIS_URL ? false : 'REDIS_URL not set: two relay nodes need the Redis bus to hear each other';

/** Polls `check` until it holds; the bus delivers asynchronously. A guard, not a timing assertion. */
async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 150; attempt += 1) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`${what} did not happen within 3 s`);
}

async function channelIds(node: RelayHarness): Promise<string[]> {
  const state = (await (await node.request('/api/state')).json()) as { channels: Array<{ channelId: string }> };
  return state.channels.map((channel) => channel.channelId);
}

describe('two relay nodes sharing storage and the Redis bus', { skip }, () => {
  let first: RelayHarness;
  let second: RelayHarness;

  before(async () => {
    first = await startRelay();
    second = await startRelay({ reuse: { dataDir: first.dataDir, env: first.env } });
  });

  after(async () => {
    await second.stop();
    await first.cleanup();
  });

  test('a channel created on one node is known to the other', async () => {
    const created = await first.request('/api/channels', { json: { channelId: 'shared', secret: 'shared-secret-1' } });
    assert.equal(created.status, 200);
    await eventually('the second node learning of the channel', async () =>
      (await channelIds(second)).includes('shared'),
    );
    const backend = await connectBackend(second.wsUrl, 'shared', 'shared-secret-1');
    backend.close();
  });

  test('deleting a channel on one node closes its sockets on the other (1012 "channel removed")', async () => {
    await first.request('/api/channels', { json: { channelId: 'doomed', secret: 'doomed-secret-1' } });
    await eventually('the second node learning of the channel', async () =>
      (await channelIds(second)).includes('doomed'),
    );
    const backend = await connectBackend(second.wsUrl, 'doomed', 'doomed-secret-1');
    const client = connectClient(second.wsUrl, { channelId: 'doomed' });
    await backend.next('relay.client.open');
    const deleted = await first.request('/api/channels/doomed', { method: 'DELETE' });
    assert.equal(deleted.status, 200);
    assert.deepEqual(await client.closed, { code: 1012, reason: 'channel removed' });
    assert.deepEqual(await backend.closed, { code: 1012, reason: 'channel removed' });
  });

  test('disabling a user on one node drops that user’s client on the other', async () => {
    await first.request('/api/channels', {
      json: { channelId: 'family', secret: 'family-secret-1', users: [{ senderId: 'kid', token: 'kid-token-1' }] },
    });
    await eventually('the second node learning of the channel', async () =>
      (await channelIds(second)).includes('family'),
    );
    const backend = await connectBackend(second.wsUrl, 'family', 'family-secret-1');
    const client = connectClient(second.wsUrl, { channelId: 'family', token: 'kid-token-1' });
    await backend.next('relay.client.open');
    const disabled = await first.request('/api/channels/family/users', { json: { senderId: 'kid', enabled: false } });
    assert.equal(disabled.status, 200);
    assert.deepEqual(await client.closed, { code: 1008, reason: 'user disabled' });
    backend.close();
  });

  test('a backend connecting to one node replaces the channel’s backend on the other (1012 "backend replaced")', async () => {
    await first.request('/api/channels', { json: { channelId: 'moving', secret: 'moving-secret-1' } });
    await eventually('the second node learning of the channel', async () =>
      (await channelIds(second)).includes('moving'),
    );
    const old = await connectBackend(first.wsUrl, 'moving', 'moving-secret-1');
    const oldClient = connectClient(first.wsUrl, { channelId: 'moving' });
    await old.next('relay.client.open');
    const replacement = await connectBackend(second.wsUrl, 'moving', 'moving-secret-1');
    assert.deepEqual(await old.closed, { code: 1012, reason: 'backend replaced' });
    assert.equal((await oldClient.closed).code, 1012);
    const newClient = connectClient(second.wsUrl, { channelId: 'moving' });
    await replacement.next('relay.client.open');
    newClient.close();
    replacement.close();
  });
});
