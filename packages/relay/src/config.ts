import { type CommonConfig, type Environment, EnvReader, readCommonConfig } from '@hearth/core';

export interface OidcConfig {
  issuer: string;
  audience: string;
  /** Defaults to `<issuer>/oidc/jwks`, where the old relay's identity provider serves it. */
  jwksUrl: string;
}

export interface RelayConfig extends CommonConfig {
  port: number;
  host: string;
  /** Unset: a token is generated on first start, stored, and printed once. */
  adminToken: string | undefined;
  publicBaseUrl: string | undefined;
  pluginBackendUrl: string | undefined;
  oidc: OidcConfig | undefined;
  /** Trust X-Forwarded-For / X-Forwarded-Proto from a reverse proxy. */
  trustProxy: boolean;
  helloTimeoutMs: number;
  heartbeatIntervalMs: number;
  /** Messages one client may send per minute; 0 turns the limit off. */
  clientMessagesPerMinute: number;
  /** Open WebSocket connections per remote address; 0 turns the limit off. */
  maxConnectionsPerIp: number;
  maxPayloadBytes: number;
  /** A peer whose unsent data passes this many bytes is closed instead of buffered. */
  sendBufferLimitBytes: number;
  /** Largest JSON body the administration endpoints accept. */
  adminBodyLimitBytes: number;
}

/** Reads and validates every relay setting; throws ConfigError naming each bad one. */
export function readRelayConfig(env: Environment): Readonly<RelayConfig> {
  const reader = new EnvReader(env);
  const common = readCommonConfig(env, reader);
  const oidcIssuer = reader.url('RELAY_OIDC_ISSUER', ['https:', 'http:']);
  const oidcAudience = reader.string('RELAY_OIDC_AUDIENCE');
  const oidcJwksUrl = reader.url('RELAY_OIDC_JWKS_URL', ['https:', 'http:']);
  const config: RelayConfig = {
    ...common,
    port: reader.integer('RELAY_PORT', 19080, { min: 0, max: 65535 }),
    host: reader.string('RELAY_HOST', '0.0.0.0'),
    adminToken: reader.string('RELAY_ADMIN_TOKEN'),
    publicBaseUrl: reader.url('RELAY_PUBLIC_BASE_URL', ['https:', 'http:'])?.replace(/\/+$/, ''),
    pluginBackendUrl: reader.url('RELAY_PLUGIN_BACKEND_URL', ['wss:', 'ws:']),
    oidc:
      oidcIssuer && oidcAudience
        ? {
            issuer: oidcIssuer,
            audience: oidcAudience,
            jwksUrl: oidcJwksUrl ?? `${oidcIssuer.replace(/\/+$/, '')}/oidc/jwks`,
          }
        : undefined,
    trustProxy: reader.boolean('RELAY_TRUST_PROXY', false),
    helloTimeoutMs: reader.integer('RELAY_HELLO_TIMEOUT_MS', 5000, { min: 100, max: 600_000 }),
    heartbeatIntervalMs: reader.integer('RELAY_HEARTBEAT_INTERVAL_MS', 30_000, { min: 100, max: 3_600_000 }),
    clientMessagesPerMinute: reader.integer('RELAY_CLIENT_MESSAGES_PER_MINUTE', 30, { min: 0 }),
    maxConnectionsPerIp: reader.integer('RELAY_MAX_CONNECTIONS_PER_IP', 50, { min: 0 }),
    maxPayloadBytes: reader.integer('RELAY_MAX_PAYLOAD_BYTES', 10 * 1024 * 1024, { min: 1024 }),
    sendBufferLimitBytes: reader.integer('RELAY_SEND_BUFFER_LIMIT_BYTES', 16 * 1024 * 1024, { min: 1024 }),
    adminBodyLimitBytes: reader.integer('RELAY_ADMIN_BODY_LIMIT_BYTES', 1024 * 1024, { min: 1024 }),
  };
  if (Boolean(oidcIssuer) !== Boolean(oidcAudience)) {
    reader.report('RELAY_OIDC_ISSUER and RELAY_OIDC_AUDIENCE must be set together (JWT admin auth needs both)');
  }
  reader.finish();
  return Object.freeze(config);
}
