import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startRelay } from './support/relay-harness.js';
import { connectBackend, connectClient } from './support/ws-client.js';

test('a client message reaches the backend and the reply comes back', async () => {
  const harness = await startRelay();
  try {
    const created = await harness.request('/api/channels', { json: { channelId: 'home', secret: 's3cret-home' } });
    assert.equal(created.status, 200);
    const backend = await connectBackend(harness.wsUrl, 'home', 's3cret-home');
    const client = connectClient(harness.wsUrl, { channelId: 'home', chatId: 'c1' });
    const open = await backend.next('relay.client.open');
    client.send({ type: 'message.receive', data: { content: 'hi' } });
    const event = await backend.next('relay.client.event');
    assert.deepEqual(event.event, { type: 'message.receive', data: { content: 'hi' } });
    backend.send({
      type: 'relay.server.event',
      connectionId: open.connectionId,
      event: { type: 'message.send', data: 'yo' },
    });
    assert.deepEqual(await client.next(), { type: 'message.send', data: 'yo' });
    client.close();
    backend.close();
  } finally {
    await harness.cleanup();
  }
});
