import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { assertErrorBody, type RestReply } from './support/http-api.js';
import { adminToken, type RelayHarness, startRelay } from './support/relay-harness.js';

/**
 * The seed's Errors table and CORS rules for the REST administration: every failure is
 * `{ok:false, error}` with the table's status, every response carries the CORS headers, and
 * none of the bad requests changes what was stored.
 */

const bodyLimitBytes = 2048;

const corsHeaders = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'content-type, authorization, x-relay-admin-token',
  'access-control-max-age': '86400',
};

/** Every admin endpoint of the seed, with a request body that would succeed when authorised. */
const adminEndpoints: Array<{ method: string; path: string; body?: unknown }> = [
  { method: 'GET', path: '/api/state' },
  { method: 'POST', path: '/api/channels', body: { channelId: 'intruder', secret: 'intruder-secret' } },
  { method: 'DELETE', path: '/api/channels/keep-me' },
  { method: 'POST', path: '/api/channels/keep-me/users', body: { senderId: 'mallory' } },
  { method: 'DELETE', path: '/api/channels/keep-me/users/alice' },
  { method: 'GET', path: '/api/relay-nodes' },
  { method: 'POST', path: '/api/relay-nodes', body: { id: 'n1', name: 'Node', url: 'https://n1.example.test' } },
  { method: 'DELETE', path: '/api/relay-nodes/n1' },
];

function assertCors(response: Response, what: string): void {
  for (const [name, value] of Object.entries(corsHeaders)) {
    assert.equal(response.headers.get(name), value, `${name} on ${what}`);
  }
}

