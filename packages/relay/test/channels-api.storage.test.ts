import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { maskSecret } from '../src/channels/channel-model.js';
import { assertErrorEnvelope, type ChannelJson, hex32, stateChannel, type UserJson } from './support/http-api.js';
import { adminToken, type RelayHarness, startRelay, usingPostgres } from './support/relay-harness.js';
import { connectBackend, connectClient } from './support/ws-client.js';

/**
 * The seed's channel and user administration rows, and the Channel and User field tables,
 * against a real relay (SQLite, or PostgreSQL + Redis in the storage pass).
 */

interface ChannelReply {
  ok: true;
  channel: ChannelJson;
}

interface UserReply {
  ok: true;
  channel: ChannelJson;
  user: UserJson;
}

interface StateReply {
  ok: boolean;
  configPath: string;
  adminAuthEnabled: boolean;
  publicBaseUrl: string | null;
  pluginBackendUrl: string | null;
  channels: ChannelJson[];
  stats: { backendCount: number; clientCount: number };
  timestamp: number;
}

interface HealthChannel {
  channelId: string;
  label: string | null;
  backendConnected: boolean;
  clientCount: number;
  instanceId: string | null;
}

interface HealthReply {
  ok: boolean;
  backendCount: number;
  clientCount: number;
  channels: HealthChannel[];
  timestamp: number;
}

interface ErrorReply {
  ok: false;
  error: string;
}

