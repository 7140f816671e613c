import type { Bus, BusHandler } from './bus.js';

/** The embedded default: one process, so publishing is calling the local handlers. */
export class MemoryBus implements Bus {
  readonly kind = 'memory';
  private readonly handlers = new Map<string, Set<BusHandler>>();

  async publish(topic: string, message: unknown): Promise<void> {
    // A copy through JSON keeps the semantics of the Redis bus: handlers get a value,
    // never a reference the publisher may still mutate.
    const copy = JSON.parse(JSON.stringify(message ?? null)) as unknown;
    for (const handler of this.handlers.get(topic) ?? []) handler(copy);
  }

  async subscribe(topic: string, handler: BusHandler): Promise<() => Promise<void>> {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
    }
    set.add(handler);
    return async () => {
      set.delete(handler);
    };
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}
