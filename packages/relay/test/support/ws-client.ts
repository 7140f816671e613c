import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { within } from './within.js';

export interface Closed {
  code: number;
  reason: string;
}

/**
 * A WebSocket peer for tests: every received frame is queued as parsed JSON, `next()`
 * waits for the next one (optionally the next matching one), and `closed` resolves with
 * the code and reason the relay closed with.
 */
export class TestSocket {
  readonly closed: Promise<Closed>;
  readonly opened: Promise<void>;
  private readonly queue: unknown[] = [];
  private readonly waiters: Array<{ match: (frame: unknown) => boolean; resolve: (frame: unknown) => void }> = [];

  constructor(
    readonly url: string,
    readonly socket = new WebSocket(url),
  ) {
    this.opened = new Promise((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    this.closed = new Promise((resolve) => {
      socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    socket.on('error', () => undefined);
    socket.on('message', (data) => {
      let frame: unknown;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        frame = { nonJson: data.toString() };
      }
      const index = this.waiters.findIndex((waiter) => waiter.match(frame));
      if (index >= 0) {
        const [waiter] = this.waiters.splice(index, 1);
        waiter?.resolve(frame);
      } else {
        this.queue.push(frame);
      }
    });
  }

  /** The next frame (matching `type` when given), failing after `timeoutMs`. */
  next<T = Record<string, unknown>>(type?: string, timeoutMs = 3000): Promise<T> {
    const match = (frame: unknown) => type === undefined || (frame as { type?: unknown })?.type === type;
    const index = this.queue.findIndex(match);
    if (index >= 0) return Promise.resolve(this.queue.splice(index, 1)[0] as T);
    return new Promise<T>((resolve, reject) => {
      const waiter = { match, resolve: (frame: unknown) => resolve(frame as T) };
      this.waiters.push(waiter);
      setTimeout(() => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) {
          this.waiters.splice(at, 1);
          reject(new Error(`no ${type ?? 'frame'} within ${timeoutMs} ms on ${this.url}`));
        }
      }, timeoutMs).unref();
    });
  }

  /** Frames received and not yet taken by next(). */
  pending(): unknown[] {
    return [...this.queue];
  }

  send(frame: unknown): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  close(code?: number, reason?: string): void {
    this.socket.close(code, reason);
  }
}

/** Connects a backend to `channelId` and waits for the ack. */
export async function connectBackend(
  wsUrl: string,
  channelId: string,
  secret: string,
  instanceId = 'test-instance',
): Promise<TestSocket> {
  const backend = new TestSocket(`${wsUrl}/backend`);
  await backend.opened;
  backend.send({ type: 'relay.backend.hello', channelId, secret, instanceId });
  const ack = await backend.next('relay.backend.ack');
  if (ack.channelId !== channelId) throw new Error(`ack for ${String(ack.channelId)}, expected ${channelId}`);
  return backend;
}

/** Opens a client socket with the given query parameters. */
export function connectClient(wsUrl: string, query: Record<string, string>): TestSocket {
  return new TestSocket(`${wsUrl}/client?${new URLSearchParams(query).toString()}`);
}

/** Asserts the relay closed `socket` with exactly `code` and `reason`, failing instead of hanging after `ms`. */
export async function assertClosed(socket: TestSocket, code: number, reason: string, ms = 3000): Promise<void> {
  assert.deepEqual(await within(socket.closed, `close of ${socket.url}`, ms), { code, reason });
}

/**
 * Closes the open ones of `sockets` and waits until each has closed, so none outlives its
 * test. Sockets already closed, or never opened, are left as they are: close() on one still
 * connecting would reject its `opened`, which nobody may be awaiting. `undefined` stands for
 * a socket a test did not get to open.
 */
export async function closeSockets(sockets: Iterable<TestSocket | undefined>, ms = 3000): Promise<void> {
  const closing = [...sockets].filter(
    (socket): socket is TestSocket => socket !== undefined && socket.socket.readyState === socket.socket.OPEN,
  );
  for (const socket of closing) socket.close();
  await Promise.all(closing.map((socket) => within(socket.closed, `close of ${socket.url}`, ms)));
}
