import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '@hearth/core';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { readRelayConfig } from '../src/config.js';
import { type RelayHarness, startRelay } from './support/relay-harness.js';

const audience = 'hearth-relay-admin';

interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function makeKey(kid: string, alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicJwk };
}

/**
 * A tiny identity provider: serves `{ keys }` at each of `jwksPaths` and 404 elsewhere,
 * and records every path the relay fetched.
 */
interface IdentityProvider {
  server: Server;
  base: string;
  requests: string[];
  close(): Promise<void>;
}

async function startIdentityProvider(jwksPaths: string[], keys: JWK[]): Promise<IdentityProvider> {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    requests.push(path);
    if (request.method === 'GET' && jwksPaths.includes(path)) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ keys }));
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' });
    response.end('{"error":"not found"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    base: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface TokenOptions {
  issuer?: string;
  audience?: string;
  /** Seconds since the epoch. */
  expiresAt?: number;
  kid?: string;
}

async function signToken(key: SigningKey, issuer: string, options: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'relay:admin' })
    .setProtectedHeader({ alg: key.alg, kid: options.kid ?? key.kid, typ: 'JWT' })
    .setSubject('admin-user')
    .setIssuer(options.issuer ?? issuer)
    .setAudience(options.audience ?? audience)
    .setIssuedAt(now - 60)
    .setExpirationTime(options.expiresAt ?? now + 300)
    .sign(key.privateKey);
}

async function getStateWithBearer(harness: RelayHarness, token: string): Promise<Response> {
  return harness.request('/api/state', { admin: false, headers: { authorization: `Bearer ${token}` } });
}

async function assertAdminAuthRequired(response: Response): Promise<void> {
  assert.equal(response.status, 401);
  assert.deepEqual(await response.json(), { ok: false, error: 'admin auth required' });
}

