import { randomBytes, timingSafeEqual } from 'node:crypto';

/** 32 lowercase hexadecimal characters, the seed's form for generated tokens and secrets. */
export function generateToken(): string {
  return randomBytes(16).toString('hex');
}

/**
 * Compares a presented credential with a stored one in time independent of where they
 * differ, so response timing cannot be used to guess a secret byte by byte.
 */
export function credentialsEqual(presented: string, stored: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(stored);
  if (a.length !== b.length) {
    // Still spend a comparison so a wrong length is not measurably faster.
    timingSafeEqual(b, b);
    return false;
  }
  return timingSafeEqual(a, b);
}
