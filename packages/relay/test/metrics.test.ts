import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metricSample } from './support/http-api.js';
import { startRelay } from './support/relay-harness.js';
import { connectBackend, connectClient } from './support/ws-client.js';

test('/metrics counts connections, frames relayed each way and closes by code', async () => {
  const harness = await startRelay();
  try {
    const created = await harness.request('/api/channels', { json: { channelId: 'home', secret: 's3cret-home' } });
    assert.equal(created.status, 200);
    const backend = await connectBackend(harness.wsUrl, 'home', 's3cret-home');
    const client = connectClient(harness.wsUrl, { channelId: 'home', chatId: 'c1' });
    const open = await backend.next('relay.client.open');
    assert.equal(await metricSample(harness, 'relay_connections{endpoint="backend"}'), 1);
    assert.equal(await metricSample(harness, 'relay_connections{endpoint="client"}'), 1);

    for (let index = 0; index < 3; index += 1) {
      client.send({ type: 'message.receive', data: { content: `hi ${index}` } });
      await backend.next('relay.client.event');
    }
    backend.send({ type: 'relay.server.event', connectionId: open.connectionId, event: { type: 'message.send' } });
    assert.deepEqual(await client.next(), { type: 'message.send' });
    assert.equal(await metricSample(harness, 'relay_frames_relayed_total{direction="to_backend"}'), 3);
    assert.equal(await metricSample(harness, 'relay_frames_relayed_total{direction="to_client"}'), 1);

    const unknown = connectClient(harness.wsUrl, { channelId: 'nowhere' });
    assert.equal((await unknown.closed).code, 1008);
    client.close(4001, 'bye');
    await backend.next('relay.client.close');
    assert.equal(await metricSample(harness, 'relay_closes_total{endpoint="client",code="1008"}'), 1);
    assert.equal(await metricSample(harness, 'relay_closes_total{endpoint="client",code="4001"}'), 1);
    assert.equal(await metricSample(harness, 'relay_connections{endpoint="client"}'), 0);
    backend.close();
  } finally {
    await harness.cleanup();
  }
});
