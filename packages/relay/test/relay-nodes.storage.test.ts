import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertErrorBody } from './support/http-api.js';
import { type RelayHarness, startRelay, usingPostgres } from './support/relay-harness.js';

/**
 * GET/POST/DELETE /api/relay-nodes. The registry needs a hosted store (PostgreSQL): the
 * plain pass checks the answers without one, the storage pass (DATABASE_URL set) checks
 * the registry itself.
 */

interface RelayNodeJson {
  id: string;
  name: string;
  url: string;
  adminToken?: string;
}

interface ListReply {
  ok: boolean;
  nodes: RelayNodeJson[];
  source: string;
}

interface Reply {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

const noStoreSkip = usingPostgres ? 'DATABASE_URL is set, so a hosted store is configured' : false;
const postgresSkip = usingPostgres
  ? false
  : 'needs the hosted store: run with DATABASE_URL=postgres://… (the storage pass)';

async function send(harness: RelayHarness, method: string, path: string, json?: unknown): Promise<Reply> {
  const response = await harness.request(path, json === undefined ? { method } : { method, json });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown>, text };
}

async function list(harness: RelayHarness): Promise<ListReply> {
  const reply = await send(harness, 'GET', '/api/relay-nodes');
  assert.equal(reply.status, 200, reply.text);
  return reply.body as unknown as ListReply;
}

function byId(nodes: RelayNodeJson[]): RelayNodeJson[] {
  return [...nodes].sort((a, b) => a.id.localeCompare(b.id));
}

describe('relay node registry without a hosted store', () => {
  let harness: RelayHarness;
  before(async () => {
    if (!usingPostgres) harness = await startRelay();
  });
  after(async () => {
    await harness?.cleanup();
  });

  test('GET /api/relay-nodes → {ok:true, nodes:[], source:"none"}', { skip: noStoreSkip }, async () => {
    const reply = await send(harness, 'GET', '/api/relay-nodes');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { ok: true, nodes: [], source: 'none' });
  });

  test('POST /api/relay-nodes → 400 naming the missing hosted store', { skip: noStoreSkip }, async () => {
    const reply = await send(harness, 'POST', '/api/relay-nodes', {
      id: 'n1',
      name: 'Node one',
      url: 'https://n1.example.test',
      adminToken: 'n1-token',
    });
    assertErrorBody(reply, 400, /hosted store/);
    assert.match(String(reply.body.error), /DATABASE_URL/);
    assert.deepEqual(await list(harness), { ok: true, nodes: [], source: 'none' });
  });

  test('DELETE /api/relay-nodes/:nodeId → 400 naming the missing hosted store', { skip: noStoreSkip }, async () => {
    assertErrorBody(await send(harness, 'DELETE', '/api/relay-nodes/n1'), 400, /hosted store/);
  });
});

describe('relay node registry in PostgreSQL', () => {
  let harness: RelayHarness;
  before(async () => {
    if (usingPostgres) harness = await startRelay();
  });
  after(async () => {
    await harness?.cleanup();
  });

  test('GET /api/relay-nodes on an empty registry → nodes [], source "postgres"', { skip: postgresSkip }, async () => {
    assert.deepEqual(await list(harness), { ok: true, nodes: [], source: 'postgres' });
  });

  test('POST {id, name, url, adminToken} creates an entry that the list shows', { skip: postgresSkip }, async () => {
    const created = await send(harness, 'POST', '/api/relay-nodes', {
      id: 'home',
      name: 'Home relay',
      url: 'https://home.example.test',
      adminToken: 'home-admin-token',
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.ok, true);
    const plain = await send(harness, 'POST', '/api/relay-nodes', {
      id: 'cabin',
      name: 'Cabin relay',
      url: 'https://cabin.example.test',
    });
    assert.equal(plain.status, 200, plain.text);
    const listed = await list(harness);
    assert.equal(listed.ok, true);
    assert.equal(listed.source, 'postgres');
    assert.deepEqual(byId(listed.nodes), [
      { id: 'cabin', name: 'Cabin relay', url: 'https://cabin.example.test' },
      { id: 'home', name: 'Home relay', url: 'https://home.example.test', adminToken: 'home-admin-token' },
    ]);
  });

  test('POST with an existing id updates that entry', { skip: postgresSkip }, async () => {
    const updated = await send(harness, 'POST', '/api/relay-nodes', {
      id: 'home',
      name: 'Home relay (moved)',
      url: 'https://home2.example.test',
      adminToken: 'home-admin-token-2',
    });
    assert.equal(updated.status, 200, updated.text);
    const nodes = (await list(harness)).nodes;
    assert.deepEqual(
      nodes.filter((node) => node.id === 'home'),
      [{ id: 'home', name: 'Home relay (moved)', url: 'https://home2.example.test', adminToken: 'home-admin-token-2' }],
    );
    assert.equal(nodes.length, 2);
  });

  test('POST updating an entry without adminToken keeps the stored adminToken', { skip: postgresSkip }, async () => {
    const renamed = await send(harness, 'POST', '/api/relay-nodes', {
      id: 'home',
      name: 'Home relay (renamed)',
      url: 'https://home2.example.test',
    });
    assert.equal(renamed.status, 200, renamed.text);
    const home = (await list(harness)).nodes.find((node) => node.id === 'home');
    assert.deepEqual(home, {
      id: 'home',
      name: 'Home relay (renamed)',
      url: 'https://home2.example.test',
      adminToken: 'home-admin-token-2',
    });
  });

  test('POST without id, name or url → 400', { skip: postgresSkip }, async () => {
    const full = { id: 'partial', name: 'Partial', url: 'https://partial.example.test' };
    for (const field of ['id', 'name', 'url'] as const) {
      const { [field]: _omitted, ...rest } = full;
      assertErrorBody(await send(harness, 'POST', '/api/relay-nodes', rest), 400, `${field} is required`);
    }
    assertErrorBody(await send(harness, 'POST', '/api/relay-nodes', { ...full, id: '' }), 400, /id/);
    assertErrorBody(await send(harness, 'POST', '/api/relay-nodes', { ...full, url: 5 }), 400, /url/);
    assertErrorBody(await send(harness, 'POST', '/api/relay-nodes', { ...full, adminToken: 5 }), 400, /adminToken/);
    assert.ok(!(await list(harness)).nodes.some((node) => node.id === 'partial' || node.id === ''));
  });

  test('the registry survives a restart', { skip: postgresSkip }, async () => {
    const before = await list(harness);
    await harness.stop();
    harness = await startRelay({ reuse: { dataDir: harness.dataDir, env: harness.env } });
    assert.deepEqual(await list(harness), before);
  });

  test('DELETE /api/relay-nodes/:nodeId removes the entry', { skip: postgresSkip }, async () => {
    const reply = await send(harness, 'DELETE', '/api/relay-nodes/cabin');
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.body.ok, true);
    assert.deepEqual(
      (await list(harness)).nodes.map((node) => node.id),
      ['home'],
    );
  });

  test('DELETE of an unknown node → 404', { skip: postgresSkip }, async () => {
    assertErrorBody(await send(harness, 'DELETE', '/api/relay-nodes/cabin'), 404, /not found/);
    assertErrorBody(await send(harness, 'DELETE', '/api/relay-nodes/never-there'), 404, /not found/);
    assert.deepEqual(
      (await list(harness)).nodes.map((node) => node.id),
      ['home'],
    );
  });
});
