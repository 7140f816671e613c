import type { WebSocket } from 'ws';
import { CloseCode, sendableCloseReason } from './close-codes.js';

/**
 * One open WebSocket with what the gateway tracks for it: liveness for the heartbeat and
 * a bound on unsent data, so one slow reader cannot make the relay buffer without limit.
 */
export class Peer {
  /** Set by any pong or message; cleared by each heartbeat ping. */
  alive = true;

  constructor(
    readonly socket: WebSocket,
    readonly remoteAddress: string,
    private readonly sendBufferLimitBytes: number,
  ) {
    socket.on('pong', () => {
      this.alive = true;
    });
  }

  get open(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  send(text: string): void {
    if (!this.open) return;
    if (this.socket.bufferedAmount > this.sendBufferLimitBytes) {
      this.close(CloseCode.tryAgainLater, 'send buffer full: reading too slowly');
      return;
    }
    this.socket.send(text);
  }

  close(code: number, reason: string): void {
    const state = this.socket.readyState;
    if (state === this.socket.CLOSING || state === this.socket.CLOSED) return;
    this.socket.close(code, sendableCloseReason(reason, ''));
    // A peer that does not read will not read our close frame either; cut it off after
    // a grace period instead of holding its buffer until ws's 30-second close timeout.
    setTimeout(() => this.socket.terminate(), 2000).unref();
  }
}
