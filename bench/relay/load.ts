import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { ownCpuMicros, type ProcessSample } from './process-stats.js';

/**
 * The load generator: one backend and N clients in this process, speaking the relay
 * protocol to either target with identical code, so any difference in the figures is the
 * target's. Frames are prepared ahead where the scenario allows, so the generator spends
 * its CPU on the sockets rather than on building JSON.
 */

export interface Endpoint {
  wsUrl: string;
  channelId: string;
  secret: string;
}

/** Takes a sample of the target process (CPU, memory) at the edges of the measured window. */
export type Sampler = () => ProcessSample;

/** One measured window of a message scenario. */
export interface MessageRun {
  /** Messages the target relayed in the window (a round trip counts as two). */
  messages: number;
  /** Messages per second as the scenario defines them (deliveries, or round trips for echo). */
  ratePerSecond: number;
  seconds: number;
  targetCpuMicros: number;
  /** CPU this process used in the window, as a share of one core: near 1 means the generator was the bottleneck. */
  generatorCoreShare: number;
  /** Latencies in ms of the messages of the window; empty where the scenario does not time them. */
  latenciesMs: number[];
  /** Messages sent but never received before the drain timeout. */
  lost: number;
}

export interface IdleRun {
  connections: number;
  rssBeforeBytes: number;
  rssAfterBytes: number;
  /** CPU the target spent accepting the connections and announcing them to the backend. */
  targetCpuMicros: number;
  connectSeconds: number;
}

export interface WindowOptions {
  warmupMs: number;
  measureMs: number;
}

// A chat reply of a realistic size (about 200 bytes on the wire), the same in every scenario.
const content = 'The quick brown fox jumps over the lazy dog; relayed verbatim so both targets move the same bytes.';
const serverEvent = `{"type":"message.send","data":{"messageId":"msg-1","chatId":"bench","content":"${content}","contentType":"text","seq":0}}`;

/** (a) Backend → clients round-robin as fast as the target delivers, with at most `window` messages in flight. */
export async function runFanOut(
  endpoint: Endpoint,
  options: WindowOptions & { clients: number; window: number },
  sample: Sampler,
): Promise<MessageRun> {
  const session = await Session.open(endpoint, options.clients);
  try {
    const frames = session.connectionIds.map((id) =>
      Buffer.from(`{"type":"relay.server.event","connectionId":"${id}","event":${serverEvent}}`),
    );
    let inFlight = 0;
    let delivered = 0;
    let next = 0;
    let sending = true;
    const pump = () => {
      while (sending && inFlight < options.window) {
        session.backend.send(frames[next] ?? '', { binary: false });
        next = (next + 1) % frames.length;
        inFlight += 1;
      }
    };
    for (const client of session.clients) {
      client.on('message', () => {
        delivered += 1;
        inFlight -= 1;
        pump();
      });
    }
    pump();
    const window = await measureWindow(options, sample, () => delivered);
    sending = false;
    const lost = (await until(() => inFlight === 0, 5000)) ? 0 : inFlight;
    return { ...window, messages: window.count, ratePerSecond: window.count / window.seconds, latenciesMs: [], lost };
  } finally {
    session.close();
  }
}

/** (b) Backend → clients at a fixed rate; each event carries its send time, each client times its delivery. */
export async function runFixedRate(
  endpoint: Endpoint,
  options: WindowOptions & { clients: number; ratePerSecond: number },
  sample: Sampler,
): Promise<MessageRun> {
  const session = await Session.open(endpoint, options.clients);
  try {
    const prefixes = session.connectionIds.map(
      (id) =>
        `{"type":"relay.server.event","connectionId":"${id}","event":{"type":"message.send","data":{"messageId":"msg-1","chatId":"bench","content":"${content}","contentType":"text","sentAt":`,
    );
    const latencies: number[] = [];
    let windowStart = Number.POSITIVE_INFINITY;
    let windowEnd = Number.POSITIVE_INFINITY;
    let sent = 0;
    let received = 0;
    for (const client of session.clients) {
      client.on('message', (data: Buffer) => {
        const now = performance.now();
        received += 1;
        const sentAt = sentAtOf(data);
        if (sentAt >= windowStart && sentAt < windowEnd) latencies.push(now - sentAt);
      });
    }
    // A 1 ms tick sends whatever the schedule says is due, so a late tick catches up instead of lowering the rate.
    const startedAt = performance.now();
    const stopAt = startedAt + options.warmupMs + options.measureMs;
    const ticker = setInterval(() => {
      const now = performance.now();
      const due = Math.floor(((Math.min(now, stopAt) - startedAt) * options.ratePerSecond) / 1000);
      while (sent < due) {
        const at = performance.now();
        session.backend.send(`${prefixes[sent % prefixes.length] ?? ''}${at}}}}`);
        sent += 1;
      }
      if (now >= stopAt) clearInterval(ticker);
    }, 1);
    const window = await measureWindow(
      options,
      sample,
      () => latencies.length,
      (start, end) => {
        windowStart = start;
        windowEnd = end;
      },
    );
    await until(() => performance.now() >= stopAt, options.measureMs + 5000);
    clearInterval(ticker);
    await until(() => received >= sent, 5000);
    return {
      ...window,
      messages: latencies.length,
      ratePerSecond: latencies.length / window.seconds,
      latenciesMs: latencies,
      lost: sent - received,
    };
  } finally {
    session.close();
  }
}

