import type { FastifyRequest } from 'fastify';
import type { ChannelDirectory } from '../channels/channel-directory.js';
import { credentialsEqual } from '../channels/credentials.js';
import { UnauthorizedError } from '../errors.js';
import type { OidcVerifier } from './oidc-verifier.js';

/**
 * Decides who may call the administration and media endpoints. Admins present the admin
 * token (header, `x-api-key` of the quick-start variant, or `?adminToken=`) or an OIDC
 * JWT; media uploaders may also present a channel secret or a channel user's token.
 */
export class AdminAuthenticator {
  constructor(
    private readonly adminToken: string,
    private readonly oidc: OidcVerifier | undefined,
    private readonly directory: ChannelDirectory,
  ) {}

  async requireAdmin(request: FastifyRequest): Promise<void> {
    if (!(await this.isAdmin(request))) throw new UnauthorizedError('admin auth required');
  }

  async requireMediaUploader(request: FastifyRequest): Promise<void> {
    if (await this.isAdmin(request)) return;
    const channelSecret = headerValue(request, 'x-channel-secret');
    if (channelSecret && this.directory.hasChannelSecret(channelSecret)) return;
    const userToken = bearerToken(request) ?? queryValue(request, 'token');
    if (userToken && this.directory.hasUserToken(userToken)) return;
    throw new UnauthorizedError('media upload requires an admin token, a channel secret or a channel user token');
  }

  private async isAdmin(request: FastifyRequest): Promise<boolean> {
    const presented =
      headerValue(request, 'x-relay-admin-token') ??
      headerValue(request, 'x-api-key') ??
      queryValue(request, 'adminToken');
    if (presented !== undefined && credentialsEqual(presented, this.adminToken)) return true;
    const bearer = bearerToken(request);
    return bearer !== undefined && this.oidc !== undefined && (await this.oidc.verify(bearer));
  }
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const single = Array.isArray(value) ? value[0] : value;
  return single ? single : undefined;
}

function queryValue(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function bearerToken(request: FastifyRequest): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(headerValue(request, 'authorization') ?? '');
  return match?.[1];
}