describe('JWT admin auth with RELAY_OIDC_JWKS_URL', () => {
  let provider: IdentityProvider;
  let harness: RelayHarness;
  let rsaKey: SigningKey;
  let ecKey: SigningKey;
  let issuer: string;

  before(async () => {
    rsaKey = await makeKey('rsa-1', 'RS256');
    ecKey = await makeKey('ec-1', 'ES256');
    // Served only at a custom path: the default <issuer>/oidc/jwks answers 404, so a relay
    // that ignored RELAY_OIDC_JWKS_URL would reject every token.
    provider = await startIdentityProvider(['/keys/jwks.json'], [rsaKey.publicJwk, ecKey.publicJwk]);
    issuer = `${provider.base}/tenant`;
    harness = await startRelay({
      env: {
        RELAY_OIDC_ISSUER: issuer,
        RELAY_OIDC_AUDIENCE: audience,
        RELAY_OIDC_JWKS_URL: `${provider.base}/keys/jwks.json`,
      },
    });
  });

  after(async () => {
    await harness?.cleanup();
    await provider?.close();
  });

  test('a JWT with the right issuer and audience, unexpired and signed by a served key, is an admin (GET /api/state 200)', async () => {
    const response = await getStateWithBearer(harness, await signToken(rsaKey, issuer));
    assert.equal(response.status, 200);
    const body = (await response.json()) as { ok: unknown; channels: unknown };
    assert.equal(body.ok, true);
    assert.ok(Array.isArray(body.channels));
    assert.ok(provider.requests.includes('/keys/jwks.json'), 'the relay fetched the configured JWKS URL');
  });

  test('every key of the JWKS is accepted (an EC key next to the RSA key)', async () => {
    const response = await getStateWithBearer(harness, await signToken(ecKey, issuer));
    assert.equal(response.status, 200);
  });

  test('the bearer scheme is case-insensitive and a JWT admin may write (POST /api/channels)', async () => {
    const token = await signToken(rsaKey, issuer);
    const created = await harness.request('/api/channels', {
      admin: false,
      headers: { authorization: `bearer ${token}` },
      json: { channelId: 'jwt-made', secret: 'jwt-made-secret' },
    });
    assert.equal(created.status, 200);
    const state = await harness.request('/api/state');
    const body = (await state.json()) as { channels: Array<{ channelId: string }> };
    assert.ok(body.channels.some((channel) => channel.channelId === 'jwt-made'));
  });

  test('a JWT for another audience answers 401 admin auth required', async () => {
    await assertAdminAuthRequired(
      await getStateWithBearer(harness, await signToken(rsaKey, issuer, { audience: 'someone-else' })),
    );
  });

  test('a JWT from another issuer answers 401 admin auth required', async () => {
    await assertAdminAuthRequired(
      await getStateWithBearer(harness, await signToken(rsaKey, issuer, { issuer: `${provider.base}/other` })),
    );
  });

  test('an expired JWT answers 401 admin auth required', async () => {
    const expiresAt = Math.floor(Date.now() / 1000) - 120;
    await assertAdminAuthRequired(await getStateWithBearer(harness, await signToken(rsaKey, issuer, { expiresAt })));
  });

  test('a JWT without an expiry (no exp claim) answers 401: an admin credential must expire', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ scope: 'relay:admin' })
      .setProtectedHeader({ alg: rsaKey.alg, kid: rsaKey.kid })
      .setIssuer(issuer)
      .setAudience(audience)
      .setIssuedAt(now - 60)
      .sign(rsaKey.privateKey);
    await assertAdminAuthRequired(await getStateWithBearer(harness, token));
  });

  test('a JWT that is not valid yet (nbf in the future) answers 401', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ scope: 'relay:admin' })
      .setProtectedHeader({ alg: rsaKey.alg, kid: rsaKey.kid })
      .setIssuer(issuer)
      .setAudience(audience)
      .setNotBefore(now + 600)
      .setExpirationTime(now + 1200)
      .sign(rsaKey.privateKey);
    await assertAdminAuthRequired(await getStateWithBearer(harness, token));
  });

  test('a JWT signed by a key that is not in the JWKS answers 401 (unknown key id)', async () => {
    const rogue = await makeKey('rogue-1', 'RS256');
    await assertAdminAuthRequired(await getStateWithBearer(harness, await signToken(rogue, issuer)));
  });

  test('a JWT signed by another key under a served key id answers 401 (bad signature)', async () => {
    const impostor = await makeKey('rsa-1', 'RS256');
    await assertAdminAuthRequired(await getStateWithBearer(harness, await signToken(impostor, issuer)));
  });

  test('a JWT whose payload was altered after signing answers 401', async () => {
    const [header, , signature] = (await signToken(rsaKey, issuer)).split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({ iss: issuer, aud: audience, sub: 'mallory', exp: Math.floor(Date.now() / 1000) + 3600 }),
    ).toString('base64url');
    await assertAdminAuthRequired(await getStateWithBearer(harness, `${header}.${forgedPayload}.${signature}`));
  });

  test('an unsigned JWT (alg none) answers 401', async () => {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const unsigned = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ iss: issuer, aud: audience, exp: now + 300 })}.`;
    await assertAdminAuthRequired(await getStateWithBearer(harness, unsigned));
  });

  test('a garbage bearer token answers 401 admin auth required', async () => {
    for (const garbage of ['garbage', 'a.b.c', '....', 'eyJhbGciOiJSUzI1NiJ9.e30.AAAA', 'x'.repeat(4096)]) {
      await assertAdminAuthRequired(await getStateWithBearer(harness, garbage));
    }
  });

  test('a valid JWT sent without the Bearer scheme answers 401', async () => {
    const token = await signToken(rsaKey, issuer);
    await assertAdminAuthRequired(
      await harness.request('/api/state', { admin: false, headers: { authorization: `Basic ${token}` } }),
    );
    await assertAdminAuthRequired(
      await harness.request('/api/state', { admin: false, headers: { authorization: token } }),
    );
  });

  test('media upload (POST /api/media/upload) accepts a valid JWT', async () => {
    const token = await signToken(rsaKey, issuer);
    const bytes = Buffer.from('\x89PNG\r\n\x1a\nnot-really-a-png');
    const response = await fetch(`${harness.url}/api/media/upload?filename=photo.png`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'image/png' },
      body: bytes,
    });
    assert.equal(response.status, 200);
    const body = (await response.json()) as { ok: unknown; fileName: string; size: unknown; mimeType: unknown };
    assert.equal(body.ok, true);
    assert.equal(body.size, bytes.length);
    assert.equal(body.mimeType, 'image/png');
    assert.match(body.fileName, /^[0-9a-f-]{36}\.png$/);
    const download = await fetch(`${harness.url}/api/media/${body.fileName}`);
    assert.equal(download.status, 200);
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), bytes);
  });

  test('media upload rejects an expired JWT with 401', async () => {
    const token = await signToken(rsaKey, issuer, { expiresAt: Math.floor(Date.now() / 1000) - 120 });
    const response = await fetch(`${harness.url}/api/media/upload?filename=photo.png`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'image/png' },
      body: Buffer.from('png'),
    });
    assert.equal(response.status, 401);
    const body = (await response.json()) as { ok: unknown; error: unknown };
    assert.equal(body.ok, false);
    assert.equal(typeof body.error, 'string');
  });
});

test('without RELAY_OIDC_JWKS_URL the JWKS is fetched from <issuer>/oidc/jwks', async () => {
  const key = await makeKey('default-path', 'RS256');
  const provider = await startIdentityProvider(['/oidc/jwks'], [key.publicJwk]);
  const harness = await startRelay({
    env: { RELAY_OIDC_ISSUER: provider.base, RELAY_OIDC_AUDIENCE: audience },
  });
  try {
    const response = await getStateWithBearer(harness, await signToken(key, provider.base));
    assert.equal(response.status, 200);
    assert.deepEqual(provider.requests, ['/oidc/jwks']);
    await assertAdminAuthRequired(
      await getStateWithBearer(harness, await signToken(key, provider.base, { audience: 'another-app' })),
    );
  } finally {
    await harness.cleanup();
    await provider.close();
  }
});

test('with no OIDC configured a valid-looking JWT answers 401 admin auth required', async () => {
  const key = await makeKey('unconfigured', 'RS256');
  const provider = await startIdentityProvider(['/oidc/jwks'], [key.publicJwk]);
  const harness = await startRelay();
  try {
    await assertAdminAuthRequired(await getStateWithBearer(harness, await signToken(key, provider.base)));
    assert.deepEqual(provider.requests, [], 'nothing was fetched from the identity provider');
    // The admin token still works on the same relay.
    assert.equal((await harness.request('/api/state')).status, 200);
  } finally {
    await harness.cleanup();
    await provider.close();
  }
});

test('readRelayConfig with only one of issuer and audience throws a ConfigError naming both variables', () => {
  const cases: Array<Record<string, string>> = [
    { RELAY_OIDC_ISSUER: 'https://id.example.com' },
    { RELAY_OIDC_AUDIENCE: audience },
    { RELAY_OIDC_AUDIENCE: audience, RELAY_OIDC_JWKS_URL: 'https://id.example.com/jwks' },
  ];
  for (const env of cases) {
    assert.throws(
      () => readRelayConfig(env),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, `ConfigError for ${JSON.stringify(env)}`);
        assert.match(error.message, /RELAY_OIDC_ISSUER/);
        assert.match(error.message, /RELAY_OIDC_AUDIENCE/);
        return true;
      },
    );
  }
  const configured = readRelayConfig({ RELAY_OIDC_ISSUER: 'https://id.example.com/', RELAY_OIDC_AUDIENCE: audience });
  assert.deepEqual(configured.oidc, {
    issuer: 'https://id.example.com/',
    audience,
    jwksUrl: 'https://id.example.com/oidc/jwks',
  });
  assert.equal(readRelayConfig({}).oidc, undefined);
});

test('readRelayConfig rejects a JWKS URL that is not http(s)', () => {
  assert.throws(
    () =>
      readRelayConfig({
        RELAY_OIDC_ISSUER: 'https://id.example.com',
        RELAY_OIDC_AUDIENCE: audience,
        RELAY_OIDC_JWKS_URL: 'file:///etc/jwks.json',
      }),
    (error: unknown) => error instanceof ConfigError && /RELAY_OIDC_JWKS_URL/.test(error.message),
  );
});