async function call<T>(
  harness: RelayHarness,
  method: string,
  path: string,
  body: unknown,
  expectedStatus: number,
): Promise<T> {
  const response = await harness.request(path, body === undefined ? { method } : { method, json: body });
  const text = await response.text();
  assert.equal(response.status, expectedStatus, `${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

function post<T>(harness: RelayHarness, path: string, body: unknown, expectedStatus = 200): Promise<T> {
  return call<T>(harness, 'POST', path, body, expectedStatus);
}

function del<T>(harness: RelayHarness, path: string, expectedStatus = 200): Promise<T> {
  return call<T>(harness, 'DELETE', path, undefined, expectedStatus);
}

async function state(harness: RelayHarness): Promise<StateReply> {
  return call<StateReply>(harness, 'GET', '/api/state', undefined, 200);
}

async function health(harness: RelayHarness): Promise<HealthReply> {
  const response = await harness.request('/healthz', { admin: false });
  assert.equal(response.status, 200);
  return (await response.json()) as HealthReply;
}

/** Polls `read` until `done` holds; the relay updates some state on socket close events. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what} did not happen; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('channels and users over REST', () => {
  let harness: RelayHarness;
  before(async () => {
    harness = await startRelay();
  });
  after(async () => {
    await harness?.cleanup();
  });

  describe('POST /api/channels (create or update)', () => {
    test('creates a channel from channelId, label and secret; tokenParam defaults to `token`', async () => {
      const reply = await post<ChannelReply>(harness, '/api/channels', {
        channelId: 'create-basic',
        label: 'Living room',
        secret: 'living-room-secret',
      });
      assert.equal(reply.ok, true);
      assert.deepEqual(reply.channel, {
        channelId: 'create-basic',
        label: 'Living room',
        secret: 'living-room-secret',
        secretMasked: 'livi***cret',
        tokenParam: 'token',
        userCount: 0,
        users: [],
        backendConnected: false,
        clientCount: 0,
        instanceId: null,
        lastConnectedAt: null,
        lastDisconnectedAt: null,
      });
      assert.deepEqual(await stateChannel(harness, 'create-basic'), reply.channel);
    });

    test('label is optional on creation', async () => {
      const reply = await post<ChannelReply>(harness, '/api/channels', { channelId: 'no-label', secret: 'abcdefghij' });
      assert.equal(reply.channel.label, null);
      assert.equal(reply.channel.tokenParam, 'token');
    });

    test('an omitted secret is generated as 32 lowercase hexadecimal characters', async () => {
      const first = await post<ChannelReply>(harness, '/api/channels', { channelId: 'generated-1' });
      const second = await post<ChannelReply>(harness, '/api/channels', { channelId: 'generated-2' });
      assert.match(first.channel.secret, hex32);
      assert.match(second.channel.secret, hex32);
      assert.notEqual(first.channel.secret, second.channel.secret);
      const secret = first.channel.secret;
      assert.equal(first.channel.secretMasked, `${secret.slice(0, 4)}***${secret.slice(-4)}`);
      assert.equal((await stateChannel(harness, 'generated-1'))?.secret, secret);
    });

    test('update: an omitted secret keeps the stored one; label, tokenParam and secret change when given', async () => {
      await post(harness, '/api/channels', { channelId: 'update-me', label: 'Before', secret: 'first-secret' });
      await post(harness, '/api/channels/update-me/users', { senderId: 'alice', token: 'alice-token' });

      const relabelled = await post<ChannelReply>(harness, '/api/channels', { channelId: 'update-me', label: 'After' });
      assert.equal(relabelled.channel.secret, 'first-secret');
      assert.equal(relabelled.channel.label, 'After');
      assert.equal(relabelled.channel.tokenParam, 'token');
      assert.deepEqual(
        relabelled.channel.users.map((user) => user.senderId),
        ['alice'],
        'a channel update without users keeps the users',
      );

      const param = await post<ChannelReply>(harness, '/api/channels', { channelId: 'update-me', tokenParam: 'key' });
      assert.equal(param.channel.tokenParam, 'key');
      assert.equal(param.channel.label, 'After', 'an omitted label keeps the stored one');
      assert.equal(param.channel.secret, 'first-secret');

      const rekeyed = await post<ChannelReply>(harness, '/api/channels', {
        channelId: 'update-me',
        secret: 'second-secret',
      });
      assert.equal(rekeyed.channel.secret, 'second-secret');
      assert.equal(rekeyed.channel.tokenParam, 'key', 'an omitted tokenParam keeps the stored one');

      const stored = await stateChannel(harness, 'update-me');
      assert.equal(stored?.secret, 'second-secret');
      assert.equal(stored?.label, 'After');
      assert.equal(stored?.tokenParam, 'key');
      assert.equal((await state(harness)).channels.filter((c) => c.channelId === 'update-me').length, 1);
    });

    test('secretMasked: "" → "", up to 8 characters → first 2 + ***, longer → first 4 + *** + last 4', async () => {
      const cases: Array<[string, string]> = [
        ['x', 'x***'],
        ['abc', 'ab***'],
        ['abcdefgh', 'ab***'],
        ['abcdefghi', 'abcd***fghi'],
        ['0123456789abcdefXYZ', '0123***fXYZ'],
      ];
      for (const [index, [secret, masked]] of cases.entries()) {
        const reply = await post<ChannelReply>(harness, '/api/channels', { channelId: `mask-${index}`, secret });
        assert.equal(reply.channel.secretMasked, masked, `secret ${secret}`);
        assert.equal((await stateChannel(harness, `mask-${index}`))?.secretMasked, masked, `state of ${secret}`);
      }
      // The REST API refuses an empty secret, so the empty case is checked on the masking rule itself.
      assert.equal(maskSecret(''), '');
    });

    test('quick-start variant: x-api-key carries the admin token; body {id, name, secret, users:[{token, senderId, name}]}', async () => {
      const response = await harness.request('/api/channels', {
        admin: false,
        headers: { 'x-api-key': adminToken },
        json: {
          id: 'quick',
          name: 'Quick start',
          secret: 'quick-secret-value',
          users: [
            { token: 'tok-alice', senderId: 'alice', name: 'Alice' },
            { token: 'tok-bob', senderId: 'bob', name: 'Bob' },
          ],
        },
      });
      assert.equal(response.status, 200);
      const reply = (await response.json()) as ChannelReply;
      assert.equal(reply.channel.channelId, 'quick');
      assert.equal(reply.channel.label, 'Quick start');
      assert.equal(reply.channel.secret, 'quick-secret-value');
      assert.equal(reply.channel.userCount, 2);
      assert.deepEqual(reply.channel.users, [
        { id: 'alice', senderId: 'alice', chatId: null, token: 'tok-alice', allowAgents: null, enabled: true },
        { id: 'bob', senderId: 'bob', chatId: null, token: 'tok-bob', allowAgents: null, enabled: true },
      ]);
      assert.deepEqual(await stateChannel(harness, 'quick'), reply.channel);
    });

    test('quick-start variant: a wrong x-api-key is refused with 401', async () => {
      const response = await harness.request('/api/channels', {
        admin: false,
        headers: { 'x-api-key': 'not-the-admin-token' },
        json: { id: 'quick-refused', name: 'Nope', secret: 'nope-nope-nope' },
      });
      assert.equal(response.status, 401);
      assertErrorEnvelope((await response.json()) as ErrorReply, 'admin auth required');
      assert.equal(await stateChannel(harness, 'quick-refused'), undefined);
    });

    test('posting a channel with users replaces its user list', async () => {
      await post(harness, '/api/channels', {
        channelId: 'replace-users',
        secret: 'replace-secret',
        users: [
          { senderId: 'alice', token: 'tok-a' },
          { senderId: 'bob', token: 'tok-b' },
        ],
      });
      await post(harness, '/api/channels/replace-users/users', { senderId: 'carol', token: 'tok-c' });

      const replaced = await post<ChannelReply>(harness, '/api/channels', {
        id: 'replace-users',
        users: [{ senderId: 'bob' }, { senderId: 'dave', token: 'tok-d', name: 'Dave' }],
      });
      assert.deepEqual(
        replaced.channel.users.map((user) => [user.senderId, user.token]),
        [
          ['bob', 'tok-b'],
          ['dave', 'tok-d'],
        ],
        'alice and carol are gone; bob keeps his token when the new list omits it',
      );
      assert.equal(replaced.channel.userCount, 2);
      assert.equal(replaced.channel.secret, 'replace-secret');

      const emptied = await post<ChannelReply>(harness, '/api/channels', { channelId: 'replace-users', users: [] });
      assert.deepEqual(emptied.channel.users, []);
      assert.deepEqual((await stateChannel(harness, 'replace-users'))?.users, []);
    });

    test('a user in a posted list without a token gets a generated 32-hex token', async () => {
      const reply = await post<ChannelReply>(harness, '/api/channels', {
        id: 'quick-generated',
        name: 'Generated',
        users: [{ senderId: 'erin', name: 'Erin' }],
      });
      assert.match(reply.channel.users[0]?.token ?? '', hex32);
    });

    test('a posted user list in which two users share a token is refused with 400', async () => {
      const reply = await post<ErrorReply>(
        harness,
        '/api/channels',
        {
          channelId: 'shared-token-list',
          users: [
            { senderId: 'alice', token: 'same' },
            { senderId: 'bob', token: 'same' },
          ],
        },
        400,
      );
      assertErrorEnvelope(reply, /token/);
      assert.equal(await stateChannel(harness, 'shared-token-list'), undefined);
    });

    test('channelId with characters outside the allowed set, or empty, is refused with 400', async () => {
      for (const channelId of ['a/b', '../x', 'a b', '.hidden', 'x?y', 'é']) {
        const reply = await post<ErrorReply>(harness, '/api/channels', { channelId, secret: 'whatever-1' }, 400);
        assertErrorEnvelope(reply, /channelId/);
      }
      assertErrorEnvelope(
        await post<ErrorReply>(harness, '/api/channels', { channelId: '' }, 400),
        'channelId is required',
      );
      const ids = (await state(harness)).channels.map((channel) => channel.channelId);
      for (const bad of ['a/b', '../x', 'a b', '.hidden', 'x?y', 'é', '']) assert.ok(!ids.includes(bad), bad);
    });

    test('channelId and senderId up to 128 characters of letters, digits and . _ : @ + - work on every route', async () => {
      const channelId = `c${'h'.repeat(100)}.in_ne:l@x+y-${'z'.repeat(14)}`;
      const senderId = `u${'s'.repeat(100)}.er_na:m@e+x-${'q'.repeat(14)}`;
      assert.equal(channelId.length, 128);
      assert.equal(senderId.length, 128);
      const created = await post<ChannelReply>(harness, '/api/channels', { channelId });
      assert.equal(created.channel.channelId, channelId);
      const channelPath = `/api/channels/${encodeURIComponent(channelId)}`;
      const user = await post<UserReply>(harness, `${channelPath}/users`, { senderId });
      assert.equal(user.user.id, senderId);
      const removedUser = await del<{ senderId: string }>(
        harness,
        `${channelPath}/users/${encodeURIComponent(senderId)}`,
      );
      assert.equal(removedUser.senderId, senderId);
      assert.deepEqual(await del(harness, channelPath), { ok: true, channelId });
      assert.equal(await stateChannel(harness, channelId), undefined);

      assertErrorEnvelope(
        await post<ErrorReply>(harness, '/api/channels', { channelId: `${channelId}9` }, 400),
        /channelId/,
      );
      await post(harness, '/api/channels', { channelId: 'long-users' });
      assertErrorEnvelope(
        await post<ErrorReply>(harness, '/api/channels/long-users/users', { senderId: `${senderId}9` }, 400),
        /senderId/,
      );
    });
  });

  describe('DELETE /api/channels/:channelId', () => {
    test('deletes the channel and all its users', async () => {
      await post(harness, '/api/channels', {
        channelId: 'doomed',
        secret: 'doomed-secret',
        users: [{ senderId: 'alice', token: 'doomed-alice' }],
      });
      const reply = await del<{ ok: boolean; channelId: string }>(harness, '/api/channels/doomed');
      assert.deepEqual(reply, { ok: true, channelId: 'doomed' });
      assert.equal(await stateChannel(harness, 'doomed'), undefined);
      assert.ok(!(await health(harness)).channels.some((channel) => channel.channelId === 'doomed'));

      // Its users went with it: the same id created again starts without users.
      const recreated = await post<ChannelReply>(harness, '/api/channels', { channelId: 'doomed' });
      assert.deepEqual(recreated.channel.users, []);
      assert.notEqual(recreated.channel.secret, 'doomed-secret');
    });

    test('deleting a channel disconnects its backend and clients', async () => {
      await post(harness, '/api/channels', { channelId: 'doomed-live', secret: 'doomed-live-secret' });
      const backend = await connectBackend(harness.wsUrl, 'doomed-live', 'doomed-live-secret');
      const client = connectClient(harness.wsUrl, { channelId: 'doomed-live' });
      await backend.next('relay.client.open');
      await del(harness, '/api/channels/doomed-live');
      const [backendClosed, clientClosed] = await Promise.all([backend.closed, client.closed]);
      assert.deepEqual(backendClosed, { code: 1012, reason: 'channel removed' });
      assert.deepEqual(clientClosed, { code: 1012, reason: 'channel removed' });
      const after = await health(harness);
      assert.ok(!after.channels.some((channel) => channel.channelId === 'doomed-live'));
    });

    test('a channel that does not exist → 404 `channel not found`', async () => {
      assertErrorEnvelope(await del<ErrorReply>(harness, '/api/channels/never-existed', 404), 'channel not found');
    });
  });

  describe('POST /api/channels/:channelId/users (create or update)', () => {
    before(async () => {
      await post(harness, '/api/channels', { channelId: 'people', secret: 'people-secret' });
    });

    test('creates a user: token generated as 32 hex, enabled by default, all agents, no chatId; id equals senderId', async () => {
      const reply = await post<UserReply>(harness, '/api/channels/people/users', { senderId: 'alice' });
      assert.equal(reply.ok, true);
      assert.match(reply.user.token, hex32);
      assert.deepEqual(reply.user, {
        id: 'alice',
        senderId: 'alice',
        chatId: null,
        token: reply.user.token,
        allowAgents: null,
        enabled: true,
      });
      assert.equal(reply.channel.channelId, 'people');
      assert.equal(reply.channel.userCount, reply.channel.users.length);
      assert.deepEqual(
        reply.channel.users.find((user) => user.senderId === 'alice'),
        reply.user,
      );
      const listed = (await stateChannel(harness, 'people'))?.users.find((user) => user.senderId === 'alice');
      assert.deepEqual(listed, reply.user);
    });

    test('generated tokens differ between users', async () => {
      const a = await post<UserReply>(harness, '/api/channels/people/users', { senderId: 'gen-a' });
      const b = await post<UserReply>(harness, '/api/channels/people/users', { senderId: 'gen-b' });
      assert.notEqual(a.user.token, b.user.token);
    });

    test('update: an omitted token keeps the old one; a given token replaces it', async () => {
      const created = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'bob',
        token: 'bob-token-1',
      });
      assert.equal(created.user.token, 'bob-token-1');
      const kept = await post<UserReply>(harness, '/api/channels/people/users', { senderId: 'bob', chatId: 'c-bob' });
      assert.equal(kept.user.token, 'bob-token-1');
      assert.equal(kept.user.chatId, 'c-bob');
      const replaced = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'bob',
        token: 'bob-token-2',
      });
      assert.equal(replaced.user.token, 'bob-token-2');
      assert.equal(replaced.user.chatId, 'c-bob', 'an omitted chatId keeps the stored one');
      const bobs = (await stateChannel(harness, 'people'))?.users.filter((user) => user.senderId === 'bob');
      assert.deepEqual(bobs, [replaced.user]);
    });

    test('chatId is stored, and null clears it', async () => {
      const bound = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'carol',
        chatId: 'chat-carol',
      });
      assert.equal(bound.user.chatId, 'chat-carol');
      assert.equal(
        (await stateChannel(harness, 'people'))?.users.find((user) => user.senderId === 'carol')?.chatId,
        'chat-carol',
      );
      const unbound = await post<UserReply>(harness, '/api/channels/people/users', { senderId: 'carol', chatId: null });
      assert.equal(unbound.user.chatId, null);
    });

    test('allowAgents as an array is lowercased', async () => {
      const reply = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'agents-array',
        allowAgents: ['Main', 'CODER'],
      });
      assert.deepEqual(reply.user.allowAgents, ['main', 'coder']);
    });

    test('allowAgents as a comma-separated string is split and lowercased', async () => {
      const reply = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'agents-csv',
        allowAgents: 'Main, Coder,Writer',
      });
      assert.deepEqual(reply.user.allowAgents, ['main', 'coder', 'writer']);
      const listed = (await stateChannel(harness, 'people'))?.users.find((user) => user.senderId === 'agents-csv');
      assert.deepEqual(listed?.allowAgents, ['main', 'coder', 'writer']);
    });

    test('allowAgents "*", ["*"] or null means every agent (null)', async () => {
      for (const allowAgents of ['*', ['*'], null]) {
        await post(harness, '/api/channels/people/users', { senderId: 'agents-all', allowAgents: ['main'] });
        const reply = await post<UserReply>(harness, '/api/channels/people/users', {
          senderId: 'agents-all',
          allowAgents,
        });
        assert.equal(reply.user.allowAgents, null, JSON.stringify(allowAgents));
      }
    });

    test('allowAgents omitted on update keeps the stored list', async () => {
      await post(harness, '/api/channels/people/users', { senderId: 'agents-kept', allowAgents: ['main'] });
      const reply = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'agents-kept',
        chatId: 'c1',
      });
      assert.deepEqual(reply.user.allowAgents, ['main']);
    });

    test('enabled:false disables a user, an omitted enabled keeps it, enabled:true re-enables it', async () => {
      const disabled = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'dave',
        enabled: false,
      });
      assert.equal(disabled.user.enabled, false);
      const untouched = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'dave',
        chatId: 'c-dave',
      });
      assert.equal(untouched.user.enabled, false);
      const reenabled = await post<UserReply>(harness, '/api/channels/people/users', {
        senderId: 'dave',
        enabled: true,
      });
      assert.equal(reenabled.user.enabled, true);
      assert.equal(
        (await stateChannel(harness, 'people'))?.users.find((user) => user.senderId === 'dave')?.enabled,
        true,
      );
    });

    test('a second user with another user’s token in the same channel → 400', async () => {
      await post(harness, '/api/channels/people/users', { senderId: 'erin', token: 'erin-token' });
      const reply = await post<ErrorReply>(
        harness,
        '/api/channels/people/users',
        { senderId: 'frank', token: 'erin-token' },
        400,
      );
      assertErrorEnvelope(reply, /token/);
      const users = (await stateChannel(harness, 'people'))?.users ?? [];
      assert.ok(!users.some((user) => user.senderId === 'frank'));
      // The same token in another channel is fine.
      await post(harness, '/api/channels', { channelId: 'people-2' });
      await post(harness, '/api/channels/people-2/users', { senderId: 'frank', token: 'erin-token' });
    });

    test('senderId with characters outside the allowed set, or empty, is refused with 400', async () => {
      for (const senderId of ['a/b', '../x', 'a b', '-dash', 'x#y']) {
        const reply = await post<ErrorReply>(harness, '/api/channels/people/users', { senderId }, 400);
        assertErrorEnvelope(reply, /senderId/);
      }
      assertErrorEnvelope(
        await post<ErrorReply>(harness, '/api/channels/people/users', { senderId: '' }, 400),
        'senderId is required',
      );
      assertErrorEnvelope(
        await post<ErrorReply>(harness, '/api/channels/people/users', { token: 'x' }, 400),
        'senderId is required',
      );
      const users = (await stateChannel(harness, 'people'))?.users.map((user) => user.senderId) ?? [];
      for (const bad of ['a/b', '../x', 'a b', '-dash', 'x#y', '']) assert.ok(!users.includes(bad), bad);
    });

    test('a user for a channel that does not exist → 404 `channel not found`', async () => {
      assertErrorEnvelope(
        await post<ErrorReply>(harness, '/api/channels/nowhere/users', { senderId: 'alice' }, 404),
        'channel not found',
      );
      assert.equal(await stateChannel(harness, 'nowhere'), undefined);
    });
  });

  describe('DELETE /api/channels/:channelId/users/:senderId', () => {
    test('deletes the user and answers ok, channel, senderId', async () => {
      await post(harness, '/api/channels', {
        channelId: 'shrinking',
        users: [
          { senderId: 'alice', token: 'shrink-a' },
          { senderId: 'bob', token: 'shrink-b' },
        ],
      });
      const reply = await del<{ ok: boolean; channel: ChannelJson; senderId: string }>(
        harness,
        '/api/channels/shrinking/users/alice',
      );
      assert.equal(reply.ok, true);
      assert.equal(reply.senderId, 'alice');
      assert.equal(reply.channel.channelId, 'shrinking');
      assert.deepEqual(
        reply.channel.users.map((user) => user.senderId),
        ['bob'],
      );
      assert.equal(reply.channel.userCount, 1);
      assert.deepEqual(
        (await stateChannel(harness, 'shrinking'))?.users.map((user) => user.senderId),
        ['bob'],
      );
    });

    test('a user that does not exist → 404 `user not found`', async () => {
      await post(harness, '/api/channels', { channelId: 'lonely' });
      assertErrorEnvelope(await del<ErrorReply>(harness, '/api/channels/lonely/users/ghost', 404), 'user not found');
    });

    test('a user of a channel that does not exist → 404 `channel not found`', async () => {
      assertErrorEnvelope(
        await del<ErrorReply>(harness, '/api/channels/no-such/users/ghost', 404),
        'channel not found',
      );
    });
  });
});

describe('status endpoints', () => {
  test('GET /healthz: ok, backendCount, clientCount, channels [channelId, label, backendConnected, clientCount, instanceId], timestamp — no secrets, no auth', async () => {
    const harness = await startRelay();
    try {
      await post(harness, '/api/channels', {
        channelId: 'health-a',
        label: 'A',
        secret: 'health-secret-a',
        users: [{ senderId: 'alice', token: 'health-user-token' }],
      });
      await post(harness, '/api/channels', { channelId: 'health-b', secret: 'health-secret-b' });
      const before = Date.now();
      const response = await harness.request('/healthz', { admin: false });
      assert.equal(response.status, 200);
      const text = await response.text();
      const body = JSON.parse(text) as HealthReply;
      assert.deepEqual(Object.keys(body).sort(), ['backendCount', 'channels', 'clientCount', 'ok', 'timestamp']);
      assert.equal(body.ok, true);
      assert.equal(body.backendCount, 0);
      assert.equal(body.clientCount, 0);
      assert.ok(body.timestamp >= before && body.timestamp <= Date.now());
      const sorted = [...body.channels].sort((a, b) => a.channelId.localeCompare(b.channelId));
      assert.deepEqual(sorted, [
        { channelId: 'health-a', label: 'A', backendConnected: false, clientCount: 0, instanceId: null },
        { channelId: 'health-b', label: null, backendConnected: false, clientCount: 0, instanceId: null },
      ]);
      for (const secret of ['health-secret-a', 'health-secret-b', 'health-user-token', adminToken]) {
        assert.ok(!text.includes(secret), `healthz leaks ${secret}`);
      }
    } finally {
      await harness.cleanup();
    }
  });

  test('GET /api/meta: ok, adminAuthEnabled, publicBaseUrl, pluginBackendUrl, timestamp — no auth', async () => {
    const harness = await startRelay({
      env: {
        RELAY_PUBLIC_BASE_URL: 'https://relay.example.test',
        RELAY_PLUGIN_BACKEND_URL: 'wss://relay.example.test/backend',
      },
    });
    try {
      const before = Date.now();
      const response = await harness.request('/api/meta', { admin: false });
      assert.equal(response.status, 200);
      const body = (await response.json()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), [
        'adminAuthEnabled',
        'ok',
        'pluginBackendUrl',
        'publicBaseUrl',
        'timestamp',
      ]);
      assert.equal(body.ok, true);
      assert.equal(body.adminAuthEnabled, true);
      assert.equal(body.publicBaseUrl, 'https://relay.example.test');
      assert.equal(body.pluginBackendUrl, 'wss://relay.example.test/backend');
      assert.equal(typeof body.timestamp, 'number');
      assert.ok((body.timestamp as number) >= before);
      const text = JSON.stringify(body);
      assert.ok(!text.includes(adminToken));

      const state = await call<StateReply>(harness, 'GET', '/api/state', undefined, 200);
      assert.equal(state.publicBaseUrl, 'https://relay.example.test');
      assert.equal(state.pluginBackendUrl, 'wss://relay.example.test/backend');
    } finally {
      await harness.cleanup();
    }
  });

  test('GET /api/meta without RELAY_PUBLIC_BASE_URL / RELAY_PLUGIN_BACKEND_URL reports them as null', async () => {
    const harness = await startRelay();
    try {
      const body = (await (await harness.request('/api/meta', { admin: false })).json()) as Record<string, unknown>;
      assert.equal(body.ok, true);
      assert.equal(body.publicBaseUrl, null);
      assert.equal(body.pluginBackendUrl, null);
    } finally {
      await harness.cleanup();
    }
  });

  test('GET /api/state: ok, configPath, adminAuthEnabled, URLs, full channels (secret, secretMasked, tokenParam, users), stats, timestamp', async () => {
    const harness = await startRelay();
    try {
      await post(harness, '/api/channels', {
        channelId: 'full',
        label: 'Full',
        secret: 'full-channel-secret',
        tokenParam: 'key',
      });
      await post(harness, '/api/channels/full/users', {
        senderId: 'alice',
        token: 'alice-full-token',
        chatId: 'chat-1',
        allowAgents: ['Main'],
        enabled: false,
      });
      const before = Date.now();
      const body = await state(harness);
      assert.deepEqual(Object.keys(body).sort(), [
        'adminAuthEnabled',
        'channels',
        'configPath',
        'ok',
        'pluginBackendUrl',
        'publicBaseUrl',
        'stats',
        'timestamp',
      ]);
      assert.equal(body.ok, true);
      assert.equal(body.adminAuthEnabled, true);
      assert.equal(typeof body.configPath, 'string');
      // Where the channels are stored: the SQLite file in the data folder, or the PostgreSQL address.
      if (usingPostgres) assert.match(body.configPath, /^postgres(ql)?:\/\//);
      else assert.ok(body.configPath.startsWith(harness.dataDir), body.configPath);
      assert.deepEqual(body.stats, { backendCount: 0, clientCount: 0 });
      assert.ok(body.timestamp >= before && body.timestamp <= Date.now());
      assert.deepEqual(body.channels, [
        {
          channelId: 'full',
          label: 'Full',
          secret: 'full-channel-secret',
          secretMasked: 'full***cret',
          tokenParam: 'key',
          userCount: 1,
          users: [
            {
              id: 'alice',
              senderId: 'alice',
              chatId: 'chat-1',
              token: 'alice-full-token',
              allowAgents: ['main'],
              enabled: false,
            },
          ],
          backendConnected: false,
          clientCount: 0,
          instanceId: null,
          lastConnectedAt: null,
          lastDisconnectedAt: null,
        },
      ]);
    } finally {
      await harness.cleanup();
    }
  });
});

describe('persistence and live state', () => {
  test('channels and users survive a restart', async () => {
    const first = await startRelay();
    let second: RelayHarness | undefined;
    try {
      await post(first, '/api/channels', {
        channelId: 'kept',
        label: 'Kept',
        secret: 'kept-secret-123',
        tokenParam: 'key',
      });
      await post(first, '/api/channels/kept/users', {
        senderId: 'alice',
        token: 'alice-kept',
        chatId: 'chat-a',
        allowAgents: 'Main,Coder',
      });
      await post(first, '/api/channels/kept/users', { senderId: 'bob', enabled: false });
      await post(first, '/api/channels', { channelId: 'kept-2' });
      await post(first, '/api/channels', { channelId: 'gone' });
      await del(first, '/api/channels/gone');
      const beforeRestart = (await state(first)).channels;
      await first.stop();

      second = await startRelay({ reuse: { dataDir: first.dataDir, env: first.env } });
      const afterRestart = (await state(second)).channels;
      const byId = (channels: ChannelJson[]) => [...channels].sort((a, b) => a.channelId.localeCompare(b.channelId));
      assert.deepEqual(byId(afterRestart), byId(beforeRestart));
      assert.deepEqual(afterRestart.map((channel) => channel.channelId).sort(), ['kept', 'kept-2']);
      const kept = afterRestart.find((channel) => channel.channelId === 'kept');
      assert.deepEqual(
        kept?.users.map((user) => [user.senderId, user.chatId, user.allowAgents, user.enabled]),
        [
          ['alice', 'chat-a', ['main', 'coder'], true],
          ['bob', null, null, false],
        ],
      );
      assert.equal(kept?.users[0]?.token, 'alice-kept');
      assert.equal(kept?.tokenParam, 'key');
      assert.equal(kept?.secret, 'kept-secret-123');

      // The restarted relay accepts the stored secret from a backend.
      const backend = await connectBackend(second.wsUrl, 'kept', 'kept-secret-123');
      backend.close();
    } finally {
      await first.cleanup();
      await second?.cleanup();
    }
  });

  test('backendConnected, clientCount, instanceId and lastConnectedAt reflect a connected backend, and survive a restart', async () => {
    const first = await startRelay();
    let second: RelayHarness | undefined;
    try {
      await post(first, '/api/channels', { channelId: 'live', label: 'Live', secret: 'live-secret-xyz' });
      await post(first, '/api/channels', { channelId: 'idle', secret: 'idle-secret-xyz' });

      const connectedFrom = Date.now();
      const backend = await connectBackend(first.wsUrl, 'live', 'live-secret-xyz', 'node-a');
      const connectedBy = Date.now();
      let live = await stateChannel(first, 'live');
      assert.equal(live?.backendConnected, true);
      assert.equal(live?.instanceId, 'node-a');
      assert.equal(live?.clientCount, 0);
      const lastConnectedAt = live?.lastConnectedAt ?? 0;
      assert.ok(lastConnectedAt >= connectedFrom && lastConnectedAt <= connectedBy, String(lastConnectedAt));
      assert.equal(live?.lastDisconnectedAt, null);
      assert.equal((await stateChannel(first, 'idle'))?.backendConnected, false);

      const client1 = connectClient(first.wsUrl, { channelId: 'live', chatId: 'c1' });
      const client2 = connectClient(first.wsUrl, { channelId: 'live', chatId: 'c2' });
      await backend.next('relay.client.open');
      await backend.next('relay.client.open');
      const full = await state(first);
      live = full.channels.find((channel) => channel.channelId === 'live');
      assert.equal(live?.clientCount, 2);
      assert.deepEqual(full.stats, { backendCount: 1, clientCount: 2 });
      const healthy = await health(first);
      assert.equal(healthy.backendCount, 1);
      assert.equal(healthy.clientCount, 2);
      assert.deepEqual(
        healthy.channels.find((channel) => channel.channelId === 'live'),
        { channelId: 'live', label: 'Live', backendConnected: true, clientCount: 2, instanceId: 'node-a' },
      );
      assert.deepEqual(
        healthy.channels.find((channel) => channel.channelId === 'idle'),
        { channelId: 'idle', label: null, backendConnected: false, clientCount: 0, instanceId: null },
      );

      client1.close();
      await backend.next('relay.client.close');
      live = await eventually(
        () => stateChannel(first, 'live'),
        (channel) => channel?.clientCount === 1,
        'clientCount dropping to 1',
      );
      client2.close();
      await backend.next('relay.client.close');
      await eventually(
        () => stateChannel(first, 'live'),
        (channel) => channel?.clientCount === 0,
        'clientCount dropping to 0',
      );

      const disconnectedFrom = Date.now();
      backend.close();
      live = await eventually(
        () => stateChannel(first, 'live'),
        (channel) => channel?.backendConnected === false && channel.lastDisconnectedAt !== null,
        'the backend disconnect being recorded',
      );
      assert.ok((live?.lastDisconnectedAt ?? 0) >= disconnectedFrom);
      assert.equal(live?.instanceId, 'node-a', 'the last instanceId stays after the backend leaves');
      assert.equal(live?.lastConnectedAt, lastConnectedAt);
      assert.deepEqual((await health(first)).backendCount, 0);
      const recorded = live;
      await first.stop();

      second = await startRelay({ reuse: { dataDir: first.dataDir, env: first.env } });
      const restored = await stateChannel(second, 'live');
      assert.equal(restored?.backendConnected, false);
      assert.equal(restored?.clientCount, 0);
      assert.equal(restored?.instanceId, 'node-a');
      assert.equal(restored?.lastConnectedAt, recorded?.lastConnectedAt);
      assert.equal(restored?.lastDisconnectedAt, recorded?.lastDisconnectedAt);
    } finally {
      await first.cleanup();
      await second?.cleanup();
    }
  });
});