/** (c) Clients → backend → same client; each client keeps `depth` messages in flight and times each round trip. */
export async function runEcho(
  endpoint: Endpoint,
  options: WindowOptions & { clients: number; depth: number },
  sample: Sampler,
): Promise<MessageRun> {
  const session = await Session.open(endpoint, options.clients);
  try {
    // The backend's side of the echo: what an agent does with every client event, parse it and answer.
    session.onClientEvent = (frame) => {
      session.backend.send(
        `{"type":"relay.server.event","connectionId":"${String(frame.connectionId)}","event":${JSON.stringify(frame.event)}}`,
      );
    };
    const latencies: number[] = [];
    let measuring = false;
    let sending = true;
    let inFlight = 0;
    let completed = 0;
    const send = (client: WebSocket) => {
      client.send(
        `{"type":"message.receive","data":{"messageId":"msg-1","messageType":"text","content":"${content}","timestamp":0,"sentAt":${performance.now()}}}`,
      );
      inFlight += 1;
    };
    for (const client of session.clients) {
      client.on('message', (data: Buffer) => {
        const now = performance.now();
        inFlight -= 1;
        completed += 1;
        if (measuring) latencies.push(now - sentAtOf(data));
        if (sending) send(client);
      });
    }
    for (let round = 0; round < options.depth; round += 1) for (const client of session.clients) send(client);
    const window = await measureWindow(
      options,
      sample,
      () => completed,
      () => {
        measuring = true;
      },
    );
    measuring = false;
    sending = false;
    const lost = (await until(() => inFlight === 0, 5000)) ? 0 : inFlight;
    return {
      ...window,
      messages: window.count * 2,
      ratePerSecond: window.count / window.seconds,
      latenciesMs: latencies,
      lost,
    };
  } finally {
    session.close();
  }
}

/**
 * (d) N clients that connect and then say nothing: the target's resident memory before and
 * after, each time after a full GC (`collectGarbage`), so what is counted is what the
 * connections keep, not the garbage their handshakes left.
 */
export async function runIdle(
  endpoint: Endpoint,
  options: { clients: number; warmupClients: number; settleMs: number; collectGarbage: () => Promise<void> },
  sample: Sampler,
): Promise<IdleRun> {
  // The warm-up clients stay connected: what the first connections cost once (compiled code,
  // pools sized on first use) is then in the baseline rather than charged per connection.
  const session = await Session.open(endpoint, options.warmupClients);
  try {
    await sleep(options.settleMs);
    const before = await steadyRss(sample, options.collectGarbage);
    const cpuBefore = sample().cpuMicros;
    const connectStart = performance.now();
    await session.addClients(options.clients);
    const connectSeconds = (performance.now() - connectStart) / 1000;
    await sleep(options.settleMs);
    const cpuAfter = sample().cpuMicros;
    const after = await steadyRss(sample, options.collectGarbage);
    return {
      connections: options.clients,
      rssBeforeBytes: before,
      rssAfterBytes: after,
      targetCpuMicros: cpuAfter - cpuBefore,
      connectSeconds,
    };
  } finally {
    session.close();
  }
}

/** The median of a few RSS readings, each just after a full GC, so no single reading decides the figure. */
async function steadyRss(sample: Sampler, collectGarbage: () => Promise<void>): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 5; i += 1) {
    await collectGarbage();
    await sleep(100);
    readings.push(sample().rssBytes);
  }
  readings.sort((a, b) => a - b);
  return readings[2] ?? 0;
}

/**
 * Lets the load run through the warm-up (JIT, socket buffers), then samples the target and
 * the counter at both edges of the measured window.
 */
