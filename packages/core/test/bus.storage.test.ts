import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { type Bus, createLogger, MemoryBus, openBus, RedisBus } from '../src/index.js';

const logger = createLogger({ level: 'silent' });
const redisUrl = process.env.REDIS_URL;
const redisSkip = redisUrl ? false : 'REDIS_URL not set: Redis bus tests need a server';
/** Only a guard against a hang; a passing test never waits this long. */
const deliveryTimeoutMs = 5000;

const busKinds = {
  memory: async (): Promise<Bus> => new MemoryBus(),
  redis: async (): Promise<Bus> => RedisBus.connect(requireRedisUrl(), logger),
};

for (const [kind, openKind] of Object.entries(busKinds)) {
  describe(`${kind} bus`, { skip: kind === 'redis' ? redisSkip : false }, () => {
    test('a message reaches the subscribers of its topic only', async () => {
      const bus = await openKind();
      try {
        const [news, other] = [uniqueTopic('news'), uniqueTopic('other')];
        const first = new Inbox();
        const second = new Inbox();
        const elsewhere = new Inbox();
        await bus.subscribe(news, first.handler);
        await bus.subscribe(news, second.handler);
        await bus.subscribe(other, elsewhere.handler);
        await bus.publish(news, { channelId: 'home', change: 'saved' });
        // Published after, on the same connection: once it arrives, a misrouted copy would have too.
        await bus.publish(other, 'marker');
        assert.deepEqual(await first.waitFor(1), [{ channelId: 'home', change: 'saved' }]);
        assert.deepEqual(await second.waitFor(1), [{ channelId: 'home', change: 'saved' }]);
        assert.deepEqual(await elsewhere.waitFor(1), ['marker']);
      } finally {
        await bus.close();
      }
    });

    test('handlers get a copy the publisher can no longer change', async () => {
      const bus = await openKind();
      try {
        const topic = uniqueTopic('copy');
        const inbox = new Inbox();
        await bus.subscribe(topic, inbox.handler);
        const message = { users: ['u1'], nested: { label: 'Home' } };
        await bus.publish(topic, message);
        message.users.push('u2');
        message.nested.label = 'changed';
        assert.deepEqual(await inbox.waitFor(1), [{ users: ['u1'], nested: { label: 'Home' } }]);
        assert.notEqual(inbox.messages[0], message);
      } finally {
        await bus.close();
      }
    });

    test('undefined is delivered as null', async () => {
      const bus = await openKind();
      try {
        const topic = uniqueTopic('empty');
        const inbox = new Inbox();
        await bus.subscribe(topic, inbox.handler);
        await bus.publish(topic, undefined);
        assert.deepEqual(await inbox.waitFor(1), [null]);
      } finally {
        await bus.close();
      }
    });

    test('unsubscribe stops delivery to that handler only', async () => {
      const bus = await openKind();
      try {
        const [topic, marker] = [uniqueTopic('unsubscribe'), uniqueTopic('marker')];
        const leaving = new Inbox();
        const staying = new Inbox();
        const markers = new Inbox();
        const stopLeaving = await bus.subscribe(topic, leaving.handler);
        const stopStaying = await bus.subscribe(topic, staying.handler);
        await bus.subscribe(marker, markers.handler);

        await stopLeaving();
        await bus.publish(topic, 'first');
        assert.deepEqual(await staying.waitFor(1), ['first']);

        await stopStaying();
        await bus.publish(topic, 'second');
        await bus.publish(marker, 'done');
        await markers.waitFor(1);
        assert.deepEqual(leaving.messages, []);
        assert.deepEqual(staying.messages, ['first']);
      } finally {
        await bus.close();
      }
    });

    test('subscribing again after the last unsubscribe delivers again', async () => {
      const bus = await openKind();
      try {
        const topic = uniqueTopic('resubscribe');
        const stop = await bus.subscribe(topic, new Inbox().handler);
        await stop();
        const inbox = new Inbox();
        await bus.subscribe(topic, inbox.handler);
        await bus.publish(topic, 'back');
        assert.deepEqual(await inbox.waitFor(1), ['back']);
      } finally {
        await bus.close();
      }
    });
  });
}

