import WebSocket from 'ws';

/**
 * Forces a full garbage collection in a target started with `--inspect`, over the Chrome
 * DevTools protocol (HeapProfiler.collectGarbage). Without it an RSS reading includes
 * whatever garbage the last handshakes left, and whether a major GC happened to run
 * between two readings would swing the per-connection figure by several KB.
 */
export class InspectorGc {
  private nextId = 1;
  private readonly pending = new Map<number, () => void>();

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data: Buffer) => {
      const reply = JSON.parse(data.toString()) as { id?: unknown };
      if (typeof reply.id !== 'number') return;
      this.pending.get(reply.id)?.();
      this.pending.delete(reply.id);
    });
  }

  /** Connects to the inspector at `url` (the `ws://…` of "Debugger listening on"). */
  static connect(url: string): Promise<InspectorGc> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { perMessageDeflate: false });
      socket.once('open', () => resolve(new InspectorGc(socket)));
      socket.once('error', reject);
    });
  }

  /** Runs a full, memory-reducing collection and resolves once the target has finished it. */
  collect(timeoutMs = 10_000): Promise<void> {
    const id = this.nextId;
    this.nextId += 1;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('HeapProfiler.collectGarbage timed out')), timeoutMs);
      this.pending.set(id, () => {
        clearTimeout(timer);
        resolve();
      });
      this.socket.send(JSON.stringify({ id, method: 'HeapProfiler.collectGarbage' }));
    });
  }

  close(): void {
    this.socket.terminate();
  }
}
