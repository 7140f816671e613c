import type { Logger } from '../logging/logger.js';
import type { Bus } from './bus.js';
import { MemoryBus } from './memory-bus.js';
import { RedisBus } from './redis-bus.js';

/** Redis when a URL is configured, otherwise the in-process bus. */
export async function openBus(redisUrl: string | undefined, logger: Logger): Promise<Bus> {
  return redisUrl ? RedisBus.connect(redisUrl, logger) : new MemoryBus();
}
