import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { type WebSocket, WebSocketServer } from 'ws';

/**
 * The reference the relay is measured against: the least a forwarder speaking the relay
 * protocol has to do, with no auth, storage, metrics, limits or heartbeat. It still does
 * what correctness requires and no shortcut could skip: a client's text is parsed before
 * being embedded in relay.client.event (an invalid message would otherwise corrupt the
 * backend's stream), and a backend frame is parsed to find its connectionId and event.
 *
 * Run as its own process (`node --import tsx bench/relay/bare-forwarder.ts`) so its CPU and
 * memory can be read from /proc like the relay's. Listens on 127.0.0.1:$BARE_FORWARDER_PORT
 * and prints `bare forwarder listening <port>` once ready.
 */

interface Client {
  socket: WebSocket;
  connectionId: string;
  channelId: string;
}

const backends = new Map<string, WebSocket>();
const clients = new Map<string, Client>();

const httpServer = createServer((_request, response) => {
  response.writeHead(404).end();
});
// Same as the relay: ws's default (no per-message deflate), so both send identical frames.
const wsServer = new WebSocketServer({ noServer: true });

httpServer.on('upgrade', (request, socket, head) => {
  const url = new URL(request.url ?? '/', 'http://bare.invalid');
  if (url.pathname !== '/backend' && url.pathname !== '/client') {
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  wsServer.handleUpgrade(request, socket, head, (websocket) => {
    // A shared listener, not a closure: a closure here would keep this upgrade's scope (the
    // URL) alive for the life of the connection and inflate the memory baseline.
    websocket.on('error', ignore);
    if (url.pathname === '/backend') acceptBackend(websocket);
    else acceptClient(websocket, url);
  });
});

function acceptBackend(socket: WebSocket): void {
  let channelId: string | undefined;
  socket.on('message', (data) => {
    const frame = parseObject(data.toString());
    if (!frame) return;
    if (channelId === undefined) {
      // The hello is taken at its word: no secret check.
      if (frame.type !== 'relay.backend.hello' || typeof frame.channelId !== 'string') return;
      channelId = frame.channelId;
      backends.set(channelId, socket);
      socket.send(JSON.stringify({ type: 'relay.backend.ack', channelId, timestamp: Date.now() }));
      return;
    }
    if (frame.type !== 'relay.server.event' || typeof frame.connectionId !== 'string') return;
    const client = clients.get(frame.connectionId);
    if (client?.channelId === channelId) client.socket.send(JSON.stringify(frame.event ?? null));
  });
  socket.on('close', () => {
    if (channelId !== undefined && backends.get(channelId) === socket) backends.delete(channelId);
  });
}

function acceptClient(socket: WebSocket, url: URL): void {
  const channelId = url.searchParams.get('channelId') ?? '';
  const backend = backends.get(channelId);
  if (!backend) {
    socket.close(1013, 'backend unavailable');
    return;
  }
  const client: Client = { socket, connectionId: randomUUID(), channelId };
  clients.set(client.connectionId, client);
  backend.send(
    JSON.stringify({
      type: 'relay.client.open',
      connectionId: client.connectionId,
      query: { rawQuery: url.search, channelId },
      timestamp: Date.now(),
    }),
  );
  socket.on('message', (data) => {
    const text = data.toString();
    if (!parseObject(text)) return;
    backends
      .get(channelId)
      ?.send(
        `{"type":"relay.client.event","connectionId":"${client.connectionId}","event":${text},"timestamp":${Date.now()}}`,
      );
  });
  socket.on('close', (code, reason) => {
    clients.delete(client.connectionId);
    backends.get(channelId)?.send(
      JSON.stringify({
        type: 'relay.client.close',
        connectionId: client.connectionId,
        code,
        reason: reason.toString(),
        timestamp: Date.now(),
      }),
    );
  });
}

function ignore(): void {}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

// A normal exit on SIGTERM, so `node --cpu-prof` gets to write its profile.
process.once('SIGTERM', () => {
  for (const client of wsServer.clients) client.terminate();
  httpServer.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
});

const port = Number(process.env.BARE_FORWARDER_PORT ?? '0');
httpServer.listen(port, '127.0.0.1', () => {
  const address = httpServer.address();
  const listening = typeof address === 'object' && address ? address.port : port;
  process.stdout.write(`bare forwarder listening ${listening}\n`);
});
