/** Close codes the relay sends, with the reasons the existing clients already expect. */
export const CloseCode = {
  normal: 1000,
  goingAway: 1001,
  unsupportedData: 1003,
  policyViolation: 1008,
  serviceRestart: 1012,
  tryAgainLater: 1013,
} as const;

/**
 * Codes a peer may put in a close frame (RFC 6455 §7.4): 1000–1014 less the three that
 * must never be sent, and the application range 3000–4999. A backend asking for any other
 * code gets 1008 instead of crashing the relay.
 */
export function sendableCloseCode(code: unknown, fallback: number): number {
  if (code === undefined || code === null) return fallback;
  if (typeof code !== 'number' || !Number.isInteger(code)) return CloseCode.policyViolation;
  const protocolCode = code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006;
  return protocolCode || (code >= 3000 && code <= 4999) ? code : CloseCode.policyViolation;
}

/** A close reason may hold at most 123 bytes of UTF-8; cut longer ones on a character boundary. */
export function sendableCloseReason(reason: unknown, fallback: string): string {
  const text = typeof reason === 'string' && reason.length > 0 ? reason : fallback;
  if (Buffer.byteLength(text) <= 123) return text;
  let cut = '';
  for (const character of text) {
    if (Buffer.byteLength(cut + character) > 123) break;
    cut += character;
  }
  return cut;
}
