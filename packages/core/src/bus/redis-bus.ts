import { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.js';
import { redactUrl } from '../logging/redact-url.js';
import type { Bus, BusHandler } from './bus.js';

/**
 * Redis pub/sub between nodes. A subscribed Redis connection cannot publish, so the bus
 * holds two connections.
 */
export class RedisBus implements Bus {
  readonly kind = 'redis';
  private readonly handlers = new Map<string, Set<BusHandler>>();
  /** The SUBSCRIBE in flight or done per topic, so every caller waits until it is active. */
  private readonly subscriptions = new Map<string, Promise<unknown>>();

  private constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    private readonly logger: Logger,
  ) {
    subscriber.on('message', (topic: string, payload: string) => this.deliver(topic, payload));
  }

  static async connect(url: string, logger: Logger): Promise<RedisBus> {
    const options = { lazyConnect: true, maxRetriesPerRequest: 3 };
    const publisher = new Redis(url, options);
    const subscriber = new Redis(url, options);
    // connect() rejects with a bare "Connection is closed."; the reason (refused, DNS,
    // auth) arrives as an 'error' event, so keep it for the start-up message.
    let lastError: Error | undefined;
    for (const connection of [publisher, subscriber]) {
      connection.on('error', (error) => {
        lastError = error;
        logger.warn({ err: error }, 'redis bus connection error');
      });
    }
    try {
      await Promise.all([publisher.connect(), subscriber.connect()]);
    } catch (error) {
      publisher.disconnect();
      subscriber.disconnect();
      const reason = lastError ?? (error as Error);
      throw new Error(`cannot reach Redis at ${redactUrl(url)}: ${reason.message}`, { cause: reason });
    }
    return new RedisBus(publisher, subscriber, logger);
  }

  async publish(topic: string, message: unknown): Promise<void> {
    await this.publisher.publish(topic, JSON.stringify(message ?? null));
  }

  async subscribe(topic: string, handler: BusHandler): Promise<() => Promise<void>> {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
      this.subscriptions.set(topic, this.subscriber.subscribe(topic));
    }
    set.add(handler);
    await this.subscriptions.get(topic);
    return async () => {
      set.delete(handler);
      if (set.size === 0 && this.handlers.get(topic) === set) {
        this.handlers.delete(topic);
        this.subscriptions.delete(topic);
        await this.subscriber.unsubscribe(topic);
      }
    };
  }

  async close(): Promise<void> {
    this.handlers.clear();
    this.subscriptions.clear();
    await Promise.allSettled([this.publisher.quit(), this.subscriber.quit()]);
  }

  private deliver(topic: string, payload: string): void {
    let message: unknown;
    try {
      message = JSON.parse(payload);
    } catch {
      this.logger.warn({ topic }, 'dropped a bus message that is not JSON');
      return;
    }
    for (const handler of this.handlers.get(topic) ?? []) handler(message);
  }
}
