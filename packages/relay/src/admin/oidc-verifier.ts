import type { Logger } from '@hearth/core';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { OidcConfig } from '../config.js';

/**
 * Checks JWTs from the configured identity provider: signature against its JWKS (fetched
 * and cached by jose, refetched when an unknown key id appears), issuer, audience and
 * expiry (required). Any failure is a plain "no", logged at debug level with the reason.
 */
export class OidcVerifier {
  private readonly keys: ReturnType<typeof createRemoteJWKSet>;

  constructor(
    private readonly config: OidcConfig,
    private readonly logger: Logger,
  ) {
    this.keys = createRemoteJWKSet(new URL(config.jwksUrl), { timeoutDuration: 5000 });
  }

  async verify(token: string): Promise<boolean> {
    try {
      // jose checks exp only when present; a token without one would be an admin credential
      // that never expires, and OIDC ID and access tokens always carry it.
      await jwtVerify(token, this.keys, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        requiredClaims: ['exp'],
      });
      return true;
    } catch (error) {
      this.logger.debug({ reason: (error as Error).message }, 'rejected an admin JWT');
      return false;
    }
  }
}