async function measureWindow(
  options: WindowOptions,
  sample: Sampler,
  counter: () => number,
  onStart?: (start: number, end: number) => void,
): Promise<{ count: number; seconds: number; targetCpuMicros: number; generatorCoreShare: number }> {
  await sleep(options.warmupMs);
  const start = sample();
  const startCount = counter();
  const startOwn = ownCpuMicros();
  onStart?.(start.at, start.at + options.measureMs);
  await sleep(options.measureMs);
  const end = sample();
  const count = counter() - startCount;
  const seconds = (end.at - start.at) / 1000;
  return {
    count,
    seconds,
    targetCpuMicros: end.cpuMicros - start.cpuMicros,
    generatorCoreShare: (ownCpuMicros() - startOwn) / 1e6 / seconds,
  };
}

/** The `sentAt` a bench event carries; both scenarios that time messages put it last in `data`. */
function sentAtOf(data: Buffer): number {
  const parsed: unknown = JSON.parse(data.toString());
  const sentAt = (parsed as { data?: { sentAt?: unknown } }).data?.sentAt;
  return typeof sentAt === 'number' ? sentAt : Number.NaN;
}

/** Waits until `done()` holds, checking every 10 ms; false if it still does not after `timeoutMs`. */
async function until(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() >= deadline) return false;
    await sleep(10);
  }
  return true;
}

/**
 * A connected backend and its clients. Each client says who it is in its query
 * (`client=<index>`), which the target passes on in relay.client.open's rawQuery: that is
 * how the backend learns the connectionId of each client socket.
 */
class Session {
  readonly clients: WebSocket[] = [];
  readonly connectionIds: string[] = [];
  onClientEvent: ((frame: Record<string, unknown>) => void) | undefined;
  private readonly announced = new Map<number, string>();
  private readonly announcedWaiters = new Map<number, () => void>();

  private constructor(
    private readonly endpoint: Endpoint,
    readonly backend: WebSocket,
  ) {
    backend.on('message', (data: Buffer) => this.onBackendFrame(data));
  }

  static async open(endpoint: Endpoint, clients: number): Promise<Session> {
    const backend = await openSocket(`${endpoint.wsUrl}/backend`);
    const acked = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no relay.backend.ack within 5 s')), 5000);
      backend.on('message', function onAck(data: Buffer) {
        if (!data.toString().includes('"relay.backend.ack"')) return;
        clearTimeout(timer);
        backend.off('message', onAck);
        resolve();
      });
    });
    const session = new Session(endpoint, backend);
    backend.send(
      JSON.stringify({
        type: 'relay.backend.hello',
        channelId: endpoint.channelId,
        secret: endpoint.secret,
        instanceId: 'bench',
      }),
    );
    await acked;
    await session.addClients(clients);
    return session;
  }

  /** Opens `count` more clients, a bounded number at a time, and waits until the backend has heard of each. */
  async addClients(count: number): Promise<void> {
    const first = this.clients.length;
    let nextIndex = first;
    const worker = async () => {
      while (nextIndex < first + count) {
        const index = nextIndex;
        nextIndex += 1;
        const announced = this.announcement(index);
        const client = await openSocket(
          `${this.endpoint.wsUrl}/client?channelId=${encodeURIComponent(this.endpoint.channelId)}&client=${index}`,
        );
        this.clients[index] = client;
        this.connectionIds[index] = await announced;
      }
    };
    await Promise.all(Array.from({ length: Math.min(count, 50) }, worker));
  }

  /** Closes every socket at once (no closing handshake): the target is stopped right after. */
  close(): void {
    for (const client of this.clients) client.terminate();
    this.backend.terminate();
  }

  private announcement(index: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`client ${index} was not announced within 10 s`)), 10_000);
      this.announcedWaiters.set(index, () => {
        clearTimeout(timer);
        resolve(this.announced.get(index) ?? '');
      });
      if (this.announced.has(index)) this.announcedWaiters.get(index)?.();
    });
  }

  private onBackendFrame(data: Buffer): void {
    const frame: unknown = JSON.parse(data.toString());
    if (typeof frame !== 'object' || frame === null) return;
    const record = frame as Record<string, unknown>;
    if (record.type === 'relay.client.event') {
      this.onClientEvent?.(record);
    } else if (record.type === 'relay.client.open') {
      const rawQuery = (record.query as { rawQuery?: unknown } | undefined)?.rawQuery;
      const index = Number(new URLSearchParams(typeof rawQuery === 'string' ? rawQuery : '').get('client'));
      if (!Number.isInteger(index) || typeof record.connectionId !== 'string') return;
      this.announced.set(index, record.connectionId);
      this.announcedWaiters.get(index)?.();
      this.announcedWaiters.delete(index);
    }
  }
}

function openSocket(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    // No compression offer: neither target enables it, and the handshake stays minimal.
    const socket = new WebSocket(url, { perMessageDeflate: false });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.once('close', (code, reason) => reject(new Error(`${url} closed ${code} ${reason.toString()}`)));
  });
}