describe('redis bus between nodes', { skip: redisSkip }, () => {
  test('two RedisBus instances see each other’s messages', async () => {
    const nodeA = await RedisBus.connect(requireRedisUrl(), logger);
    const nodeB = await RedisBus.connect(requireRedisUrl(), logger);
    try {
      const topic = uniqueTopic('nodes');
      const inboxA = new Inbox();
      const inboxB = new Inbox();
      await nodeA.subscribe(topic, inboxA.handler);
      await nodeB.subscribe(topic, inboxB.handler);
      await nodeA.publish(topic, { from: 'a' });
      assert.deepEqual(await inboxB.waitFor(1), [{ from: 'a' }]);
      await nodeB.publish(topic, { from: 'b' });
      assert.deepEqual(await inboxA.waitFor(2), [{ from: 'a' }, { from: 'b' }]);
      assert.deepEqual(await inboxB.waitFor(2), [{ from: 'a' }, { from: 'b' }]);
    } finally {
      await Promise.all([nodeA.close(), nodeB.close()]);
    }
  });

  test('a second subscriber does not return before the topic’s subscription is active', async () => {
    const listener = await RedisBus.connect(requireRedisUrl(), logger);
    const publisher = await RedisBus.connect(requireRedisUrl(), logger);
    try {
      const topic = uniqueTopic('pending');
      const first = new Inbox();
      const second = new Inbox();
      let firstActive = false;
      const firstSubscribed = listener.subscribe(topic, first.handler).then(() => {
        firstActive = true;
      });
      await listener.subscribe(topic, second.handler);
      assert.equal(firstActive, true, 'the second subscribe resolved before the SUBSCRIBE was acknowledged');
      await publisher.publish(topic, 'hello');
      assert.deepEqual(await second.waitFor(1), ['hello']);
      await firstSubscribed;
    } finally {
      await Promise.all([listener.close(), publisher.close()]);
    }
  });

  test('a payload that is not JSON is dropped with a warning, later messages still arrive', async () => {
    const lines: string[] = [];
    const capture = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    });
    const bus = await RedisBus.connect(requireRedisUrl(), pino({ level: 'warn' }, capture));
    const raw = new Redis(requireRedisUrl());
    try {
      const topic = uniqueTopic('raw');
      const inbox = new Inbox();
      await bus.subscribe(topic, inbox.handler);
      await raw.publish(topic, '{not json');
      await bus.publish(topic, { ok: true });
      assert.deepEqual(await inbox.waitFor(1), [{ ok: true }]);
      const warning = lines
        .map((line) => JSON.parse(line) as { msg?: string; topic?: string })
        .find((entry) => entry.msg);
      assert.equal(warning?.msg, 'dropped a bus message that is not JSON');
      assert.equal(warning?.topic, topic);
    } finally {
      raw.disconnect();
      await bus.close();
    }
  });
});

describe('openBus', () => {
  test('picks the in-process bus without a URL', async () => {
    const bus = await openBus(undefined, logger);
    try {
      assert.equal(bus.kind, 'memory');
      assert.ok(bus instanceof MemoryBus);
    } finally {
      await bus.close();
    }
  });

  test('picks Redis with a URL', { skip: redisSkip }, async () => {
    const bus = await openBus(requireRedisUrl(), logger);
    try {
      assert.equal(bus.kind, 'redis');
      assert.ok(bus instanceof RedisBus);
    } finally {
      await bus.close();
    }
  });

  test('an unreachable Redis fails with a message naming it, without the password', async () => {
    await assert.rejects(openBus('redis://:hunter2-secret@127.0.0.1:1', logger), (error: Error) => {
      assert.match(error.message, /^cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1: /);
      assert.match(error.message, /ECONNREFUSED/);
      assert.ok(!error.message.includes('hunter2-secret'), error.message);
      return true;
    });
  });
});

/** Collects what a handler receives and lets a test wait for a number of messages. */
class Inbox {
  readonly messages: unknown[] = [];
  private waiters: (() => void)[] = [];

  readonly handler = (message: unknown): void => {
    this.messages.push(message);
    for (const wake of this.waiters.splice(0)) wake();
  };

  async waitFor(count: number): Promise<unknown[]> {
    const deadline = Date.now() + deliveryTimeoutMs;
    while (this.messages.length < count) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) assert.fail(`expected ${count} message(s), got ${JSON.stringify(this.messages)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.messages;
  }
}

function uniqueTopic(name: string): string {
  return `hearth-test.${name}.${randomBytes(6).toString('hex')}`;
}

function requireRedisUrl(): string {
  if (!redisUrl) throw new Error('REDIS_URL not set');
  return redisUrl;
}
