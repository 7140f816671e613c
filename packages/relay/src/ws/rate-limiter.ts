/**
 * At most `limit` messages in any one-minute window, counted in fixed windows: two
 * numbers per connection, no timers, and a burst can never exceed twice the limit.
 */
export class MessageRateLimiter {
  private windowStart = Date.now();
  private count = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs = 60_000,
  ) {}

  allow(now = Date.now()): boolean {
    if (now - this.windowStart >= this.windowMs) {
      this.windowStart = now;
      this.count = 0;
    }
    this.count += 1;
    return this.count <= this.limit;
  }
}
