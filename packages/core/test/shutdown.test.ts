import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger, installShutdown, type Stoppable } from '../src/index.js';

const logger = createLogger({ level: 'silent' });
/** Only a guard against a hang; a passing test never waits this long. */
const guardMs = 5000;

describe('installShutdown', () => {
  test('stops the services one after another, in order, then exits 0', async () => {
    const events: string[] = [];
    const services = ['http', 'sockets', 'storage'].map((name) => recordingService(name, events));
    const shutdown = installShutdown(services, { logger, signals: [], exit: (code) => events.push(`exit ${code}`) });
    await shutdown();
    assert.deepEqual(events, [
      'http stopping',
      'http stopped',
      'sockets stopping',
      'sockets stopped',
      'storage stopping',
      'storage stopped',
      'exit 0',
    ]);
  });

  test('a service that throws makes the exit code 1 and the rest still stop', async () => {
    const events: string[] = [];
    const services: Stoppable[] = [
      recordingService('http', events),
      {
        name: 'sockets',
        stop: async () => {
          events.push('sockets failed');
          throw new Error('socket close failed');
        },
      },
      recordingService('storage', events),
    ];
    const shutdown = installShutdown(services, { logger, signals: [], exit: (code) => events.push(`exit ${code}`) });
    await shutdown();
    assert.deepEqual(events, [
      'http stopping',
      'http stopped',
      'sockets failed',
      'storage stopping',
      'storage stopped',
      'exit 1',
    ]);
  });

  test('triggering twice runs the sequence once', async () => {
    const events: string[] = [];
    const shutdown = installShutdown([recordingService('http', events)], {
      logger,
      signals: [],
      exit: (code) => events.push(`exit ${code}`),
    });
    const first = shutdown();
    const second = shutdown();
    assert.equal(first, second);
    await Promise.all([first, second]);
    await shutdown();
    assert.deepEqual(events, ['http stopping', 'http stopped', 'exit 0']);
  });

  test('the hard-stop timer exits 1 when a service hangs', async () => {
    const exits: number[] = [];
    let exited: () => void = () => undefined;
    const exitCalled = new Promise<void>((resolve) => {
      exited = resolve;
    });
    const stopped: string[] = [];
    const services: Stoppable[] = [
      { name: 'stuck', stop: () => new Promise<void>(() => undefined) },
      { name: 'after', stop: async () => void stopped.push('after') },
    ];
    const shutdown = installShutdown(services, {
      logger,
      signals: [],
      hardStopMs: 50,
      exit: (code) => {
        exits.push(code);
        exited();
      },
    });
    void shutdown();
    // The hard-stop timer is unref'd, so the guard's timer also keeps the event loop alive meanwhile.
    await withGuard(exitCalled, 'exit was never called');
    assert.deepEqual(exits, [1]);
    assert.deepEqual(stopped, []);
  });

  test('a shutdown that finishes in time is not followed by the hard stop', async () => {
    const exits: number[] = [];
    const shutdown = installShutdown([recordingService('http', [])], {
      logger,
      signals: [],
      hardStopMs: 20,
      exit: (code) => exits.push(code),
    });
    await shutdown();
    await sleep(80);
    assert.deepEqual(exits, [0]);
  });

  test('a listed signal starts the sequence', async () => {
    const events: string[] = [];
    let exited: () => void = () => undefined;
    const exitCalled = new Promise<void>((resolve) => {
      exited = resolve;
    });
    installShutdown([recordingService('http', events)], {
      logger,
      signals: ['SIGUSR2'],
      exit: (code) => {
        events.push(`exit ${code}`);
        exited();
      },
    });
    const signalSeen = once(process, 'SIGUSR2');
    process.kill(process.pid, 'SIGUSR2');
    await withGuard(
      Promise.all([signalSeen, exitCalled]).then(() => undefined),
      'the signal did not start the shutdown',
    );
    assert.deepEqual(events, ['http stopping', 'http stopped', 'exit 0']);
  });
});

async function withGuard(promise: Promise<void>, failure: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(failure)), guardMs);
  });
  try {
    await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** A service whose stop takes a turn of the event loop, so overlapping stops would show. */
function recordingService(name: string, events: string[]): Stoppable {
  return {
    name,
    async stop() {
      events.push(`${name} stopping`);
      await new Promise((resolve) => setImmediate(resolve));
      events.push(`${name} stopped`);
    },
  };
}
