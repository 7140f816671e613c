import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { importLegacyConfig } from '../src/legacy/legacy-import.js';
import { hex32, stateChannel, storedChannels } from './support/http-api.js';
import { type RelayHarness, startRelay } from './support/relay-harness.js';
import { connectBackend, connectClient } from './support/ws-client.js';

/**
 * importLegacyConfig: the old relay's config file (`{"version":1,"channels":{…}}`) imported
 * into a running relay's channel directory, visible over REST and kept across a restart.
 */

describe('importLegacyConfig', () => {
  let harness: RelayHarness;
  before(async () => {
    harness = await startRelay();
  });
  after(async () => {
    await harness?.cleanup();
  });

  test('imports a channel whose users are an array: label, secret, tokenParam and every user field', async () => {
    const summary = await importLegacyConfig(
      {
        version: 1,
        channels: {
          home: {
            label: 'Home',
            secret: 'home-legacy-secret',
            tokenParam: 'key',
            users: [
              {
                senderId: 'alice',
                token: 'alice-legacy',
                chatId: 'chat-a',
                allowAgents: ['Main', 'Coder'],
                enabled: false,
              },
              { id: 'bob', token: 'bob-legacy', allowAgents: ['*'] },
            ],
          },
        },
      },
      harness.relay.context.directory,
    );
    assert.deepEqual(summary, { channels: 1, users: 2 });
    const home = await stateChannel(harness, 'home');
    assert.equal(home?.label, 'Home');
    assert.equal(home?.secret, 'home-legacy-secret');
    assert.equal(home?.secretMasked, 'home***cret');
    assert.equal(home?.tokenParam, 'key');
    assert.equal(home?.userCount, 2);
    assert.deepEqual(home?.users, [
      {
        id: 'alice',
        senderId: 'alice',
        chatId: 'chat-a',
        token: 'alice-legacy',
        allowAgents: ['main', 'coder'],
        enabled: false,
      },
      { id: 'bob', senderId: 'bob', chatId: null, token: 'bob-legacy', allowAgents: null, enabled: true },
    ]);
  });

  test('imports a channel whose users are an object keyed by senderId; `name` is the label', async () => {
    const summary = await importLegacyConfig(
      {
        version: 1,
        channels: {
          office: {
            name: 'Office',
            secret: 'office-legacy-secret',
            users: {
              carol: { token: 'carol-legacy', allowAgents: 'Writer, CODER' },
              dave: { token: 'dave-legacy', chatId: 'chat-d', enabled: true },
            },
          },
        },
      },
      harness.relay.context.directory,
    );
    assert.deepEqual(summary, { channels: 1, users: 2 });
    const office = await stateChannel(harness, 'office');
    assert.equal(office?.label, 'Office');
    assert.equal(office?.secret, 'office-legacy-secret');
    assert.equal(office?.tokenParam, 'token');
    assert.deepEqual(office?.users, [
      {
        id: 'carol',
        senderId: 'carol',
        chatId: null,
        token: 'carol-legacy',
        allowAgents: ['writer', 'coder'],
        enabled: true,
      },
      { id: 'dave', senderId: 'dave', chatId: 'chat-d', token: 'dave-legacy', allowAgents: null, enabled: true },
    ]);
  });

  test('imports several channels at once; a missing secret or user token is generated as 32 hex', async () => {
    const summary = await importLegacyConfig(
      {
        version: 1,
        channels: {
          'multi-a': { users: [{ senderId: 'erin' }] },
          'multi-b': { label: 'B', secret: 'multi-b-secret', users: {} },
          'multi-c': {},
        },
      },
      harness.relay.context.directory,
    );
    assert.deepEqual(summary, { channels: 3, users: 1 });
    const a = await stateChannel(harness, 'multi-a');
    assert.match(a?.secret ?? '', hex32);
    assert.match(a?.users[0]?.token ?? '', hex32);
    assert.equal(a?.label, null);
    assert.equal((await stateChannel(harness, 'multi-b'))?.secret, 'multi-b-secret');
    assert.deepEqual((await stateChannel(harness, 'multi-b'))?.users, []);
    assert.equal((await stateChannel(harness, 'multi-c'))?.tokenParam, 'token');
  });

  test('an imported channel replaces a stored channel of the same id, users included', async () => {
    const created = await harness.request('/api/channels', {
      json: { channelId: 'replaced', label: 'Old', secret: 'old-secret', users: [{ senderId: 'old-user' }] },
    });
    assert.equal(created.status, 200);
    await importLegacyConfig(
      {
        version: 1,
        channels: { replaced: { label: 'New', secret: 'new-secret', users: [{ senderId: 'new-user', token: 'nt' }] } },
      },
      harness.relay.context.directory,
    );
    const replaced = await stateChannel(harness, 'replaced');
    assert.equal(replaced?.label, 'New');
    assert.equal(replaced?.secret, 'new-secret');
    assert.deepEqual(
      replaced?.users.map((user) => [user.senderId, user.token]),
      [['new-user', 'nt']],
    );
  });

  test('an imported channel accepts its backend and checks its users’ tokens', async () => {
    await importLegacyConfig(
      {
        version: 1,
        channels: { wired: { secret: 'wired-secret', tokenParam: 'key', users: { frank: { token: 'frank-token' } } } },
      },
      harness.relay.context.directory,
    );
    const backend = await connectBackend(harness.wsUrl, 'wired', 'wired-secret');
    try {
      const client = connectClient(harness.wsUrl, { channelId: 'wired', key: 'frank-token' });
      const open = await backend.next('relay.client.open');
      assert.equal((open.authUser as { senderId?: unknown }).senderId, 'frank');
      client.close();
      const refused = connectClient(harness.wsUrl, { channelId: 'wired', key: 'not-frank' });
      assert.equal((await refused.closed).code, 1008);
    } finally {
      backend.close();
      await backend.closed;
    }
  });

  test('a version other than 1 → error, nothing imported', async () => {
    for (const version of [2, 0, '1', null, undefined]) {
      await assert.rejects(
        importLegacyConfig(
          { version, channels: { 'bad-version': { secret: 'bad-version-secret' } } },
          harness.relay.context.directory,
        ),
        /version/,
        `version ${String(version)}`,
      );
    }
    assert.equal(await stateChannel(harness, 'bad-version'), undefined);
  });

  test('a document that is not an object, or has no channels object → error', async () => {
    for (const document of [null, 'text', 42, [], { version: 1 }, { version: 1, channels: null }]) {
      await assert.rejects(
        importLegacyConfig(document, harness.relay.context.directory),
        Error,
        JSON.stringify(document),
      );
    }
  });

  test('an invalid channelId → error, that channel not imported', async () => {
    for (const [key, body] of [
      ['a/b', {}],
      ['../x', {}],
      ['has space', {}],
      ['fine-key', { channelId: '../escape' }],
    ] as const) {
      const before = await storedChannels(harness);
      await assert.rejects(
        importLegacyConfig(
          { version: 1, channels: { [key]: { secret: 'whatever-secret', ...body } } },
          harness.relay.context.directory,
        ),
        /channelId/,
        key,
      );
      assert.deepEqual(await storedChannels(harness), before, key);
    }
  });

  test('an invalid senderId → error, that channel not imported', async () => {
    await assert.rejects(
      importLegacyConfig(
        { version: 1, channels: { 'bad-user': { users: [{ senderId: '../root', token: 't' }] } } },
        harness.relay.context.directory,
      ),
      /senderId/,
    );
    assert.equal(await stateChannel(harness, 'bad-user'), undefined);
  });

  test('imported channels are persisted across a restart', async () => {
    const before = await storedChannels(harness);
    assert.ok(before.some((candidate) => candidate.channelId === 'home'));
    assert.ok(before.some((candidate) => candidate.channelId === 'office'));
    await harness.stop();
    harness = await startRelay({ reuse: { dataDir: harness.dataDir, env: harness.env } });
    const afterRestart = await storedChannels(harness);
    assert.deepEqual(afterRestart, before);
  });
});