describe('REST errors and CORS', () => {
  let harness: RelayHarness;
  let snapshot: unknown;

  /** Sends a request and checks the CORS headers every REST answer must carry. */
  async function send(
    path: string,
    init: RequestInit & { admin?: boolean; json?: unknown; raw?: string } = {},
  ): Promise<RestReply> {
    const { raw, ...rest } = init;
    const response = await harness.request(
      path,
      raw === undefined
        ? rest
        : {
            method: 'POST',
            ...rest,
            body: raw,
            headers: { 'content-type': 'application/json', ...(rest.headers as Record<string, string>) },
          },
    );
    assertCors(response, `${init.method ?? 'GET'} ${path} (${response.status})`);
    const text = await response.text();
    let body: unknown;
    try {
      body = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { status: response.status, body, text };
  }

  async function storedChannels(): Promise<unknown> {
    const reply = await send('/api/state');
    assert.equal(reply.status, 200, reply.text);
    return (reply.body as { channels: unknown }).channels;
  }

  before(async () => {
    harness = await startRelay({ env: { RELAY_ADMIN_BODY_LIMIT_BYTES: String(bodyLimitBytes) } });
    const created = await send('/api/channels', {
      json: {
        channelId: 'keep-me',
        label: 'Keep me',
        secret: 'keep-me-secret',
        tokenParam: 'key',
        users: [{ senderId: 'alice', token: 'alice-token', chatId: 'c1', allowAgents: ['main'] }],
      },
    });
    assert.equal(created.status, 200, created.text);
    const other = await send('/api/channels', { json: { channelId: 'keep-me-too', secret: 'second-secret' } });
    assert.equal(other.status, 200, other.text);
    snapshot = await storedChannels();
  });

  after(async () => {
    await harness?.cleanup();
  });

  describe('400 bad request', () => {
    test('POST /api/channels without channelId → 400 `channelId is required`', async () => {
      for (const json of [{}, { label: 'No id', secret: 'whatever' }, { channelId: '' }, { id: '' }]) {
        assertErrorBody(await send('/api/channels', { json }), 400, 'channelId is required');
      }
    });

    test('POST /api/channels/:channelId/users without senderId → 400 `senderId is required`', async () => {
      assertErrorBody(await send('/api/channels/keep-me/users', { json: { token: 't' } }), 400, 'senderId is required');
    });

    test('malformed JSON → 400', async () => {
      for (const raw of ['{"channelId":', '{channelId: "x"}', "{'channelId':'x'}", '{"channelId":"x",}', 'not json']) {
        assertErrorBody(await send('/api/channels', { raw }), 400);
        assertErrorBody(await send('/api/channels/keep-me/users', { raw }), 400);
      }
      assertErrorBody(await send('/api/relay-nodes', { raw: '{"id":' }), 400);
    });

    test('an empty JSON body → 400', async () => {
      assertErrorBody(await send('/api/channels', { raw: '' }), 400);
      assertErrorBody(await send('/api/channels/keep-me/users', { raw: '' }), 400);
    });

    test('a JSON body that is not an object → 400', async () => {
      for (const raw of ['[]', '[{"channelId":"x"}]', '"keep-me"', '42', 'null', 'true']) {
        assertErrorBody(await send('/api/channels', { raw }), 400);
        assertErrorBody(await send('/api/channels/keep-me/users', { raw }), 400);
      }
    });

    test('a body that is not JSON at all → 400', async () => {
      const reply = await send('/api/channels', {
        method: 'POST',
        body: 'channelId=keep-me&label=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assertErrorBody(reply, 400);
    });

    test('channel fields of the wrong type → 400 naming the field', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ channelId: 5 }, 'channelId'],
        [{ channelId: 'keep-me', label: 5 }, 'label'],
        [{ channelId: 'keep-me', label: ['x'] }, 'label'],
        [{ channelId: 'keep-me', secret: 5 }, 'secret'],
        [{ channelId: 'keep-me', secret: { value: 'x' } }, 'secret'],
        [{ channelId: 'keep-me', tokenParam: 5 }, 'tokenParam'],
        [{ channelId: 'keep-me', users: 'alice' }, 'users'],
        [{ channelId: 'keep-me', users: [{ senderId: 5 }] }, 'senderId'],
        [{ channelId: 'keep-me', users: [{ senderId: 'alice', enabled: 'yes' }] }, 'enabled'],
        [{ id: 'keep-me', name: 7 }, 'name'],
      ];
      for (const [json, field] of cases) {
        assertErrorBody(await send('/api/channels', { json }), 400, new RegExp(field));
      }
    });

    test('user fields of the wrong type → 400 naming the field', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ senderId: 5 }, 'senderId'],
        [{ senderId: 'alice', enabled: 'yes' }, 'enabled'],
        [{ senderId: 'alice', enabled: 1 }, 'enabled'],
        [{ senderId: 'alice', token: 5 }, 'token'],
        [{ senderId: 'alice', chatId: 5 }, 'chatId'],
        [{ senderId: 'alice', allowAgents: 5 }, 'allowAgents'],
        [{ senderId: 'alice', allowAgents: [1, 2] }, 'allowAgents'],
      ];
      for (const [json, field] of cases) {
        assertErrorBody(await send('/api/channels/keep-me/users', { json }), 400, new RegExp(field));
      }
    });

    test('a tokenParam that is not a query parameter name → 400', async () => {
      for (const tokenParam of ['', 'a b', 'a&b', 'channelId']) {
        assertErrorBody(await send('/api/channels', { json: { channelId: 'keep-me', tokenParam } }), 400, /tokenParam/);
      }
    });

    test(`a JSON body over RELAY_ADMIN_BODY_LIMIT_BYTES (${bodyLimitBytes}) → 400 \`payload too large\``, async () => {
      const label = 'x'.repeat(bodyLimitBytes);
      assertErrorBody(await send('/api/channels', { json: { channelId: 'keep-me', label } }), 400, 'payload too large');
      assertErrorBody(
        await send('/api/channels/keep-me/users', { json: { senderId: 'big', chatId: label } }),
        400,
        'payload too large',
      );
      // Just under the limit is accepted.
      const fits = await send('/api/channels', {
        json: { channelId: 'fits', label: 'y'.repeat(bodyLimitBytes - 100) },
      });
      assert.equal(fits.status, 200, fits.text);
      const removed = await send('/api/channels/fits', { method: 'DELETE' });
      assert.equal(removed.status, 200, removed.text);
    });

    test('a chunked JSON body (no Content-Length) over the limit → 400 `payload too large`', async () => {
      const chunk = new TextEncoder().encode(`{"channelId":"keep-me","label":"${'z'.repeat(bodyLimitBytes)}"}`);
      const response = await fetch(`${harness.url}/api/channels`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-relay-admin-token': adminToken },
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(chunk);
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit & { duplex: 'half' });
      assertCors(response, 'chunked oversized POST');
      const text = await response.text();
      assertErrorBody({ status: response.status, body: JSON.parse(text), text }, 400, 'payload too large');
    });
  });

  describe('401 authentication failure', () => {
    const wrongCredentials: Array<[string, Record<string, string>, string]> = [
      ['no credentials', {}, ''],
      ['a wrong X-Relay-Admin-Token', { 'x-relay-admin-token': 'wrong-token' }, ''],
      ['an X-Relay-Admin-Token one character short', { 'x-relay-admin-token': adminToken.slice(0, -1) }, ''],
      ['an X-Relay-Admin-Token with a character added', { 'x-relay-admin-token': `${adminToken}0` }, ''],
      ['a wrong ?adminToken=', {}, 'adminToken=wrong-token'],
      ['an empty ?adminToken=', {}, 'adminToken='],
      ['a wrong x-api-key', { 'x-api-key': 'wrong-token' }, ''],
      ['a bearer token that is not a valid JWT', { authorization: 'Bearer not-a-jwt' }, ''],
    ];

    for (const [what, headers, query] of wrongCredentials) {
      test(`each admin endpoint with ${what} → 401 \`admin auth required\``, async () => {
        for (const endpoint of adminEndpoints) {
          const path = query ? `${endpoint.path}?${query}` : endpoint.path;
          const reply = await send(path, {
            admin: false,
            method: endpoint.method,
            headers,
            ...(endpoint.body === undefined ? {} : { json: endpoint.body }),
          });
          assertErrorBody(reply, 401, 'admin auth required');
        }
      });
    }

    test('authentication is checked before the body: malformed JSON without credentials → 401', async () => {
      assertErrorBody(await send('/api/channels', { admin: false, raw: '{"channelId":' }), 401, 'admin auth required');
      const oversized = `{"channelId":"x","label":"${'x'.repeat(bodyLimitBytes)}"}`;
      assertErrorBody(await send('/api/channels', { admin: false, raw: oversized }), 401, 'admin auth required');
    });

    test('the rejected requests changed nothing', async () => {
      assert.deepEqual(await storedChannels(), snapshot);
    });
  });

  describe('admin token carriers', () => {
    test('X-Relay-Admin-Token header is accepted by every admin endpoint', async () => {
      const headers = { 'x-relay-admin-token': adminToken };
      const steps: Array<[string, string, unknown]> = [
        ['POST', '/api/channels', { channelId: 'by-header', secret: 'by-header-secret' }],
        ['POST', '/api/channels/by-header/users', { senderId: 'bob' }],
        ['GET', '/api/state', undefined],
        ['GET', '/api/relay-nodes', undefined],
        ['DELETE', '/api/channels/by-header/users/bob', undefined],
        ['DELETE', '/api/channels/by-header', undefined],
      ];
      for (const [method, path, json] of steps) {
        const reply = await send(path, { admin: false, method, headers, ...(json === undefined ? {} : { json }) });
        assert.equal(reply.status, 200, `${method} ${path}: ${reply.text}`);
        assert.equal((reply.body as { ok: unknown }).ok, true);
      }
    });

    test('?adminToken= query parameter is accepted by every admin endpoint', async () => {
      const query = `adminToken=${encodeURIComponent(adminToken)}`;
      const steps: Array<[string, string, unknown]> = [
        ['POST', '/api/channels', { channelId: 'by-query', secret: 'by-query-secret' }],
        ['POST', '/api/channels/by-query/users', { senderId: 'bob' }],
        ['GET', '/api/state', undefined],
        ['GET', '/api/relay-nodes', undefined],
        ['DELETE', '/api/channels/by-query/users/bob', undefined],
        ['DELETE', '/api/channels/by-query', undefined],
      ];
      for (const [method, path, json] of steps) {
        const reply = await send(`${path}?${query}`, {
          admin: false,
          method,
          ...(json === undefined ? {} : { json }),
        });
        assert.equal(reply.status, 200, `${method} ${path}: ${reply.text}`);
        assert.equal((reply.body as { ok: unknown }).ok, true);
      }
      const state = await send(`/api/state?${query}`, { admin: false });
      const ids = (state.body as { channels: Array<{ channelId: string }> }).channels.map((c) => c.channelId);
      assert.ok(!ids.includes('by-query'), 'the channel created and deleted by query token is gone');
    });

    test('/healthz and /api/meta need no credentials', async () => {
      for (const path of ['/healthz', '/api/meta']) {
        const reply = await send(path, { admin: false });
        assert.equal(reply.status, 200, reply.text);
        assert.equal((reply.body as { ok: unknown }).ok, true);
      }
    });
  });

  describe('404 not found', () => {
    test('unknown routes answer 404 in the error envelope, with or without credentials', async () => {
      const unknown: Array<[string, string]> = [
        ['GET', '/api/nope'],
        ['GET', '/api/channels'],
        ['PUT', '/api/channels'],
        ['POST', '/api/channels/keep-me/users/alice/extra'],
        ['GET', '/nothing/here'],
        ['DELETE', '/api/channels'],
      ];
      for (const [method, path] of unknown) {
        for (const admin of [true, false]) {
          assertErrorBody(await send(path, { method, admin }), 404);
        }
      }
    });

    test('a path with a malformed percent-encoding → 400 in the error envelope', async () => {
      for (const [method, path] of [
        ['DELETE', '/api/channels/%E0%A4%A'],
        ['DELETE', '/api/channels/keep-me/users/%zz'],
        ['GET', '/api/%zz'],
      ] as const) {
        assertErrorBody(await send(path, { method }), 400);
        assertErrorBody(await send(path, { method, admin: false }), 400);
      }
    });

    test('a request the HTTP parser rejects → 400 in the error envelope, and the server keeps serving', async () => {
      const { port } = new URL(harness.url);
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1', () => {
          socket.write('GET /healthz HTTP/1.1\r\nHost: relay\r\nBad Header Without Colon\r\n\r\n');
        });
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          text += chunk;
        });
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      const [head = '', body = ''] = raw.split('\r\n\r\n');
      assert.match(head, /^HTTP\/1\.1 400 /);
      assertErrorBody({ status: 400, body: JSON.parse(body), text: raw }, 400, 'malformed HTTP request');
      assert.equal((await fetch(`${harness.url}/healthz`)).status, 200);
    });

    test('unknown channel and user → 404 `channel not found` / `user not found`', async () => {
      assertErrorBody(await send('/api/channels/ghost', { method: 'DELETE' }), 404, 'channel not found');
      assertErrorBody(
        await send('/api/channels/ghost/users', { json: { senderId: 'alice' } }),
        404,
        'channel not found',
      );
      assertErrorBody(await send('/api/channels/keep-me/users/ghost', { method: 'DELETE' }), 404, 'user not found');
    });
  });

  describe('CORS', () => {
    test('successful responses carry the CORS headers', async () => {
      for (const path of ['/healthz', '/api/meta', '/api/state', '/api/relay-nodes']) {
        const reply = await send(path);
        assert.equal(reply.status, 200, reply.text);
      }
      const created = await send('/api/channels', { json: { channelId: 'cors-ok' } });
      assert.equal(created.status, 200);
      const removed = await send('/api/channels/cors-ok', { method: 'DELETE' });
      assert.equal(removed.status, 200);
    });

    test('an OPTIONS preflight on any path is answered 204 with the CORS headers and no credentials', async () => {
      const paths = [
        '/',
        '/healthz',
        '/api/state',
        '/api/channels',
        '/api/channels/keep-me',
        '/api/channels/keep-me/users/alice',
        '/api/relay-nodes/n1',
        '/api/media/upload',
        '/completely/unknown/path',
      ];
      for (const path of paths) {
        const response = await harness.request(path, {
          admin: false,
          method: 'OPTIONS',
          headers: {
            origin: 'https://app.example.test',
            'access-control-request-method': 'DELETE',
            'access-control-request-headers': 'content-type, x-relay-admin-token',
          },
        });
        assert.equal(response.status, 204, `OPTIONS ${path}`);
        assertCors(response, `OPTIONS ${path}`);
        assert.equal(await response.text(), '');
      }
    });

    test('an OPTIONS preflight with a wrong admin token is still answered 204', async () => {
      const response = await harness.request('/api/state', {
        admin: false,
        method: 'OPTIONS',
        headers: { 'x-relay-admin-token': 'wrong' },
      });
      assert.equal(response.status, 204);
      assertCors(response, 'OPTIONS /api/state with a wrong token');
      await response.text();
    });
  });

  describe('after the bad requests', () => {
    test('the channels created before are unchanged and the server still serves', async () => {
      assert.deepEqual(await storedChannels(), snapshot);
      const health = await send('/healthz', { admin: false });
      assert.equal(health.status, 200);
      const created = await send('/api/channels', { json: { channelId: 'still-serving' } });
      assert.equal(created.status, 200, created.text);
      const ids = ((await storedChannels()) as Array<{ channelId: string }>).map((channel) => channel.channelId);
      assert.deepEqual(ids.sort(), ['keep-me', 'keep-me-too', 'still-serving']);
    });
  });
});
